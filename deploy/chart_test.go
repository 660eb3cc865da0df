package deploy_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/internal/golden"
)

const (
	chartDir         = "helm/resyncd"
	releaseName      = "resyncd"
	releaseNamespace = "resyncd-system"
)

// valueSets are the interesting configurations of the chart: each has a
// golden rendering under testdata/chart.
var valueSets = map[string]map[string]any{
	"default": {},
	// More than one replica: the ring, its Leases' Role, POD_NAME,
	// anti-affinity and a PodDisruptionBudget.
	"ha": {"replicaCount": 2},
	// More than one replica, one writer: leader election.
	"ha-leader-election": {"replicaCount": 2, "config": map[string]any{"sharding": map[string]any{"enabled": false}}},
	// Clusters from Secrets in two namespaces (argocd named twice): one
	// Role to read Secrets in each.
	"cluster-secrets": {"replicaCount": 3, "config": map[string]any{"clusterSecrets": []any{
		map[string]any{"namespace": "argocd", "labelSelector": "argocd.argoproj.io/secret-type=cluster"},
		map[string]any{"namespace": "capi-system", "labelSelector": "cluster.x-k8s.io/cluster-name"},
		map[string]any{"namespace": "argocd", "labelSelector": "resyncd.io/cluster=true"},
	}}},
	// The second resource renders HttpServices with the graph that
	// declares them (testdata/graphs), mounted from the values.
	"second-resource": {
		"graphs": map[string]any{"httpservice.yaml": readYAML("../testdata/graphs/httpservice.yaml")},
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "resyncd.io", "version": "v1alpha1", "resource": "httpservices", "renderer": "httpservice", "namespaces": []any{"shop"}},
			map[string]any{"group": "resyncd.io", "version": "v1alpha1", "resource": "httpservices", "graph": "httpservice.yaml",
				"namespaces": []any{"blog"}, "mode": "warn", "interval": "2m"},
		}},
	},
	"monitoring": {
		"metrics":   map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}},
		"dashboard": map[string]any{"enabled": true},
	},
	"secure-metrics": {"metrics": map[string]any{"secure": true, "serviceMonitor": map[string]any{"enabled": true}}},
	// Two clusters: the one resyncd runs in, and one whose kubeconfig a
	// Secret holds, mounted as a file; the second resource only there.
	"clusters": {
		"clusters": []any{
			map[string]any{"name": "home"},
			map[string]any{"name": "east", "secretName": "east-kubeconfig", "apply": map[string]any{"qps": 20}},
			map[string]any{"name": "vault", "secretName": "vault-kubeconfig", "allowCredentialPlugins": true},
		},
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "resyncd.io", "version": "v1alpha1", "resource": "httpservices", "renderer": "httpservice", "namespaces": []any{"shop"}},
			map[string]any{"group": "resyncd.io", "version": "v1alpha1", "resource": "httpservices", "renderer": "httpservice", "namespaces": []any{"blog"}, "clusters": []any{"east"}},
		}},
	},
	// What a target cluster needs: the ServiceAccount, its RBAC, its token.
	"target": {"target": map[string]any{"enabled": true}, "metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}},
	// A second parent kind, declared in a graph; its RBAC is the graph's.
	"graph": {
		"graphs": map[string]any{"webapp.yaml": readYAML("../docs/examples/webapp.yaml")},
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "webapp.yaml", "namespaces": []any{"chart-graph"}},
		}},
	},
	// HttpServices in every namespace beside a graph of Secrets, Endpoints,
	// NetworkPolicies and a custom kind in two namespaces: a ClusterRole for
	// the first, Roles in those two namespaces for the second.
	"graph-kinds": graphKinds,
	// kro's ResourceGraphDefinitions from the cluster, and no resource of
	// the file: the RBAC of RGDs, CRDs, kro.run's instances and the child
	// kinds listed.
	"rgds": rgdValues,
	// A kro ResourceGraphDefinition named alone: the parent kind, and the
	// CRD resyncd installs at start, come from its spec.schema.
	"kro-graph": {
		"graphs": map[string]any{"storefront.yaml": readYAML("../testdata/kro/storefront.yaml")},
		"config": map[string]any{"resources": []any{
			map[string]any{"graph": "storefront.yaml", "installCRD": true, "namespaces": []any{"shop"}},
		}},
	},
}

