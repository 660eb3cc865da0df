package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var renderers = []string{"httpservice"}

func fixture(name string) string { return filepath.Join("..", "testdata", "config", name) }

func TestLoadGood(t *testing.T) {
	got, err := Load(fixture("good.yaml"), Options{Renderers: renderers})
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		FieldManager: "resyncd-test",
		PageSize:     100,
		DriftCheck:   DriftCheckServer,
		Apply:        Apply{Concurrency: 4, BatchSize: 20, QPS: 25.5, Burst: 40, MaxWritesPerPass: 500},
		LeaderElection: LeaderElection{Enabled: true, Namespace: "ops", LeaseName: "resyncd-test",
			LeaseDuration: 20 * time.Second, RenewDeadline: 15 * time.Second, RetryPeriod: 3 * time.Second},
		Sharding:                 Sharding{ServerSelector: ServerSelectorAuto},
		Metrics:                  Metrics{Address: "127.0.0.1:9090"},
		Health:                   Endpoint{Address: ":9091"},
		Log:                      Log{Level: "debug", Format: "console"},
		CEL:                      CEL{MaxEstimatedCost: 100_000_000, CostBudget: 1_000_000},
		ResourceGraphDefinitions: ResourceGraphDefinitions{Interval: 30 * time.Second},
		Resources: []Resource{
			{Group: "resyncd.io", Version: "v1alpha1", Resource: "httpservices", Renderer: "httpservice",
				Interval: time.Minute, Namespaces: []string{"shop", "blog"}, LabelSelector: "tier in (web, api)",
				Mode: ModeWarn, Prune: false, Priority: 10},
			{Group: "resyncd.io", Version: "v1alpha1", Resource: "httpservices", Renderer: "httpservice",
				Interval: 30 * time.Second, Namespaces: []string{"ops"}, Mode: ModeEnforce, Prune: true},
		},
		Clusters: []Cluster{{Name: LocalCluster, Apply: Apply{Concurrency: 4, BatchSize: 20, QPS: 25.5, Burst: 40, MaxWritesPerPass: 500}}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Config{}, Resource{}, Cluster{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if w := got.Where("resources[1]"); w != fixture("good.yaml")+":32" {
		t.Errorf("Where(resources[1]) = %q", w)
	}
}

func TestLoadDefaults(t *testing.T) {
	got, err := Load(fixture("minimal.yaml"), Options{Renderers: renderers})
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	r := DefaultResource()
	r.Group, r.Version, r.Resource, r.Renderer = "resyncd.io", "v1alpha1", "httpservices", "httpservice"
	want.Resources = []Resource{r}
	want.Clusters = []Cluster{{Name: LocalCluster, Apply: want.Apply}}
	if diff := cmp.Diff(&want, got, cmpopts.IgnoreUnexported(Config{}, Resource{}, Cluster{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !got.Clusters[0].Home() || len(got.ResourcesIn(LocalCluster)) != 1 {
		t.Errorf("the one cluster of a file that lists none: home %v, %d resources", got.Clusters[0].Home(), len(got.ResourcesIn(LocalCluster)))
	}
}

// TestLoadRGDs: a file that serves the ResourceGraphDefinitions of the
// cluster needs no resource of its own, and each RGD's watched resource
// has the section's guards and interval, and the defaults of the rest.
func TestLoadRGDs(t *testing.T) {
	got, err := Load(fixture("rgds.yaml"), Options{Renderers: renderers})
	if err != nil {
		t.Fatal(err)
	}
	want := ResourceGraphDefinitions{Enabled: true, Interval: 15 * time.Second, ChildNamespaces: []string{"shared-*"}, ExternalNamespaces: []string{"platform"}, AdoptFromKro: true}
	if diff := cmp.Diff(want, got.ResourceGraphDefinitions); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	r := got.ResourceGraphDefinitions.Resource("web-app", "kro.run", "v1alpha1", "webapps")
	wantR := DefaultResource()
	wantR.Group, wantR.Version, wantR.Resource, wantR.Interval = "kro.run", "v1alpha1", "webapps", 15*time.Second
	wantR.ChildNamespaces, wantR.ExternalNamespaces = []string{"shared-*"}, []string{"platform"}
	if diff := cmp.Diff(wantR, r, cmpopts.IgnoreUnexported(Resource{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !r.AdoptsFromKro() {
		t.Error("AdoptsFromKro false, want true: resourceGraphDefinitions.adoptFromKro is every RGD's")
	}
	if r.Key() != "ResourceGraphDefinition web-app" || r.RendererKey() != "rgd:web-app" || r.RGD() != "web-app" {
		t.Errorf("Key %q, RendererKey %q, RGD %q", r.Key(), r.RendererKey(), r.RGD())
	}
}

// TestLoadClusters: a cluster's apply keys left out are the top-level
// apply's, its kubeconfig is read relative to the configuration file, and
// a resource that lists no cluster is watched in every one.
func TestLoadClusters(t *testing.T) {
	got, err := Load(fixture("clusters.yaml"), Options{Renderers: renderers, CheckKubeconfigs: true})
	if err != nil {
		t.Fatal(err)
	}
	top := Apply{Concurrency: 8, BatchSize: 50, QPS: 40, Burst: 80, MaxWritesPerPass: 2000}
	east := top
	east.QPS, east.MaxWritesPerPass = 10, 100
	want := []Cluster{
		{Name: "east", Kubeconfig: "kubeconfigs/east.yaml", Apply: east},
		{Name: "west", Kubeconfig: "kubeconfigs/west.yaml", Context: "west-admin", Apply: top},
		{Name: "home", Apply: top},
		{Name: "plugin", Kubeconfig: "kubeconfigs/exec.yaml", Apply: top, AllowCredentialPlugins: true},
	}
	if diff := cmp.Diff(want, got.Clusters, cmpopts.IgnoreUnexported(Cluster{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p := got.Clusters[0].KubeconfigPath(); p != fixture("kubeconfigs/east.yaml") {
		t.Errorf("kubeconfig path %q", p)
	}
	if got.Clusters[0].Home() || !got.Clusters[2].Home() {
		t.Error("only a cluster with no kubeconfig file is reached through resyncd's own connection")
	}
	for name, n := range map[string]int{"east": 2, "west": 1, "home": 1, "plugin": 1} {
		if in := got.ResourcesIn(name); len(in) != n {
			t.Errorf("%s watches %d resources, want %d", name, len(in), n)
		}
	}
	if k := got.ResourcesIn("west")[0].Key(); k != "resources[0]" {
		t.Errorf("Key() = %q", k)
	}
}

// TestLoadClusterSecrets: with clusterSecrets and no clusters there is no
// "local" cluster, and a resource may list a cluster that no entry names:
// a Secret may hold it.
func TestLoadClusterSecrets(t *testing.T) {
	got, err := Load(fixture("cluster-secrets.yaml"), Options{Renderers: renderers})
	if err != nil {
		t.Fatal(err)
	}
	want := []ClusterSecret{
		{Namespace: "argocd", LabelSelector: "argocd.argoproj.io/secret-type=cluster"},
		{Namespace: "fleet", LabelSelector: "cluster.x-k8s.io/cluster-name"},
	}
	if diff := cmp.Diff(want, got.ClusterSecrets); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(got.Clusters) != 0 || !got.ListsClusters() {
		t.Errorf("clusters %v, listed %v; want none, and the names printed", got.Clusters, got.ListsClusters())
	}
	if n, m := len(got.ResourcesIn("east")), len(got.ResourcesIn("west")); n != 2 || m != 1 {
		t.Errorf("east watches %d resources, west %d; want 2 and 1", n, m)
	}
	if (Cluster{Name: "east", Secret: "argocd/east"}).Home() {
		t.Error("a cluster of a Secret is reached through resyncd's own connection")
	}
}

// loadWith loads the fixture name with the environment env and the
// command line's overrides.
func loadWith(name string, env, overrides map[string]string) (*Config, error) {
	return Load(fixture(name), Options{
		Renderers: renderers,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Overrides: overrides,
	})
}

// TestLoadClustersInheritOverrides: a cluster's apply keys left out are
// the top-level apply's after the environment and the command line, and
// those it sets stay its own.
func TestLoadClustersInheritOverrides(t *testing.T) {
	env := map[string]string{"RESYNCD_APPLY_QPS": "20", "RESYNCD_APPLY_BURST": "90"}
	got, err := loadWith("clusters.yaml", env, map[string]string{"apply.concurrency": "2"})
	if err != nil {
		t.Fatal(err)
	}
	top := Apply{Concurrency: 2, BatchSize: 50, QPS: 20, Burst: 90, MaxWritesPerPass: 2000}
	east := top
	east.QPS, east.MaxWritesPerPass = 10, 100
	want := []Apply{east, top, top, top}
	var applies []Apply
	for _, c := range got.Clusters {
		applies = append(applies, c.Apply)
	}
	if diff := cmp.Diff(want, applies); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLoadOverrides(t *testing.T) {
	env := map[string]string{
		"RESYNCD_APPLY_CONCURRENCY":            "3",
		"RESYNCD_LEADERELECTION_LEASEDURATION": "1m",
		"RESYNCD_LOG_LEVEL":                    "warn", // the command line wins
		"RESYNCD_UNRELATED":                    "ignored",
	}
	got, err := loadWith("minimal.yaml", env, map[string]string{"log.level": "debug", "log.format": "console"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Apply.Concurrency != 3 || got.LeaderElection.LeaseDuration != time.Minute {
		t.Errorf("environment not applied: concurrency %d, leaseDuration %s", got.Apply.Concurrency, got.LeaderElection.LeaseDuration)
	}
	if got.Log != (Log{Level: "debug", Format: "console"}) {
		t.Errorf("log = %+v, want the command line's debug/console", got.Log)
	}
	if got.Apply.QPS != 50 {
		t.Errorf("qps = %g, want the default 50", got.Apply.QPS)
	}
}

func TestLoadBadOverrides(t *testing.T) {
	env := map[string]string{"RESYNCD_PAGESIZE": "many", "RESYNCD_LEADERELECTION_RETRYPERIOD": "often"}
	_, err := loadWith("minimal.yaml", env, map[string]string{"log.colour": "yes"})
	want := strings.Join([]string{
		`$RESYNCD_LEADERELECTION_RETRYPERIOD: leaderElection.retryPeriod: "often" is not a duration (for example 30s, 5m, 1h)`,
		`$RESYNCD_PAGESIZE: pageSize: "many" is not a whole number`,
		`command line: log.colour: unknown key`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got error:\n%v\nwant:\n%s", err, want)
	}
}

// TestLoadBadConfigs: every invalid-*.yaml gives exactly the problems listed,
// all of them at once, each with the file, line and key path.
func TestLoadBadConfigs(t *testing.T) {
	tests := map[string][]string{
		"invalid-children.yaml": {
			`:6: resources[0].childNamespaces[1]: "team-[a-" is not a glob (path.Match: syntax error in pattern); write a namespace name, or a glob such as "team-*"`,
			`:6: resources[0].childNamespaces[2]: "Team_*" can match no namespace: a namespace name has lower-case letters, digits and '-' only`,
			`:6: resources[0].childNamespaces[3]: "Bad Name" is not a namespace name (at most 63 lower-case letters, digits and '-')`,
			`:7: resources[0].clusterScopedChildren: "sometimes" is not true or false`,
			`:8: resources[0].externalNamespaces[1]: "x[" is not a glob (path.Match: syntax error in pattern); write a namespace name, or a glob such as "team-*"`,
			`:8: resources[0].externalNamespaces[2]: "Platform" is not a namespace name (at most 63 lower-case letters, digits and '-')`,
		},
		"invalid-clusters.yaml": {
			`:4: clusters[0].context: kubeconfigs/east.yaml has no context "nosuch"; it has: east, east-admin`,
			`:5: clusters[0].apply.qps: is 0, must be more than 0`,
			`:6: clusters[1].name: "East_1" is not a cluster name (at most 63 lower-case letters, digits and '-'): it is a label value of every metric`,
			`:7: clusters[1].kubeconfig: cannot read the kubeconfig file: open ../testdata/config/kubeconfigs/nosuch.yaml: no such file or directory`,
			`:8: clusters[2].name: "east" names clusters[0] too; each cluster needs a name of its own`,
			`:9: clusters[2].kubeconfig: kubeconfigs/empty.yaml has no current context; set its current-context, or clusters[2].context`,
			`:10: clusters[3]: has no name`,
			`:12: resources[0].clusters[1]: unknown cluster "north"; clusters: east`,
		},
		"invalid-sharding.yaml": {
			`:5: sharding.enabled: and leaderElection.enabled are both true: with sharding every replica writes its share through a Lease of its own; set leaderElection.enabled to false (its namespace, leaseName and durations stay the ring's)`,
			`:6: sharding.identity: "Replica_1" makes no Lease name after leaderElection.leaseName (lower-case letters, digits, '-' and '.')`,
			`:7: sharding.serverSelector: "always" is not one of auto, off`,
		},
		"invalid-cluster-secrets.yaml": {
			`:2: clusterSecrets[0].labelSelector: must not be empty: resyncd reads only the Secrets a label selects (for example argocd.argoproj.io/secret-type=cluster), never every Secret of a namespace`,
			`:3: clusterSecrets[1].namespace: must not be empty: the namespace of the Secrets that hold clusters, for example argocd`,
			`:4: clusterSecrets[2].namespace: "Argo_CD" is not a namespace name (at most 63 lower-case letters, digits and '-')`,
			`:4: clusterSecrets[2].labelSelector: "tier in web" is not a label selector: unable to parse requirement: found 'web' expected: '('`,
			`:5: clusterSecrets[3].labelSelector: must not be empty: resyncd reads only the Secrets a label selects (for example argocd.argoproj.io/secret-type=cluster), never every Secret of a namespace`,
			`:7: clusterSecrets[5]: repeats clusterSecrets[4]; remove one of the two`,
			`:8: clusterSecrets[6].selector: unknown key`,
			`:8: clusterSecrets[6].labelSelector: must not be empty: resyncd reads only the Secrets a label selects (for example argocd.argoproj.io/secret-type=cluster), never every Secret of a namespace`,
			`:10: resources[0].clusters[0]: "Not_A_Name" can name no cluster: a cluster of a Secret is named with lower-case letters, digits, '-' and '.'`,
		},
		"invalid-kubeconfigs.yaml": {
			`:5: clusters[1].kubeconfig: kubeconfigs/east.yaml reaches the API server https://east.example:6443, as clusters[0] (east) does: every child would be written twice; remove one of the two entries, or point it at another cluster`,
			`:8: clusters[2].kubeconfig: kubeconfigs/exec.yaml: user "cloud" gets its credentials by running the command "/usr/local/bin/cloud-auth" (exec); resyncd uses no credential plugin of a cluster's kubeconfig file unless the cluster's entry sets allowCredentialPlugins: true (cluster exec)`,
			`:10: clusters[3].kubeconfig: kubeconfigs/auth-provider.yaml: user "sso" gets its credentials from the auth-provider "oidc"; resyncd uses no credential plugin of a cluster's kubeconfig file unless the cluster's entry sets allowCredentialPlugins: true (cluster oidc)`,
			`:13: clusters[4].kubeconfig: kubeconfigs/east-upper.yaml reaches the API server HTTPS://East.Example:6443/, as clusters[0] (east) does: every child would be written twice; remove one of the two entries, or point it at another cluster`,
		},
		"invalid-duration.yaml": {
			`:6: resources[0].interval: "soon" is not a duration (for example 30s, 5m, 1h)`,
		},
		"invalid-empty.yaml": {
			`: resources: no resource to watch: list at least one, or set resourceGraphDefinitions.enabled`,
		},
		"invalid-rgds.yaml": {
			`:3: resourceGraphDefinitions.interval: 10ms is shorter than the minimum of 1s`,
			`:4: resourceGraphDefinitions.childNamespaces[0]: "Not_A_Pattern" is not a namespace name (at most 63 lower-case letters, digits and '-')`,
			`:5: resourceGraphDefinitions.clusterScopedChildren: "maybe" is not true or false`,
			`:6: resourceGraphDefinitions.externalNamespaces[0]: "[x" is not a glob (path.Match: syntax error in pattern); write a namespace name, or a glob such as "team-*"`,
			`:7: resourceGraphDefinitions.namespace: unknown key`,
		},
		"invalid-overlap.yaml": {
			`:7: resources[1]: watches httpservices.resyncd.io/v1alpha1 again in namespaces that resources[0] watches too; merge the two entries`,
		},
		"invalid-syntax.yaml": {
			`: yaml: line 1: did not find expected '-' indicator`,
		},
		"invalid-graph.yaml": {
			`:1: cel.costBudget: is 10, must be at least 1000`,
			`:3: resources[0].graph: renderer and graph are both set; a resource is rendered by one of them`,
			`:4: resources[1].graph: cannot read the graph file: stat ../testdata/config/nosuch.yaml: no such file or directory`,
		},
		"invalid-parent-kind.yaml": {
			`:2: resources[0].group: is "example.com", but the parent kind of ../testdata/kro/storefront.yaml:9 has "kro.run"; leave group out, or make the two agree`,
			`:4: resources[1].crd: the graph declares its parent kind in spec.schema (../testdata/kro/storefront.yaml:9), from which its CRD is made; remove crd, or spec.schema from the graph`,
			`:6: resources[2].installCRD: the graph declares no parent kind (spec.schema) and the resource names no crd file: there is no CRD to install`,
			`:6: resources[2].version: must not be empty (for example v1alpha1); or declare the parent kind in the graph's spec.schema, or name its CRD file in crd`,
			`:6: resources[2].resource: must not be empty: the plural resource name, for example httpservices; or declare the parent kind in the graph's spec.schema, or name its CRD file in crd`,
			`:7: resources[3].crd: cannot read the CRD file: stat ../testdata/config/nosuch.yaml: no such file or directory`,
			`:7: resources[3].crd: names the parent kind's CRD for a graph; set graph too, or remove crd`,
			`:7: resources[3].installCRD: installs the CRD of a graph's parent kind; set graph (with spec.schema, or crd), or remove installCRD`,
			`:8: resources[4].version: is "v2", but the parent kind of ../testdata/crds/example.resyncd.io_webapps.yaml has "v1alpha1"; leave version out, or make the two agree`,
		},
		"invalid-mixed.yaml": {
			`:2: apply.qps: "fast" is not a number`,
			`:2: apply.concurrency: is -3, must be at least 1`,
			`:7: resources[0].renderer: unknown renderer "nosuchrenderer"; known renderers: httpservice`,
			`:8: resources[0].interval: "soon" is not a duration (for example 30s, 5m, 1h)`,
		},
		"invalid-types.yaml": {
			`:1: pageSize: "lots" is not a whole number`,
			`:3: apply.qps: "fast" is not a number`,
			`:4: apply.burst: is a list, want a single value`,
			`:6: leaderElection.enabled: "yes" is not true or false`,
			`:8: resources: is a mapping, want a list`,
		},
		"invalid-unknown-keys.yaml": {
			`:1: fieldmanager: unknown key (did you mean "fieldManager"? keys are case-sensitive)`,
			`:3: apply.concurency: unknown key (did you mean "concurrency"?)`,
			`:9: resources[0].intervall: unknown key (did you mean "interval"?)`,
			`:11: resources[0].prune: is set twice`,
		},
		"invalid-values.yaml": {
			`:1: fieldManager: must not be empty`,
			`:2: pageSize: is 0, must be at least 1`,
			`:3: driftCheck: "remote" is not one of local, server`,
			`:5: apply.concurrency: is 0, must be at least 1`,
			`:6: apply.qps: is 0, must be more than 0`,
			`:7: apply.maxWritesPerPass: is -1, must be at least 1`,
			`:10: leaderElection.namespace: "Resyncd_System" is not a namespace name (at most 63 lower-case letters, digits and '-')`,
			`:11: leaderElection.leaseDuration: 5s must be longer than renewDeadline (10s)`,
			`:13: metrics.address: "8080" is not a listen address host:port (for example ":8080")`,
			`:14: log.level: "verbose" is not one of debug, info, warn, error`,
			":18: resources[0].resource: \"HttpService\" must be the lower-case plural resource name that `kubectl api-resources` lists, not the kind",
			`:19: resources[0].renderer: unknown renderer "helm"; known renderers: httpservice`,
			`:20: resources[0].interval: 100ms is shorter than the minimum of 1s`,
			`:21: resources[0].namespaces[1]: "Not A Namespace" is not a namespace name (at most 63 lower-case letters, digits and '-')`,
			`:22: resources[0].labelSelector: "tier in web" is not a label selector: unable to parse requirement: found 'web' expected: '('`,
			`:23: resources[0].mode: "enforcing" is not one of enforce, warn, off`,
			`:24: resources[0].priority: is 5000, must be between -1000 and 1000`,
			`:25: resources[1].version: must not be empty (for example v1alpha1)`,
			`:27: resources[1].renderer: set renderer (one of httpservice) or graph (a graph file); neither is set`,
		},
	}
	files, err := filepath.Glob(fixture("invalid-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("%d invalid-*.yaml fixtures, %d cases: every fixture needs its expected errors", len(files), len(tests))
	}
	for name, lines := range tests {
		t.Run(name, func(t *testing.T) {
			path := fixture(name)
			_, err := Load(path, Options{Renderers: renderers, CheckKubeconfigs: true, CheckGraph: fakeGraphs})
			if err == nil {
				t.Fatal("no error")
			}
			for i := range lines {
				lines[i] = path + lines[i]
			}
			if diff := cmp.Diff(strings.Join(lines, "\n"), err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadChildPlacement: childNamespaces and clusterScopedChildren are
// read, and say where a parent's children may be placed.
func TestLoadChildPlacement(t *testing.T) {
	cfg, err := Load(fixture("children.yaml"), Options{Renderers: renderers})
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Resources[0]
	if diff := cmp.Diff([]string{"shared", "team-*", "env-?"}, r.ChildNamespaces); diff != "" {
		t.Errorf("childNamespaces (-want +got):\n%s", diff)
	}
	if !r.ClusterScopedChildren || !r.ChildrenLeave() {
		t.Errorf("clusterScopedChildren %v, ChildrenLeave %v; want both true", r.ClusterScopedChildren, r.ChildrenLeave())
	}
	for _, tc := range []struct {
		parent, ns string
		want       bool
	}{
		{"shop", "shop", true},
		{"shop", "shared", true},
		{"shop", "team-a", true},
		{"shop", "team-", true},
		{"shop", "env-1", true},
		{"shop", "env-12", false},
		{"shop", "blog", false},
		{"shop", "shared-2", false},
	} {
		if got := r.AllowsNamespace(tc.parent, tc.ns); got != tc.want {
			t.Errorf("AllowsNamespace(%q, %q) = %v, want %v", tc.parent, tc.ns, got, tc.want)
		}
	}
	def, err := Load(fixture("minimal.yaml"), Options{Renderers: renderers})
	if err != nil {
		t.Fatal(err)
	}
	if d := def.Resources[0]; d.ChildrenLeave() || d.AllowsNamespace("shop", "blog") || !d.AllowsNamespace("shop", "shop") {
		t.Errorf("by default children stay in their parent's namespace: ChildrenLeave %v, AllowsNamespace(shop, blog) %v", d.ChildrenLeave(), d.AllowsNamespace("shop", "blog"))
	}
}

// TestLoadExternalNamespaces: externalNamespaces is read, and says where
// an external reference whose namespace an expression gives may be read:
// the parent's own namespace always, another only where it is listed,
// every namespace only with a pattern that matches any.
func TestLoadExternalNamespaces(t *testing.T) {
	cfg, err := Load(fixture("children.yaml"), Options{Renderers: renderers})
	if err != nil {
		t.Fatal(err)
	}
	def, err := Load(fixture("minimal.yaml"), Options{Renderers: renderers})
	if err != nil {
		t.Fatal(err)
	}
	r, d := cfg.Resources[0], def.Resources[0]
	if diff := cmp.Diff([]string{"platform", "shared-*"}, r.ExternalNamespaces); diff != "" {
		t.Errorf("externalNamespaces (-want +got):\n%s", diff)
	}
	anywhere := r
	anywhere.ExternalNamespaces = []string{"*"}
	for _, tc := range []struct {
		name       string
		r          Resource
		parent, ns string
		want       bool
	}{
		{"default, the parent's own", d, "shop", "shop", true},
		{"default, another", d, "shop", "platform", false},
		{"default, every namespace", d, "shop", "", false},
		{"a name", r, "shop", "platform", true},
		{"a glob", r, "shop", "shared-eu", true},
		{"not listed", r, "shop", "blog", false},
		{"a child's namespace is not a read's", r, "shop", "team-a", false},
		{"every namespace, not by a name or a glob of names", r, "shop", "", false},
		{"every namespace, by *", anywhere, "shop", "", true},
	} {
		if got := tc.r.AllowsExternalNamespace(tc.parent, tc.ns); got != tc.want {
			t.Errorf("%s: AllowsExternalNamespace(%q, %q) = %v, want %v", tc.name, tc.parent, tc.ns, got, tc.want)
		}
	}
}

// fakeGraphs stands in for the command layer's graph check: kro's
// storefront declares kro.run/v1alpha1 Storefront in spec.schema at line
// 9, a CRD file WebApp of example.resyncd.io in v1alpha1; every other
// graph declares no parent kind.
func fakeGraphs(r Resource, _ CEL) (*ParentKind, error) {
	switch {
	case filepath.Base(r.GraphPath()) == "storefront.yaml":
		return &ParentKind{Group: "kro.run", Version: "v1alpha1", Resource: "storefronts", Versions: []string{"v1alpha1"},
			Where: r.GraphPath() + ":9", FromSchema: true}, nil
	case r.CRDPath() != "":
		return &ParentKind{Group: "example.resyncd.io", Version: "v1alpha1", Resource: "webapps", Versions: []string{"v1alpha1"},
			Where: r.CRDPath()}, nil
	}
	return nil, nil
}

// TestLoadParentKind: a resource that names a graph, and no group,
// version or resource, watches the parent kind the graph declares, or
// its crd file; set, they must agree (invalid-parent-kind.yaml).
func TestLoadParentKind(t *testing.T) {
	got, err := Load(fixture("parent-kind.yaml"), Options{Renderers: renderers, CheckGraph: fakeGraphs})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got.Resources {
		names = append(names, r.Name())
	}
	if diff := cmp.Diff([]string{"storefronts.v1alpha1.kro.run", "webapps.v1alpha1.example.resyncd.io"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if r := got.Resources[1]; r.CRDPath() != fixture("../crds/example.resyncd.io_webapps.yaml") || r.InstallCRD || !got.Resources[0].InstallCRD {
		t.Errorf("crd %q, installCRD %v, %v", r.CRDPath(), got.Resources[0].InstallCRD, r.InstallCRD)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), Options{Renderers: renderers})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want a not-exist error", err)
	}
}

// FuzzLoad: no input makes the loader panic, and whatever it accepts
// passes validation again unchanged.
func FuzzLoad(f *testing.F) {
	files, err := filepath.Glob(fixture("*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path, Options{Renderers: renderers})
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		ps := &problems{source: path, lines: map[string]int{}}
		validate(cfg, ps, renderers)
		if err := ps.err(); err != nil {
			t.Fatalf("accepted, then invalid: %v", err)
		}
	})
}

// TestLoadLeavesKubeconfigsToClusters: without CheckKubeconfigs, what is
// wrong with a cluster's kubeconfig file does not fail the load; the
// daemon makes that cluster down with the reason and runs the others.
func TestLoadLeavesKubeconfigsToClusters(t *testing.T) {
	if _, err := Load(fixture("invalid-kubeconfigs.yaml"), Options{Renderers: renderers}); err != nil {
		t.Errorf("load without CheckKubeconfigs: %v", err)
	}
}

func TestServerURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://east.example:6443":      "https://east.example:6443",
		"HTTPS://East.Example:6443/":     "https://east.example:6443",
		"https://east.example":           "https://east.example:443",
		"https://east.example:443/":      "https://east.example:443",
		"http://127.0.0.1":               "http://127.0.0.1:80",
		"https://[::1]:6443/k8s/":        "https://[::1]:6443/k8s",
		"https://proxy.example/clusters": "https://proxy.example:443/clusters",
		"not a url":                      "not a url",
	} {
		if got := ServerURL(in); got != want {
			t.Errorf("ServerURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkLoad loads every fixture, good and bad, as the daemon does at
// start and on each reload.
func BenchmarkLoad(b *testing.B) {
	files, err := filepath.Glob(fixture("*.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Renderers: renderers, LookupEnv: func(key string) (string, bool) {
		if key == EnvVar("apply.concurrency") {
			return "4", true
		}
		return "", false
	}, CheckGraph: fakeGraphs}
	b.ReportAllocs()
	for b.Loop() {
		for _, file := range files {
			_, _ = Load(file, opts)
		}
	}
}
