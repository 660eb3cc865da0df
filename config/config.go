package config

import (
	"fmt"
	"path"
	"slices"
	"time"
)

// Mode says what resyncd does with the drift it finds in one watched resource.
type Mode string

const (
	// ModeEnforce repairs drift.
	ModeEnforce Mode = "enforce"
	// ModeWarn reports drift in status, metrics and events, and writes no child.
	ModeWarn Mode = "warn"
	// ModeOff skips the resource.
	ModeOff Mode = "off"
)

// DriftCheck says how drift is detected.
type DriftCheck string

const (
	// DriftCheckLocal compares the fields resyncd owns, read from the LISTed
	// object, with the desired object, and asks the server only on a mismatch.
	DriftCheckLocal DriftCheck = "local"
	// DriftCheckServer sends a dry-run apply for every object on every pass.
	DriftCheckServer DriftCheck = "server"
)

// Config is resyncd's configuration, as read and validated by Load.
type Config struct {
	// FieldManager is the server-side apply field manager of every write.
	FieldManager string `mapstructure:"fieldManager"`
	// PageSize is the limit of each LIST request.
	PageSize int64 `mapstructure:"pageSize"`
	// DriftCheck is how drift is detected.
	DriftCheck DriftCheck `mapstructure:"driftCheck"`
	// Apply bounds the writes.
	Apply Apply `mapstructure:"apply"`
	// LeaderElection lets several replicas run with one of them writing.
	// Its namespace, Lease name and durations are also the ring's when
	// Sharding is enabled.
	LeaderElection LeaderElection `mapstructure:"leaderElection"`
	// Sharding lets several replicas split the work.
	Sharding Sharding `mapstructure:"sharding"`
	// Metrics is where and how /metrics is served.
	Metrics Metrics `mapstructure:"metrics"`
	// Health is where /healthz and /readyz are served.
	Health Endpoint `mapstructure:"health"`
	// Log sets the logger.
	Log Log `mapstructure:"log"`
	// CEL bounds the cost of the expressions of graph files.
	CEL CEL `mapstructure:"cel"`
	// Clusters are the clusters resyncd keeps in sync. Empty: one, named
	// "local", reached through --kubeconfig or the in-cluster configuration.
	Clusters []Cluster `mapstructure:"clusters"`
	// ClusterSecrets select the Secrets, in the cluster resyncd runs in,
	// that hold more clusters (Argo CD's cluster Secrets, Cluster API's
	// kubeconfig Secrets); read every pass, so that a cluster comes and
	// goes with its Secret. With ClusterSecrets and no Clusters there is no
	// "local" cluster: only those of the Secrets.
	ClusterSecrets []ClusterSecret `mapstructure:"clusterSecrets"`
	// Resources are the watched parent resources.
	Resources []Resource `mapstructure:"resources"`
	// ResourceGraphDefinitions makes each of kro's ResourceGraphDefinitions
	// in a cluster a watched resource of that cluster.
	ResourceGraphDefinitions ResourceGraphDefinitions `mapstructure:"resourceGraphDefinitions"`

	file  string
	lines map[string]int
	// listed is whether the file lists clusters or clusterSecrets (else
	// the one is "local").
	listed bool
}

// ListsClusters reports whether the configuration file lists clusters,
// or Secrets that hold them; when it does not, the one cluster is
// LocalCluster, and the commands print no cluster names.
func (c *Config) ListsClusters() bool { return c.listed }

// InCluster names what, of the cluster named cluster, in what the
// commands print: "CLUSTER/what" when the configuration lists clusters,
// else what alone.
func (c *Config) InCluster(cluster, what string) string {
	if !c.listed {
		return what
	}
	return cluster + "/" + what
}

// Where returns where a key path was set, "FILE:LINE", or the file alone
// when the key is not in it; for messages about the configuration that only
// the cluster can find wrong (a resource that is not served, say).
func (c *Config) Where(key string) string {
	if n := c.lines[key]; n > 0 {
		return fmt.Sprintf("%s:%d", c.file, n)
	}
	return c.file
}

