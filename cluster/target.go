package cluster

import (
	"crypto/sha256"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/resyncd/resyncd/config"
)

// Target is one cluster resyncd keeps in sync: its entry, the resources
// watched there, and its clients once connected.
type Target struct {
	// Config is the cluster's entry: one of the configuration file, or
	// one made from a Secret.
	Config config.Cluster
	// Resources are the resources watched in the cluster.
	Resources []config.Resource
	// Log names the cluster in every line.
	Log *zap.Logger
	// Clients are set once connected (Dialer.Connect), nil after
	// Disconnect.
	Clients *Clients
	// Sum hashes the name and data of the cluster's Secret: a Secret
	// whose sum changed holds new credentials, or another server. Zero
	// for a cluster of the configuration file.
	Sum [sha256.Size]byte
	// secret is the server and credentials of a cluster from a Secret,
	// which its clients are made from; nil for a cluster of the
	// configuration file.
	secret *rest.Config
	// claims holds the API servers every cluster of the command reaches.
	claims *claims
}

// Server is the address of the cluster's API server, once connected.
func (t *Target) Server() string {
	if t.Clients == nil {
		return ""
	}
	return t.Clients.REST.Host
}

// SecretServer is the address a cluster from a Secret names; "" for a
// cluster of the configuration file.
func (t *Target) SecretServer() string {
	if t.secret == nil {
		return ""
	}
	return t.secret.Host
}

// Source names where the cluster comes from, in messages: its kubeconfig
// file, or its Secret.
func (t *Target) Source() string {
	if t.Config.Secret != "" {
		return "Secret " + t.Config.Secret
	}
	return t.Config.Kubeconfig
}

// Disconnect drops the cluster's clients, to be made again, and gives up
// the servers it claimed.
func (t *Target) Disconnect() {
	t.claims.release(t.Config.Name)
	t.Clients = nil
}

// Connect builds the clients of t: from its Secret's server and
// credentials, or as Clients does.
func (d Dialer) Connect(t *Target) (*Clients, error) {
	if t.secret != nil {
		return d.newClients(rest.CopyConfig(t.secret), t.Config, nil)
	}
	return d.Clients(t.Log, t.Config)
}

// ClaimServer claims the address of the server t's clients reach; a
// SameServerError when another cluster of the command reaches it.
func (t *Target) ClaimServer() error {
	return t.claims.claim(t.Config.Name, "server "+config.ServerURL(t.Clients.REST.Host), "same address "+t.Clients.REST.Host)
}

// ClaimKubeSystem claims the server t's clients reach by the UID of its
// kube-system namespace, which tells one cluster from another whatever
// address reaches it; nothing when the server has none or resyncd may
// not get it. A SameServerError when another cluster of the command
// reaches that server.
func (t *Target) ClaimKubeSystem() error {
	uid, err := kubeSystemUID(t.Clients.Kube)
	if err != nil || uid == "" {
		return err
	}
	return t.claims.claim(t.Config.Name, "kube-system "+uid, "same kube-system namespace, UID "+uid)
}

// Catalog is the clusters of one configuration: those it lists, and,
// through a SecretReader, those of the Secrets it selects. The clusters
// of one Catalog never reach one API server twice.
type Catalog struct {
	cfg    *config.Config
	log    *zap.Logger
	claims *claims
	listed []*Target
}

// NewCatalog returns the clusters of cfg; log is narrowed to each.
func NewCatalog(cfg *config.Config, log *zap.Logger) *Catalog {
	c := &Catalog{cfg: cfg, log: log, claims: newClaims()}
	for _, cl := range cfg.Clusters {
		c.listed = append(c.listed, c.target(cl))
	}
	return c
}

// Listed are the clusters of the configuration file, in its order.
func (c *Catalog) Listed() []*Target { return c.listed }

func (c *Catalog) target(cl config.Cluster) *Target {
	return &Target{Config: cl, Resources: c.cfg.ResourcesIn(cl.Name), Log: c.log.With(zap.String("cluster", cl.Name)), claims: c.claims}
}
