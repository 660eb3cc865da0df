package config

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
)

// Bounds that validate enforces.
const (
	minInterval     = time.Second
	maxFieldManager = 128 // the API server's limit on a field manager's name
	minPriority     = -1000
	maxPriority     = 1000
	// minCostBudget is the cost limit of the cheapest expression run.
	minCostBudget = 1000
)

// validate checks what the types cannot: ranges, enumerations, names,
// references between keys. Every problem is reported, not only the first.
func validate(c *Config, ps *problems, renderers []string) {
	if c.FieldManager == "" {
		ps.add("fieldManager", "must not be empty")
	} else if len(c.FieldManager) > maxFieldManager {
		ps.add("fieldManager", "is %d characters long, at most %d", len(c.FieldManager), maxFieldManager)
	}
	if c.PageSize < 1 {
		ps.add("pageSize", "is %d, must be at least 1", c.PageSize)
	}
	oneOf(ps, "driftCheck", string(c.DriftCheck), string(DriftCheckLocal), string(DriftCheckServer))
	validateApply(ps, "apply", c.Apply)
	clusters := validateClusters(ps, c)
	validateClusterSecrets(ps, c.ClusterSecrets)
	validateLeaderElection(ps, c.LeaderElection, c.Sharding.Enabled)
	validateSharding(ps, c.Sharding, c.LeaderElection)
	address(ps, "metrics.address", c.Metrics.Address)
	if (c.Metrics.CertFile == "") != (c.Metrics.KeyFile == "") {
		ps.add("metrics.certFile", "certFile and keyFile go together: set both, or neither for a self-signed certificate")
	}
	if c.Metrics.CertFile != "" && !c.Metrics.Secure {
		ps.add("metrics.certFile", "is set but metrics.secure is false: set secure: true to serve /metrics over TLS")
	}
	address(ps, "health.address", c.Health.Address)
	oneOf(ps, "log.level", c.Log.Level, "debug", "info", "warn", "error")
	oneOf(ps, "log.format", c.Log.Format, "json", "console")

	if len(c.Resources) == 0 && !c.ResourceGraphDefinitions.Enabled {
		ps.add("resources", "no resource to watch: list at least one, or set resourceGraphDefinitions.enabled")
	}
	validateRGDs(ps, c.ResourceGraphDefinitions)
	type watch struct {
		index      int
		namespaces []string
		clusters   []string
	}
	byGVR := map[string][]watch{}
	for i, r := range c.Resources {
		key := fmt.Sprintf("resources[%d]", i)
		validateResource(ps, key, r, renderers)
		for j, name := range r.Clusters {
			k := fmt.Sprintf("%s.clusters[%d]", key, j)
			switch {
			case slices.Contains(clusters, name):
			case len(c.ClusterSecrets) == 0:
				ps.add(k, "unknown cluster %q; clusters: %s", name, strings.Join(clusters, ", "))
			case len(validation.IsDNS1123Subdomain(name)) > 0:
				// Else a name that is no entry's may be a Secret's, known
				// only once resyncd runs.
				ps.add(k, "%q can name no cluster: a cluster of a Secret is named with lower-case letters, digits, '-' and '.'", name)
			}
		}
		gvr := gvrString(r)
		for _, w := range byGVR[gvr] {
			if overlap(w.namespaces, r.Namespaces) && overlap(w.clusters, r.Clusters) {
				ps.add(key, "watches %s again in namespaces that resources[%d] watches too; merge the two entries", gvr, w.index)
				break
			}
		}
		byGVR[gvr] = append(byGVR[gvr], watch{i, r.Namespaces, r.Clusters})
	}
	atLeast64(ps, "cel.maxEstimatedCost", c.CEL.MaxEstimatedCost, 1)
	atLeast64(ps, "cel.costBudget", c.CEL.CostBudget, minCostBudget)
}

func validateApply(ps *problems, key string, a Apply) {
	atLeast(ps, key+".concurrency", a.Concurrency, 1)
	atLeast(ps, key+".batchSize", a.BatchSize, 1)
	if a.QPS <= 0 {
		ps.add(key+".qps", "is %g, must be more than 0", a.QPS)
	}
	atLeast(ps, key+".burst", a.Burst, 1)
	atLeast(ps, key+".maxWritesPerPass", a.MaxWritesPerPass, 1)
}