// LocalCluster is the name of the one cluster of a configuration that
// lists none.
const LocalCluster = "local"

// Cluster is one cluster whose watched resources resyncd keeps in sync.
// Parents and their children live in the same cluster.
type Cluster struct {
	// Name names the cluster in metrics, logs and /statusz.
	Name string `mapstructure:"name"`
	// Kubeconfig is the path of a kubeconfig file, relative to the
	// configuration file's directory when written relative; re-read when
	// it changes. Empty: the connection resyncd itself runs with
	// (--kubeconfig, or the in-cluster configuration).
	Kubeconfig string `mapstructure:"kubeconfig"`
	// Context is the kubeconfig context; empty: the file's current one.
	Context string `mapstructure:"context"`
	// Apply bounds this cluster's writes; each key left out is the
	// top-level apply's.
	Apply Apply `mapstructure:"apply"`
	// AllowCredentialPlugins lets the kubeconfig file get its credentials
	// from an exec command or an auth-provider; false: such a file is
	// refused (see CheckCredentials).
	AllowCredentialPlugins bool `mapstructure:"allowCredentialPlugins"`
	// Secret is the Secret, "namespace/name", the cluster was read from;
	// empty for a cluster of the configuration file.
	Secret string `mapstructure:"-"`

	kubeconfigPath string
}

// ClusterSecret selects Secrets that hold clusters.
type ClusterSecret struct {
	// Namespace is where the Secrets are.
	Namespace string `mapstructure:"namespace"`
	// LabelSelector selects them, for example
	// argocd.argoproj.io/secret-type=cluster.
	LabelSelector string `mapstructure:"labelSelector"`
}

// KubeconfigPath is the kubeconfig file of c, resolved against the
// configuration file's directory; empty for the connection resyncd runs
// with.
func (c Cluster) KubeconfigPath() string { return c.kubeconfigPath }

// Home reports whether c is reached through the connection resyncd runs
// with (where it also takes part in leader election), not a file or a
// Secret of its own.
func (c Cluster) Home() bool { return c.Kubeconfig == "" && c.Secret == "" }

// ClusterOfSecret returns the cluster named name that the Secret secret
// ("namespace/name") holds: it has the top-level apply bounds.
func (c *Config) ClusterOfSecret(name, secret string) Cluster {
	return Cluster{Name: name, Apply: c.Apply, Secret: secret}
}

// Apply bounds the writes of a pass.
type Apply struct {
	// Concurrency is the number of jobs (parents) written at once, over
	// every watched resource.
	Concurrency int `mapstructure:"concurrency"`
	// BatchSize is the number of writes taken from the queue at a time.
	BatchSize int `mapstructure:"batchSize"`
	// QPS is the sustained client-side write rate.
	QPS float64 `mapstructure:"qps"`
	// Burst is the number of writes allowed above QPS at once.
	Burst int `mapstructure:"burst"`
	// MaxWritesPerPass is the write budget of a pass, shared by the passes
	// of several resources whose writes wait at once; the rest waits for
	// the next pass, highest priority first.
	MaxWritesPerPass int `mapstructure:"maxWritesPerPass"`
}

// LeaderElection configures client-go's Lease-based leader election.
type LeaderElection struct {
	// Enabled turns leader election on; only the leader writes.
	Enabled bool `mapstructure:"enabled"`
	// Namespace holds the Lease.
	Namespace string `mapstructure:"namespace"`
	// LeaseName is the name of the Lease.
	LeaseName string `mapstructure:"leaseName"`
	// LeaseDuration is how long a lease is valid after its last renewal.
	LeaseDuration time.Duration `mapstructure:"leaseDuration"`
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leading.
	RenewDeadline time.Duration `mapstructure:"renewDeadline"`
	// RetryPeriod is the time between attempts to acquire or renew.
	RetryPeriod time.Duration `mapstructure:"retryPeriod"`
}