// rgdValues are the values of the rgds set.
var rgdValues = map[string]any{
	"config": map[string]any{
		"resources":                []any{},
		"resourceGraphDefinitions": map[string]any{"enabled": true, "interval": "5s"},
	},
	"rbac": map[string]any{"resourceGraphDefinitions": map[string]any{"childKinds": []any{
		map[string]any{"group": "", "kind": "ConfigMap"},
		map[string]any{"group": "apps", "kind": "Deployment"},
		map[string]any{"group": "", "kind": "Service"},
	}}},
}

// withRGDChildKinds are the rgds values with kinds as the child kinds.
func withRGDChildKinds(kinds ...any) map[string]any {
	return map[string]any{"config": rgdValues["config"], "rbac": map[string]any{"resourceGraphDefinitions": map[string]any{"childKinds": kinds}}}
}

// graphKinds are the values of the graph-kinds set.
var graphKinds = map[string]any{
	"graphs": map[string]any{"tenant.yaml": readYAML("../testdata/graphs/tenant.yaml")},
	"rbac": map[string]any{"customKinds": []any{
		map[string]any{"group": "example.com", "kind": "Widget", "resource": "widgets"},
	}},
	"config": map[string]any{"resources": []any{
		map[string]any{"group": "resyncd.io", "version": "v1alpha1", "resource": "httpservices", "renderer": "httpservice"},
		map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "tenant.yaml",
			"namespaces": []any{"team-b", "team-a"}},
	}},
}

// readYAML reads a YAML file as values hold it.
func readYAML(path string) map[string]any {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return ch
}

// render returns the manifests the chart renders with vals, without CRDs.
func render(t *testing.T, vals map[string]any) (string, error) {
	t.Helper()
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = releaseName, releaseNamespace
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	install.SkipCRDs = true
	rel, err := install.Run(loadChart(t), vals)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// TestChartLint is `helm lint --strict` for every value set: no message at
// all, warnings included.
func TestChartLint(t *testing.T) {
	for name, vals := range valueSets {
		t.Run(name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = releaseNamespace
			lint.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
			res := lint.Run([]string{chartDir}, vals)
			for _, m := range res.Messages {
				// The one thing lint suggests that a chart without a logo cannot do.
				if m.Severity == support.InfoSev && strings.Contains(m.Err.Error(), "icon is recommended") {
					continue
				}
				t.Errorf("lint: %s", m)
			}
			for _, err := range res.Errors {
				t.Errorf("lint: %v", err)
			}
		})
	}
}

func TestChartGolden(t *testing.T) {
	for name, vals := range valueSets {
		t.Run(name, func(t *testing.T) {
			got, err := render(t, vals)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("..", "testdata", "chart", name+".yaml"), got)
		})
	}
}