// validateClusters checks the clusters section and returns the names a
// resource may list: the clusters', or "local" when the section is empty
// and no Secret holds clusters.
func validateClusters(ps *problems, c *Config) []string {
	if len(c.Clusters) == 0 && len(c.ClusterSecrets) == 0 {
		return []string{LocalCluster}
	}
	var names []string
	for i, cl := range c.Clusters {
		key := fmt.Sprintf("clusters[%d]", i)
		switch {
		case cl.Name == "":
			ps.add(key, "has no name")
			continue
		case len(validation.IsDNS1123Label(cl.Name)) > 0:
			ps.add(key+".name", "%q is not a cluster name (at most 63 lower-case letters, digits and '-'): it is a label value of every metric", cl.Name)
		case slices.Contains(names, cl.Name):
			ps.add(key+".name", "%q names clusters[%d] too; each cluster needs a name of its own", cl.Name, slices.Index(names, cl.Name))
		default:
			names = append(names, cl.Name)
		}
		validateApply(ps, key+".apply", cl.Apply)
	}
	return names
}

// validateClusterSecrets checks the clusterSecrets section: each entry
// names a namespace and a label selector that selects something less than
// every Secret there.
func validateClusterSecrets(ps *problems, secrets []ClusterSecret) {
	for i, cs := range secrets {
		key := fmt.Sprintf("clusterSecrets[%d]", i)
		if cs.Namespace == "" {
			ps.addNear(key, key+".namespace", "must not be empty: the namespace of the Secrets that hold clusters, for example argocd")
		} else {
			namespace(ps, key+".namespace", cs.Namespace)
		}
		sel, err := labels.Parse(cs.LabelSelector)
		switch {
		case err != nil:
			ps.add(key+".labelSelector", "%q is not a label selector: %v", cs.LabelSelector, err)
		case sel.Empty():
			ps.addNear(key, key+".labelSelector", "must not be empty: resyncd reads only the Secrets a label selects "+
				"(for example argocd.argoproj.io/secret-type=cluster), never every Secret of a namespace")
		}
		for j, other := range secrets[:i] {
			if other == cs && cs.Namespace != "" && err == nil && !sel.Empty() {
				ps.add(key, "repeats clusterSecrets[%d]; remove one of the two", j)
				break
			}
		}
	}
}

// checkKubeconfigs reads the kubeconfig file of every cluster that names
// one and checks that it gives a server and credentials, in the context
// the cluster names, that the credentials come from no plugin the entry
// does not allow, and that no two entries reach the same server (each
// child would be written twice).
func checkKubeconfigs(c *Config, ps *problems) {
	servers := map[string]int{}
	for i, cl := range c.Clusters {
		if cl.Kubeconfig == "" {
			continue
		}
		key := fmt.Sprintf("clusters[%d].kubeconfig", i)
		kc, err := clientcmd.LoadFromFile(cl.kubeconfigPath)
		if err != nil {
			ps.add(key, "cannot read the kubeconfig file: %v", err)
			continue
		}
		if cl.Context != "" {
			if _, ok := kc.Contexts[cl.Context]; !ok {
				ps.add(fmt.Sprintf("clusters[%d].context", i), "%s has no context %q; it has: %s", cl.Kubeconfig, cl.Context, strings.Join(slices.Sorted(maps.Keys(kc.Contexts)), ", "))
				continue
			}
		}
		if err := cl.CheckCredentials(kc); err != nil {
			ps.add(key, "%v", err)
			continue
		}
		rc, err := clientcmd.NewNonInteractiveClientConfig(*kc, cl.Context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		switch {
		case clientcmd.IsEmptyConfig(err):
			ps.add(key, "%s has no current context; set its current-context, or clusters[%d].context", cl.Kubeconfig, i)
			continue
		case err != nil:
			ps.add(key, "%s does not give a cluster to connect to: %v", cl.Kubeconfig, err)
			continue
		}
		server := ServerURL(rc.Host)
		if j, ok := servers[server]; ok {
			ps.add(key, "%s reaches the API server %s, as clusters[%d] (%s) does: every child would be written twice; "+
				"remove one of the two entries, or point it at another cluster", cl.Kubeconfig, rc.Host, j, c.Clusters[j].Name)
			continue
		}
		servers[server] = i
	}
}

// checkGraphs reads the graph file (and the crd file) of every resource
// that names one and, with check, checks it and fills in the group,
// version and resource the resource leaves out from the parent kind it
// declares. It returns the problems of the graph files, each with its own
// file and line; those of the configuration's keys go to ps.
func checkGraphs(c *Config, ps *problems, check func(Resource, CEL) (*ParentKind, error)) []Problem {
	var out []Problem
	for i := range c.Resources {
		r := &c.Resources[i]
		key := r.Key()
		if r.CRD != "" {
			if _, err := os.Stat(r.crdPath); err != nil {
				ps.add(key+".crd", "cannot read the CRD file: %v", err)
				continue
			}
		}
		if r.Graph == "" {
			continue
		}
		if _, err := os.Stat(r.graphPath); err != nil {
			ps.add(key+".graph", "cannot read the graph file: %v", err)
			continue
		}
		if check == nil {
			continue
		}
		pk, err := check(*r, c.CEL)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				out = append(out, Problem{Message: line})
			}
		}
		parentKind(ps, r, pk, err == nil)
	}
	return out
}