// Sharding lets replicas share the work: each holds a Lease of its own,
// named leaderElection.leaseName + "-" + the identity, in
// leaderElection.namespace, and the replicas split each cluster's
// namespaces between them by a hash of the name.
type Sharding struct {
	// Enabled turns sharding on; leaderElection.enabled must then be
	// false.
	Enabled bool `mapstructure:"enabled"`
	// Identity is the replica's name in the ring, unique among the
	// replicas; empty: $POD_NAME, else the host name.
	Identity string `mapstructure:"identity"`
	// ServerSelector says whether LISTs ask the API server to filter by
	// the replica's ranges (the shardSelector of ListOptions); resyncd
	// filters locally in any case.
	ServerSelector ServerSelector `mapstructure:"serverSelector"`
}

// ServerSelector says whether the API server is asked to filter LISTs.
type ServerSelector string

const (
	// ServerSelectorAuto sends the shardSelector; a server that does not
	// answer it (the gate ShardedListAndWatch off, or older than 1.36)
	// returns every object, which resyncd then filters itself.
	ServerSelectorAuto ServerSelector = "auto"
	// ServerSelectorOff never sends it.
	ServerSelectorOff ServerSelector = "off"
)

// Endpoint is an HTTP listen address.
type Endpoint struct {
	// Address is host:port, for example ":8080".
	Address string `mapstructure:"address"`
}

// Metrics configures the /metrics endpoint.
type Metrics struct {
	// Address is host:port, for example ":8080".
	Address string `mapstructure:"address"`
	// Secure serves /metrics over TLS, only to a bearer token that the API
	// server authenticates (TokenReview) and allows to get /metrics
	// (SubjectAccessReview).
	Secure bool `mapstructure:"secure"`
	// CertFile and KeyFile are the TLS certificate and key; both empty
	// with Secure: a self-signed certificate made at start.
	CertFile string `mapstructure:"certFile"`
	KeyFile  string `mapstructure:"keyFile"`
}

// CEL bounds what the expressions of graph files may cost, in CEL's cost
// units (about one per operation, more for a string or list operation in
// proportion to its size).
type CEL struct {
	// MaxEstimatedCost rejects, when a graph is loaded against the API
	// server's schemas, an expression whose worst-case cost is higher.
	MaxEstimatedCost int64 `mapstructure:"maxEstimatedCost"`
	// CostBudget bounds what evaluating one parent's graph may cost, for
	// its children and again for its status; a parent that needs more is
	// Stalled with reason CostExceeded.
	CostBudget int64 `mapstructure:"costBudget"`
}

// Log configures the logger.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `mapstructure:"level"`
	// Format is json or console.
	Format string `mapstructure:"format"`
}

// ResourceGraphDefinitions is how resyncd serves kro's
// ResourceGraphDefinitions (kro.run/v1alpha1) applied to a cluster: each
// valid one becomes a watched resource of its parent kind, whose CRD
// resyncd applies. The guards are the platform's: every RGD gets them, and
// nothing in an RGD widens them.
type ResourceGraphDefinitions struct {
	// Enabled: LIST the ResourceGraphDefinitions of every cluster each
	// interval.
	Enabled bool `mapstructure:"enabled"`
	// Interval is how often they are LISTed, and each one's instances
	// passed over.
	Interval time.Duration `mapstructure:"interval"`
	// ChildNamespaces, ClusterScopedChildren and ExternalNamespaces are
	// those of Resource, for every RGD.
	ChildNamespaces       []string `mapstructure:"childNamespaces"`
	ClusterScopedChildren bool     `mapstructure:"clusterScopedChildren"`
	ExternalNamespaces    []string `mapstructure:"externalNamespaces"`
	// AdoptFromKro: a child that kro made for an instance (labelled
	// kro.run/owned and kro.run/instance-id with the instance's UID) is
	// taken over by that instance, the way over from kro's controller.
	AdoptFromKro bool `mapstructure:"adoptFromKro"`
}

// Resource is the watched resource of the parent kind group/version/
// resource that an RGD named name declares, with the guards of g and the
// defaults of every other key.
func (g ResourceGraphDefinitions) Resource(name, group, version, resource string) Resource {
	r := DefaultResource()
	r.Group, r.Version, r.Resource, r.Interval = group, version, resource, g.Interval
	r.ChildNamespaces, r.ClusterScopedChildren, r.ExternalNamespaces = g.ChildNamespaces, g.ClusterScopedChildren, g.ExternalNamespaces
	r.rgd, r.index, r.adoptFromKro = name, -1, g.AdoptFromKro
	return r
}

