package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/resyncd/resyncd/internal/fixture"
)

// placementFiles writes a configuration watching WebApps with the graph
// body and the resource keys extra, and a kubeconfig for the test API
// server.
func placementFiles(t *testing.T, body, extra string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "outside.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("resources:\n  - {group: example.resyncd.io, version: v1alpha1, resource: webapps, graph: outside.yaml"+extra+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, kc
}

// TestValidatePlacements: validate lists, per graph, the templates that
// can leave their parent's namespace and whether the configuration allows
// it; one that could only ever be refused — a cluster-scoped kind without
// clusterScopedChildren, a namespace written out that childNamespaces does
// not allow — is an error with the graph's file and line, offline and
// against the API server (whose discovery gives the scope), and the
// daemon does not start with it.
func TestValidatePlacements(t *testing.T) {
	t.Parallel()
	fixture.InstallWebApps(t, env(t).Config)
	outside := readFile(t, "../../testdata/graphs/outside.yaml")

	cfg, kc := placementFiles(t, outside, `, childNamespaces: ["team-*"], clusterScopedChildren: true`)
	out, code := resyncd(t, "validate", "--config", cfg)
	for _, want := range []string{
		"outside.yaml:21: resources[shared] (ConfigMap): in the namespace ${schema.spec.tags[0]} gives: allowed in the parent's namespace and team-*; refused elsewhere",
		"outside.yaml:30: resources[reader] (ClusterRole): cluster-scoped: allowed (clusterScopedChildren)",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("allowed: exit %d, want 0 and %q in the output:\n%s", code, want, out)
		}
	}
	if out, code = resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc); code != 0 {
		t.Errorf("allowed, against the API server: exit %d, output:\n%s", code, out)
	}

	cfg, kc = placementFiles(t, outside, `, childNamespaces: ["team-*"]`)
	refused := "outside.yaml:30: resources[reader] (ClusterRole): ClusterRole is cluster-scoped, and webapps.v1alpha1.example.resyncd.io does not allow cluster-scoped children: every one would be refused; set clusterScopedChildren: true on resources[0], or remove the template"
	for _, args := range [][]string{{"validate", "--config", cfg}, {"validate", "--config", cfg, "--kubeconfig", kc}, {"once", "--config", cfg, "--kubeconfig", kc}} {
		if out, code := resyncd(t, args...); code != 1 || !strings.Contains(out, refused) {
			t.Errorf("%v without clusterScopedChildren: exit %d, want 1 and %q in the output:\n%s", args[0], code, refused, out)
		}
	}

	literal := strings.Replace(outside, "namespace: ${schema.spec.tags[0]}", "namespace: platform", 1)
	cfg, _ = placementFiles(t, literal, `, clusterScopedChildren: true, namespaces: [team]`)
	want := "outside.yaml:27: resources[shared] (ConfigMap): webapps.v1alpha1.example.resyncd.io does not allow children in namespace platform: every one would be refused; add it to childNamespaces of resources[0], or remove metadata.namespace"
	if out, code := resyncd(t, "validate", "--config", cfg); code != 1 || !strings.Contains(out, want) {
		t.Errorf("a namespace not allowed, written out: exit %d, want 1 and %q in the output:\n%s", code, want, out)
	}
	cfg, _ = placementFiles(t, literal, `, childNamespaces: [platform], clusterScopedChildren: true`)
	if out, code := resyncd(t, "validate", "--config", cfg); code != 0 || !strings.Contains(out, "resources[shared] (ConfigMap): in namespace platform: allowed (childNamespaces)") {
		t.Errorf("the namespace allowed: exit %d, output:\n%s", code, out)
	}

	// A namespace written out that the parents living there may use: it
	// is decided per parent, and the daemon starts.
	perParent := "outside.yaml:21: resources[shared] (ConfigMap): in namespace platform: allowed for the parents in platform; refused for the others (childNamespaces does not allow it)"
	for _, extra := range []string{`, clusterScopedChildren: true`, `, clusterScopedChildren: true, namespaces: [team, platform]`} {
		cfg, kc = placementFiles(t, literal, extra)
		for _, args := range [][]string{{"validate", "--config", cfg}, {"validate", "--config", cfg, "--kubeconfig", kc}} {
			if out, code := resyncd(t, args...); code != 0 || !strings.Contains(out, perParent) {
				t.Errorf("%v, a namespace a parent may live in (%s): exit %d, want 0 and %q in the output:\n%s", args, extra, code, perParent, out)
			}
		}
		if out, code := resyncd(t, "once", "--config", cfg, "--kubeconfig", kc); code != 0 {
			t.Errorf("once, a namespace a parent may live in (%s): exit %d, output:\n%s", extra, code, out)
		}
	}

	cfg, _ = placementFiles(t, readFile(t, "../../docs/examples/webapp.yaml"), "")
	if out, code := resyncd(t, "validate", "--config", cfg); code != 0 || !strings.Contains(out, "outside.yaml: every child in its parent's namespace") {
		t.Errorf("a graph that stays: exit %d, output:\n%s", code, out)
	}
}