// parentKind fills in r the group, version and resource it leaves out
// from pk, the parent kind its graph or crd file declares, and reports
// those it sets to something else. Without pk, a graph that could be read
// (read) declares none.
func parentKind(ps *problems, r *Resource, pk *ParentKind, read bool) {
	key := r.Key()
	switch {
	case pk == nil:
		if r.InstallCRD && read {
			ps.add(key+".installCRD", "the graph declares no parent kind (spec.schema) and the resource names no crd file: there is no CRD to install")
		}
		return
	case pk.FromSchema && r.CRD != "":
		ps.add(key+".crd", "the graph declares its parent kind in spec.schema (%s), from which its CRD is made; remove crd, or spec.schema from the graph", pk.Where)
	}
	for _, f := range []struct {
		name string
		got  *string
		want string
	}{
		{"group", &r.Group, pk.Group},
		{"version", &r.Version, pk.Version},
		{"resource", &r.Resource, pk.Resource},
	} {
		switch {
		case !ps.isSet(key + "." + f.name):
			*f.got = f.want
		case f.name == "version" && !pk.FromSchema && slices.Contains(pk.Versions, *f.got):
		case *f.got != f.want:
			want := fmt.Sprintf("%q", f.want)
			if f.name == "version" && len(pk.Versions) > 1 {
				want = "one of " + strings.Join(pk.Versions, ", ")
			}
			ps.add(key+"."+f.name, "is %q, but the parent kind of %s has %s; leave %s out, or make the two agree", *f.got, pk.Where, want, f.name)
		}
	}
}

func validateLeaderElection(ps *problems, le LeaderElection, sharding bool) {
	if !le.Enabled && !sharding {
		return
	}
	namespace(ps, "leaderElection.namespace", le.Namespace)
	if len(validation.IsDNS1123Subdomain(le.LeaseName)) > 0 {
		ps.add("leaderElection.leaseName", "%q is not a Lease name (lower-case letters, digits, '-' and '.')", le.LeaseName)
	}
	// The same rules client-go's leaderelection.NewLeaderElector enforces.
	if le.LeaseDuration <= le.RenewDeadline {
		ps.add("leaderElection.leaseDuration", "%s must be longer than renewDeadline (%s)", le.LeaseDuration, le.RenewDeadline)
	}
	if float64(le.RenewDeadline) <= 1.2*float64(le.RetryPeriod) {
		ps.add("leaderElection.renewDeadline", "%s must be longer than 1.2 × retryPeriod (%s)", le.RenewDeadline, le.RetryPeriod)
	}
	if le.RetryPeriod <= 0 {
		ps.add("leaderElection.retryPeriod", "%s must be more than 0", le.RetryPeriod)
	}
}

func validateSharding(ps *problems, s Sharding, le LeaderElection) {
	oneOf(ps, "sharding.serverSelector", string(s.ServerSelector), string(ServerSelectorAuto), string(ServerSelectorOff))
	if !s.Enabled {
		return
	}
	if le.Enabled {
		ps.add("sharding.enabled", "and leaderElection.enabled are both true: with sharding every replica writes its share "+
			"through a Lease of its own; set leaderElection.enabled to false (its namespace, leaseName and durations stay the ring's)")
	}
	if s.Identity != "" {
		if len(validation.IsDNS1123Subdomain(le.LeaseName+"-"+s.Identity)) > 0 {
			ps.add("sharding.identity", "%q makes no Lease name after leaderElection.leaseName (lower-case letters, digits, '-' and '.')", s.Identity)
		}
	}
}

// validateRGDs checks the resourceGraphDefinitions section.
func validateRGDs(ps *problems, g ResourceGraphDefinitions) {
	const key = "resourceGraphDefinitions"
	if g.Interval < minInterval {
		ps.add(key+".interval", "%s is shorter than the minimum of %s", g.Interval, minInterval)
	}
	for j, p := range g.ChildNamespaces {
		namespacePattern(ps, fmt.Sprintf("%s.childNamespaces[%d]", key, j), p)
	}
	for j, p := range g.ExternalNamespaces {
		namespacePattern(ps, fmt.Sprintf("%s.externalNamespaces[%d]", key, j), p)
	}
}