// TestChartCRD: the chart ships exactly the CRD of deploy/crds, and kro's
// ResourceGraphDefinition CRD as resyncd embeds it.
func TestChartCRD(t *testing.T) {
	inChart, err := os.ReadFile(filepath.Join(chartDir, "crds", "resyncd.io_httpservices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(crdFile(t), inChart) {
		t.Error("helm/resyncd/crds/resyncd.io_httpservices.yaml differs from crds/resyncd.io_httpservices.yaml; copy it over")
	}
	// kro's RGD CRD: the one resyncd installs when a cluster has none.
	inChart, err = os.ReadFile(filepath.Join(chartDir, "crds", "kro.run_resourcegraphdefinitions.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := os.ReadFile(filepath.Join("..", "daemon", "crds", "kro.run_resourcegraphdefinitions.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(embedded, inChart) {
		t.Error("helm/resyncd/crds/kro.run_resourcegraphdefinitions.yaml differs from daemon/crds/kro.run_resourcegraphdefinitions.yaml; copy it over")
	}
}

// TestChartRejectsBadValues: values.schema.json turns bad values into an
// error that names the key.
func TestChartRejectsBadValues(t *testing.T) {
	tests := []struct {
		name string
		vals map[string]any
		want string
	}{
		{"negative replicas", map[string]any{"replicaCount": -1}, "replicaCount"},
		{"log level", map[string]any{"logLevel": "loud"}, "logLevel"},
		{"unknown key", map[string]any{"replicas": 2}, "replicas"},
		{"renderer", map[string]any{"config": map[string]any{"resources": []any{
			map[string]any{"version": "v1", "resource": "widgets", "renderer": "helm"}}}}, "renderer"},
		{"duration", map[string]any{"config": map[string]any{"resources": []any{
			map[string]any{"version": "v1", "resource": "widgets", "renderer": "httpservice", "interval": "soon"}}}}, "interval"},
		{"no resources", map[string]any{"config": map[string]any{"resources": []any{}}}, "resources"},
		{"server selector", map[string]any{"config": map[string]any{"sharding": map[string]any{"serverSelector": "always"}}}, "serverSelector"},
		// Every replica would claim the same place in the ring.
		{"one identity for every replica", map[string]any{"replicaCount": 2, "config": map[string]any{"sharding": map[string]any{"identity": "a"}}}, "identity"},
		{"ring and leader election", map[string]any{"config": map[string]any{"sharding": map[string]any{"enabled": true}, "leaderElection": map[string]any{"enabled": true}}},
			"config.sharding.enabled and config.leaderElection.enabled are both true"},
		{"cluster Secrets without a selector", map[string]any{"config": map[string]any{"clusterSecrets": []any{map[string]any{"namespace": "argocd"}}}}, "labelSelector"},
		{"RGDs with no child kind", map[string]any{"config": map[string]any{"resources": []any{},
			"resourceGraphDefinitions": map[string]any{"enabled": true}}}, "rbac.resourceGraphDefinitions.childKinds"},
		{"RGDs with a cluster-scoped child kind", withRGDChildKinds(map[string]any{"group": "rbac.authorization.k8s.io", "kind": "ClusterRole"}),
			"rbac.resourceGraphDefinitions.childKinds[0] (ClusterRole.rbac.authorization.k8s.io) is cluster-scoped"},
		{"RGDs with an unknown child kind", withRGDChildKinds(map[string]any{"group": "example.com", "kind": "Widget"}), "rbac.customKinds"},
		{"RGDs with a child kind resyncd cannot write", withRGDChildKinds(map[string]any{"group": "authentication.k8s.io", "kind": "TokenReview"}), "cannot write"},
		{"cluster Secrets in no namespace", map[string]any{"config": map[string]any{"clusterSecrets": []any{map[string]any{"labelSelector": "a=b"}}}}, "namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, tt.vals)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

// TestChartGoMemLimit: GOMEMLIMIT is goMemLimitPercent of the memory
// limit, in bytes, whatever the limit's unit; absent without a limit or
// with a percentage of 0.
func TestChartGoMemLimit(t *testing.T) {
	for _, c := range []struct {
		limit   any
		percent int
		want    string
	}{
		{"256Mi", 90, `value: "241591910"`},
		{"1Gi", 50, `value: "536870912"`},
		{"500M", 90, `value: "450000000"`},
		{"1000000", 80, `value: "800000"`},
		{"256Mi", 0, ""},
		{nil, 90, ""},
	} {
		vals := map[string]any{"goMemLimitPercent": c.percent, "resources": map[string]any{"limits": map[string]any{"memory": c.limit}}}
		if c.limit == nil {
			vals["resources"] = map[string]any{"limits": nil}
		}
		got, err := render(t, vals)
		if err != nil {
			t.Fatalf("%v at %d%%: %v", c.limit, c.percent, err)
		}
		_, after, found := strings.Cut(got, "- name: GOMEMLIMIT\n")
		switch {
		case c.want == "" && found:
			t.Errorf("%v at %d%%: GOMEMLIMIT set", c.limit, c.percent)
		case c.want != "" && (!found || !strings.HasPrefix(strings.TrimSpace(after), c.want)):
			t.Errorf("%v at %d%%: GOMEMLIMIT %q, want %s", c.limit, c.percent, strings.SplitN(strings.TrimSpace(after), "\n", 2)[0], c.want)
		}
	}
}

// manifestObject returns the object of kind and name in a rendering, nil
// when there is none.
func manifestObject(t *testing.T, manifest, kind, name string) map[string]any {
	t.Helper()
	for doc := range strings.SplitSeq(manifest, "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if md, _ := obj["metadata"].(map[string]any); obj["kind"] == kind && md["name"] == name {
			return obj
		}
	}
	return nil
}

// renderedConfig returns the resyncd configuration of a rendering's
// ConfigMap.
func renderedConfig(t *testing.T, manifest string) map[string]any {
	t.Helper()
	cm := manifestObject(t, manifest, "ConfigMap", releaseName)
	if cm == nil {
		t.Fatal("no ConfigMap")
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm["data"].(map[string]any)["config.yaml"].(string)), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// replicaSetup is what the chart decides about replicas, as a rendering
// shows it.
type replicaSetup struct {
	LeaderElection bool           // config leaderElection.enabled
	Sharding       any            // config sharding, nil when absent
	LeaseRole      string         // the Role on Leases, "" when none
	PodName        bool           // POD_NAME from the pod's name
	Affinity       any            // the pods' affinity
	PDB            bool           // a PodDisruptionBudget
	Lease          map[string]any // config leaderElection.namespace and .leaseName
}

// replicaSetupOf reads a replicaSetup from a rendering.
func replicaSetupOf(t *testing.T, manifest string) replicaSetup {
	t.Helper()
	cfg := renderedConfig(t, manifest)
	le := cfg["leaderElection"].(map[string]any)
	got := replicaSetup{LeaderElection: le["enabled"] == true, Sharding: cfg["sharding"],
		PDB:   manifestObject(t, manifest, "PodDisruptionBudget", releaseName) != nil,
		Lease: map[string]any{"namespace": le["namespace"], "leaseName": le["leaseName"]}}
	for _, role := range []string{releaseName + "-ring", releaseName + "-leader-election"} {
		if manifestObject(t, manifest, "Role", role) != nil {
			if got.LeaseRole != "" {
				t.Errorf("Roles %s and %s", got.LeaseRole, role)
			}
			got.LeaseRole = role
		}
	}
	pod := manifestObject(t, manifest, "Deployment", releaseName)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	got.Affinity = pod["affinity"]
	env, _ := pod["containers"].([]any)[0].(map[string]any)["env"].([]any)
	for _, e := range env {
		if e := e.(map[string]any); e["name"] == "POD_NAME" {
			got.PodName = cmp.Equal(e["valueFrom"], map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}})
		}
	}
	return got
}

// TestChartReplicas: more than one replica share the work in the ring
// (sharding on, leader election off, each replica its pod's name, the
// ring's Role on Leases), spread over nodes unless affinity is given, with
// a PodDisruptionBudget; config.sharding.enabled false, or leader election
// asked for, makes one writer instead; one replica is alone unless it asks
// for either. The Leases stay in the release's namespace, named after the
// release, whichever is chosen.
func TestChartReplicas(t *testing.T) {
	spread := map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{
		map[string]any{"weight": float64(100), "podAffinityTerm": map[string]any{
			"topologyKey":   "kubernetes.io/hostname",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "resyncd", "app.kubernetes.io/instance": releaseName}},
		}}}}}
	zone := map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
			map[string]any{"key": "topology.kubernetes.io/zone", "operator": "In", "values": []any{"a"}}}}}}}}
	ring := map[string]any{"enabled": true, "serverSelector": "auto"}
	sharding := func(on bool) map[string]any {
		return map[string]any{"config": map[string]any{"sharding": map[string]any{"enabled": on}}}
	}
	with := func(a, b map[string]any) map[string]any { maps.Copy(a, b); return a }
	for _, tc := range []struct {
		name string
		vals map[string]any
		want replicaSetup
	}{
		{"one replica", map[string]any{}, replicaSetup{}},
		{"two replicas", map[string]any{"replicaCount": 2},
			replicaSetup{Sharding: ring, LeaseRole: "resyncd-ring", PodName: true, Affinity: spread, PDB: true}},
		{"three replicas, affinity given", map[string]any{"replicaCount": 3, "affinity": zone},
			replicaSetup{Sharding: ring, LeaseRole: "resyncd-ring", PodName: true, Affinity: zone, PDB: true}},
		{"two replicas, server selector off", map[string]any{"replicaCount": 2, "config": map[string]any{"sharding": map[string]any{"serverSelector": "off"}}},
			replicaSetup{Sharding: map[string]any{"enabled": true, "serverSelector": "off"}, LeaseRole: "resyncd-ring", PodName: true, Affinity: spread, PDB: true}},
		{"two replicas, sharding off", with(map[string]any{"replicaCount": 2}, sharding(false)),
			replicaSetup{LeaderElection: true, LeaseRole: "resyncd-leader-election", Affinity: spread, PDB: true}},
		{"two replicas, leader election asked", map[string]any{"replicaCount": 2, "config": map[string]any{"leaderElection": map[string]any{"enabled": true}}},
			replicaSetup{LeaderElection: true, LeaseRole: "resyncd-leader-election", Affinity: spread, PDB: true}},
		{"one replica, ring asked", sharding(true), replicaSetup{Sharding: ring, LeaseRole: "resyncd-ring", PodName: true}},
		{"one replica, leader election asked", map[string]any{"config": map[string]any{"leaderElection": map[string]any{"enabled": true}}},
			replicaSetup{LeaderElection: true, LeaseRole: "resyncd-leader-election"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(t, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Lease = map[string]any{"namespace": releaseNamespace, "leaseName": releaseName}
			if diff := cmp.Diff(tc.want, replicaSetupOf(t, got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