// TestRenderOutside: render prints a child outside the parent's namespace
// as the first pass writes it — resyncd's labels and the parent's
// namespace, no ownerReference — and, where the configuration does not
// allow its place, names it as not written instead.
func TestRenderOutside(t *testing.T) {
	t.Parallel()
	parent := filepath.Join(t.TempDir(), "parent.yaml")
	if err := os.WriteFile(parent, []byte(`apiVersion: example.resyncd.io/v1alpha1
kind: WebApp
metadata: {name: shop, namespace: team, uid: 0b5c2e4a-1111-4222-8333-944455556666}
spec: {image: nginx, tags: [shared-a]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := readFile(t, "../../testdata/graphs/outside.yaml")

	cfg, _ := placementFiles(t, outside, `, clusterScopedChildren: true`)
	out, code := resyncd(t, "render", "--config", cfg, "--parent", parent)
	want := "# not written: ConfigMap shared-a/team-shop: webapps.v1alpha1.example.resyncd.io does not allow children in namespace shared-a (childNamespaces)\n"
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "namespace: shared-a") {
		t.Errorf("not allowed: exit %d, want %q and no child in shared-a:\n%s", code, want, out)
	}

	cfg, _ = placementFiles(t, outside, `, childNamespaces: ["shared-*"]`)
	out, code = resyncd(t, "render", "--config", cfg, "--parent", parent)
	docs := strings.Split(out, "---\n")
	if code != 0 || len(docs) != 2 || !strings.Contains(docs[1], "namespace: shared-a\n") || !strings.Contains(docs[1], "resyncd.io/parent-namespace: team\n") ||
		strings.Contains(docs[1], "ownerReferences") || !strings.Contains(docs[0], "ownerReferences") {
		t.Errorf("allowed: exit %d, want the home ConfigMap with an ownerReference, the shared one in shared-a with the parent's namespace and none:\n%s", code, out)
	}
}

// TestValidateChosenReads: validate lists the external references whose
// namespace an expression gives, with where the configuration lets them
// read: the parent's namespace only, or externalNamespaces too; one
// whose namespace is written out is not listed, and neither is an error.
func TestValidateChosenReads(t *testing.T) {
	t.Parallel()
	graph := `apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: reads}
spec:
  resources:
    - id: db
      externalRef: {apiVersion: v1, kind: Secret, metadata: {name: db, namespace: "${schema.spec.secretNamespace}"}}
    - id: platform
      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: platform, namespace: platform-system}}
    - id: settings
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${schema.metadata.name}"}, data: {a: "${db.data.a}", b: "${platform.data.b}"}}
`
	for _, tc := range []struct {
		extra, want string
	}{
		{"", "outside.yaml:6: resources[db] (Secret): reads in the namespace ${schema.spec.secretNamespace} gives: only where it gives the parent's own namespace (externalNamespaces is empty: any other is refused)"},
		{`, externalNamespaces: [bank, "vault-*"]`, "outside.yaml:6: resources[db] (Secret): reads in the namespace ${schema.spec.secretNamespace} gives: allowed in the parent's namespace and bank, vault-*; refused elsewhere"},
	} {
		cfg, _ := placementFiles(t, graph, tc.extra)
		out, code := resyncd(t, "validate", "--config", cfg)
		if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "outside.yaml: every child in its parent's namespace") || strings.Contains(out, "resources[platform]") {
			t.Errorf("%q: exit %d, want 0, every child in its namespace, and only %q of the reads in the output:\n%s", tc.extra, code, tc.want, out)
		}
	}
}

// TestValidatePlacementsEvery: validate lists the placement errors of
// every graph, not only the first's, offline and against the API server.
func TestValidatePlacementsEvery(t *testing.T) {
	t.Parallel()
	fixture.InstallWebApps(t, env(t).Config)
	literal := strings.Replace(readFile(t, "../../testdata/graphs/outside.yaml"), "namespace: ${schema.spec.tags[0]}", "namespace: platform", 1)
	cfg, kc := placementFiles(t, literal, `, namespaces: [team-a]}
  - {group: example.resyncd.io, version: v1alpha1, resource: webapps, graph: outside.yaml, namespaces: [team-b], clusterScopedChildren: true`)
	for _, args := range [][]string{{"validate", "--config", cfg}, {"validate", "--config", cfg, "--kubeconfig", kc}} {
		out, code := resyncd(t, args...)
		for _, want := range []string{
			"outside.yaml:30: resources[reader] (ClusterRole): ClusterRole is cluster-scoped, and webapps.v1alpha1.example.resyncd.io does not allow cluster-scoped children: every one would be refused; set clusterScopedChildren: true on resources[0]",
			"add it to childNamespaces of resources[0], or remove metadata.namespace",
			"add it to childNamespaces of resources[1], or remove metadata.namespace",
		} {
			if code != 1 || !strings.Contains(out, want) {
				t.Errorf("%v: exit %d, want 1 and %q in the output:\n%s", args, code, want, out)
			}
		}
	}
}

// TestValidatePlacementsDiscovery: against the API server, validate says
// where the templates place their children as the daemon decides it, from
// discovery: a template of a cluster-scoped custom kind is listed as
// cluster-scoped (offline, a custom kind is taken as namespaced), and
// refused without clusterScopedChildren.
func TestValidatePlacementsDiscovery(t *testing.T) {
	t.Parallel()
	fixture.InstallWebApps(t, env(t).Config)
	dyn := dynamic.NewForConfigOrDie(env(t).Config)
	establish(t, dyn, decode(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: tenants.placement.resyncd.io}
spec:
  group: placement.resyncd.io
  scope: Cluster
  names: {plural: tenants, singular: tenant, kind: Tenant, listKind: TenantList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`))
	disc := discovery.NewDiscoveryClientForConfigOrDie(env(t).Config)
	fixture.Eventually(t, "the OpenAPI schema of Tenant published", 30*time.Second, func() bool {
		paths, err := disc.OpenAPIV3().Paths()
		_, ok := paths["apis/placement.resyncd.io/v1"]
		return err == nil && ok
	})
	body := `apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: tenant}
spec:
  resources:
    - id: tenant
      template:
        apiVersion: placement.resyncd.io/v1
        kind: Tenant
        metadata: {name: "${schema.metadata.namespace}-${schema.metadata.name}"}
`
	cfg, kc := placementFiles(t, body, `, clusterScopedChildren: true`)
	want := "outside.yaml:6: resources[tenant] (Tenant): cluster-scoped: allowed (clusterScopedChildren)"
	if out, code := resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc); code != 0 || !strings.Contains(out, want) || strings.Contains(out, "every child in its parent's namespace") {
		t.Errorf("allowed: exit %d, want 0 and %q in the output:\n%s", code, want, out)
	}
	if out, code := resyncd(t, "validate", "--config", cfg); code != 0 || !strings.Contains(out, "outside.yaml: every child in its parent's namespace") {
		t.Errorf("offline: exit %d, want 0 and the Tenant taken as namespaced:\n%s", code, out)
	}
	cfg, kc = placementFiles(t, body, "")
	want = "outside.yaml:6: resources[tenant] (Tenant): Tenant is cluster-scoped, and webapps.v1alpha1.example.resyncd.io does not allow cluster-scoped children"
	if out, code := resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc); code != 1 || !strings.Contains(out, want) {
		t.Errorf("refused: exit %d, want 1 and %q in the output:\n%s", code, want, out)
	}
}