func validateResource(ps *problems, key string, r Resource, renderers []string) {
	// A graph may declare its parent kind, then none of the three is needed.
	hint := ""
	if r.Graph != "" {
		hint = "; or declare the parent kind in the graph's spec.schema, or name its CRD file in crd"
	}
	if r.Version == "" {
		ps.addNear(key, key+".version", "must not be empty (for example v1alpha1)%s", hint)
	}
	if r.Resource == "" {
		ps.addNear(key, key+".resource", "must not be empty: the plural resource name, for example httpservices%s", hint)
	} else if r.Resource != strings.ToLower(r.Resource) {
		ps.add(key+".resource", "%q must be the lower-case plural resource name that `kubectl api-resources` lists, not the kind", r.Resource)
	}
	switch {
	case r.Renderer == "" && r.Graph == "":
		ps.add(key+".renderer", "set renderer (one of %s) or graph (a graph file); neither is set", strings.Join(renderers, ", "))
	case r.Renderer != "" && r.Graph != "":
		ps.add(key+".graph", "renderer and graph are both set; a resource is rendered by one of them")
	case r.Graph != "":
	case !slices.Contains(renderers, r.Renderer):
		ps.add(key+".renderer", "unknown renderer %q; known renderers: %s", r.Renderer, strings.Join(renderers, ", "))
	}
	if r.Graph == "" && r.CRD != "" {
		ps.add(key+".crd", "names the parent kind's CRD for a graph; set graph too, or remove crd")
	}
	if r.Graph == "" && r.InstallCRD {
		ps.add(key+".installCRD", "installs the CRD of a graph's parent kind; set graph (with spec.schema, or crd), or remove installCRD")
	}
	if r.Interval < minInterval {
		ps.add(key+".interval", "%s is shorter than the minimum of %s", r.Interval, minInterval)
	}
	for j, ns := range r.Namespaces {
		namespace(ps, fmt.Sprintf("%s.namespaces[%d]", key, j), ns)
	}
	for j, p := range r.ChildNamespaces {
		namespacePattern(ps, fmt.Sprintf("%s.childNamespaces[%d]", key, j), p)
	}
	for j, p := range r.ExternalNamespaces {
		namespacePattern(ps, fmt.Sprintf("%s.externalNamespaces[%d]", key, j), p)
	}
	if _, err := labels.Parse(r.LabelSelector); err != nil {
		ps.add(key+".labelSelector", "%q is not a label selector: %v", r.LabelSelector, err)
	}
	oneOf(ps, key+".mode", string(r.Mode), string(ModeEnforce), string(ModeWarn), string(ModeOff))
	if r.Priority < minPriority || r.Priority > maxPriority {
		ps.add(key+".priority", "is %d, must be between %d and %d", r.Priority, minPriority, maxPriority)
	}
}

func namespace(ps *problems, key, v string) {
	if len(validation.IsDNS1123Label(v)) > 0 {
		ps.add(key, "%q is not a namespace name (at most 63 lower-case letters, digits and '-')", v)
	}
}

// namespacePattern checks a childNamespaces or externalNamespaces entry:
// a namespace name, or a glob of path.Match whose literal characters
// could be part of one.
func namespacePattern(ps *problems, key, p string) {
	if _, err := path.Match(p, ""); err != nil {
		ps.add(key, "%q is not a glob (path.Match: %v); write a namespace name, or a glob such as \"team-*\"", p, err)
		return
	}
	if !strings.ContainsAny(p, "*?[") {
		namespace(ps, key, p)
		return
	}
	if strings.IndexFunc(p, func(c rune) bool { return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-*?[]^!", c) }) >= 0 {
		ps.add(key, "%q can match no namespace: a namespace name has lower-case letters, digits and '-' only", p)
	}
}

func atLeast64(ps *problems, key string, v, lowest int64) {
	if v < lowest {
		ps.add(key, "is %d, must be at least %d", v, lowest)
	}
}

func atLeast(ps *problems, key string, v, lowest int) {
	if v < lowest {
		ps.add(key, "is %d, must be at least %d", v, lowest)
	}
}

func oneOf(ps *problems, key, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		ps.add(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
	}
}

func address(ps *problems, key, v string) {
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		ps.add(key, "%q is not a listen address host:port (for example \":8080\")", v)
	}
}

// overlap reports whether two lists of names (empty: all) share a name.
func overlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, ns := range a {
		if slices.Contains(b, ns) {
			return true
		}
	}
	return false
}

func gvrString(r Resource) string {
	if r.Group == "" {
		return r.Resource + "/" + r.Version
	}
	return r.Resource + "." + r.Group + "/" + r.Version
}