// AdoptsFromKro says whether the children kro made for an instance are
// taken over by it (ResourceGraphDefinitions.AdoptFromKro).
func (r Resource) AdoptsFromKro() bool { return r.adoptFromKro }

// Resource is one watched parent resource and how to resync it.
type Resource struct {
	// Group is the API group of the parents; empty for the core group.
	Group string `mapstructure:"group"`
	// Version is the API version of the parents.
	Version string `mapstructure:"version"`
	// Resource is the plural resource name of the parents.
	Resource string `mapstructure:"resource"`
	// Renderer names the built-in renderer that turns a parent into its
	// children; Graph names a graph file instead. Exactly one is set.
	Renderer string `mapstructure:"renderer"`
	// Graph is the path of a graph file, relative to the configuration
	// file; see docs/graphs.md. A graph that declares its parent kind
	// (kro's spec.schema) gives Group, Version and Resource when they are
	// left out.
	Graph string `mapstructure:"graph"`
	// CRD is the path of the parent kind's CustomResourceDefinition file,
	// relative to the configuration file, for a graph that declares no
	// spec.schema: without a cluster, the parent is typed and defaulted by
	// it, and it gives Group, Version and Resource when they are left out.
	CRD string `mapstructure:"crd"`
	// InstallCRD applies the parent kind's CRD (made from the graph's
	// spec.schema, or the CRD file) at start, before the passes; a change
	// that would break the objects stored is refused.
	InstallCRD bool `mapstructure:"installCRD"`
	// Interval is the time between passes over this resource.
	Interval time.Duration `mapstructure:"interval"`
	// Namespaces limits the passes to these namespaces; empty: all.
	Namespaces []string `mapstructure:"namespaces"`
	// LabelSelector limits the passes to the parents it selects.
	LabelSelector string `mapstructure:"labelSelector"`
	// Mode is what to do about drift.
	Mode Mode `mapstructure:"mode"`
	// Prune deletes children whose parent is gone.
	Prune bool `mapstructure:"prune"`
	// Priority orders this resource's writes against those of the other
	// watched resources of its cluster when they wait at once: higher
	// first, before the parents' own priority.
	Priority int32 `mapstructure:"priority"`
	// Clusters are the names of the clusters where this resource is
	// watched, those of Secrets included; empty: every cluster.
	Clusters []string `mapstructure:"clusters"`
	// ChildNamespaces are the namespaces, besides its own, where a parent's
	// children may be placed: names, or globs as path.Match reads them
	// ("team-*"; "*" any). Empty: only the parent's own. The graph's author
	// decides where a child goes; this is what the parent's author, a
	// tenant, cannot widen.
	ChildNamespaces []string `mapstructure:"childNamespaces"`
	// ClusterScopedChildren lets a parent have cluster-scoped children
	// (a ClusterRole, a Namespace); false: they are never written.
	ClusterScopedChildren bool `mapstructure:"clusterScopedChildren"`
	// ExternalNamespaces are the namespaces, besides its own, where a
	// parent's external references may be read when an expression gives
	// their namespace: names or globs as in ChildNamespaces. Empty: only
	// the parent's own. A namespace the graph writes out is the platform
	// team's choice and needs no entry; one the parent's spec chooses is
	// what a tenant could otherwise point at another team's objects.
	ExternalNamespaces []string `mapstructure:"externalNamespaces"`

	graphPath string
	crdPath   string
	index     int
	// rgd names the ResourceGraphDefinition the resource is made from;
	// empty for one of the file.
	rgd string
	// adoptFromKro is ResourceGraphDefinitions.AdoptFromKro, for a
	// resource made from an RGD.
	adoptFromKro bool
}

// AllowsNamespace says whether a child of a parent in namespace parent may
// be placed in namespace ns: its parent's own, or one ChildNamespaces
// allows.
func (r Resource) AllowsNamespace(parent, ns string) bool {
	return ns == parent || matchesNamespace(r.ChildNamespaces, ns)
}

// AllowsExternalNamespace says whether an external reference of a parent
// in namespace parent, whose namespace an expression gives, may be read
// in namespace ns: its parent's own, or one ExternalNamespaces allows.
// "" is every namespace (a selector), which only a pattern matching any
// name, such as "*", allows.
func (r Resource) AllowsExternalNamespace(parent, ns string) bool {
	return ns == parent || matchesNamespace(r.ExternalNamespaces, ns)
}

// matchesNamespace says whether one of patterns, names or path.Match
// globs, matches namespace ns.
func matchesNamespace(patterns []string, ns string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, ns); ok {
			return true
		}
	}
	return false
}

// ChildrenLeave says whether the configuration lets a parent's children
// be placed anywhere but its own namespace: then the kinds of children
// that may be are read in every namespace.
func (r Resource) ChildrenLeave() bool {
	return len(r.ChildNamespaces) > 0 || r.ClusterScopedChildren
}

// Key is the key path of r in the configuration, resources[i].
func (r Resource) Key() string {
	if r.rgd != "" {
		return "ResourceGraphDefinition " + r.rgd
	}
	return fmt.Sprintf("resources[%d]", r.index)
}

// RGD is the name of the ResourceGraphDefinition the resource is made
// from; empty for a resource of the configuration file.
func (r Resource) RGD() string { return r.rgd }

// In reports whether r is watched in the cluster named cluster.
func (r Resource) In(cluster string) bool {
	return len(r.Clusters) == 0 || slices.Contains(r.Clusters, cluster)
}

// ResourcesIn returns the resources watched in the cluster named cluster,
// in the configuration's order.
func (c *Config) ResourcesIn(cluster string) []Resource {
	var out []Resource
	for _, r := range c.Resources {
		if r.In(cluster) {
			out = append(out, r)
		}
	}
	return out
}

// RendererKey is how the renderer of r is registered: its name, or
// "graph:" and the graph file as written.
func (r Resource) RendererKey() string {
	if r.rgd != "" {
		return "rgd:" + r.rgd
	}
	if r.Graph != "" {
		return "graph:" + r.Graph
	}
	return r.Renderer
}

// GraphPath is the graph file of r, relative to the configuration file's
// directory when written relative; empty when r names a renderer.
func (r Resource) GraphPath() string { return r.graphPath }

// CRDPath is the CRD file of r, relative to the configuration file's
// directory when written relative; empty when r names none.
func (r Resource) CRDPath() string { return r.crdPath }

// Name spells the resource as kubectl does, for example
// httpservices.v1alpha1.resyncd.io; metrics, logs and /readyz use it.
func (r Resource) Name() string {
	if r.Group == "" {
		return r.Resource + "." + r.Version
	}
	return r.Resource + "." + r.Version + "." + r.Group
}

// Default returns the default configuration, as docs/configuration.md lists it, with no watched resource.
func Default() Config {
	return Config{
		FieldManager: "resyncd",
		PageSize:     500,
		DriftCheck:   DriftCheckLocal,
		Apply:        Apply{Concurrency: 8, BatchSize: 50, QPS: 50, Burst: 100, MaxWritesPerPass: 2000},
		LeaderElection: LeaderElection{
			Namespace:     "resyncd-system",
			LeaseName:     "resyncd",
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second,
			RetryPeriod:   2 * time.Second,
		},
		Sharding:                 Sharding{ServerSelector: ServerSelectorAuto},
		Metrics:                  Metrics{Address: ":8080"},
		Health:                   Endpoint{Address: ":8081"},
		Log:                      Log{Level: "info", Format: "json"},
		CEL:                      CEL{MaxEstimatedCost: 100_000_000, CostBudget: 1_000_000},
		ResourceGraphDefinitions: ResourceGraphDefinitions{Interval: 30 * time.Second},
	}
}

// DefaultResource returns the values a watched resource has for the keys
// it leaves out.
func DefaultResource() Resource {
	return Resource{Interval: 30 * time.Second, Mode: ModeEnforce, Prune: true}
}
