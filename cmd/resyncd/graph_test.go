package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/resyncd/resyncd/internal/fixture"
)

// graphFiles writes a configuration watching WebApps with the graph body
// and a kubeconfig for the test API server; it returns the configuration
// and the kubeconfig.
func graphFiles(t *testing.T, body, cel string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "webapp.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(cel+`resources:
  - {group: example.resyncd.io, version: v1alpha1, resource: webapps, graph: webapp.yaml}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, kc
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestValidateGraphs: offline, validate finds a cycle; against the API
// server it finds a string where the Deployment's schema wants an integer,
// and an expression whose estimated cost is over the limit, each with the
// graph file's line and the expression.
func TestValidateGraphs(t *testing.T) {
	t.Parallel()
	fixture.InstallWebApps(t, env(t).Config)
	webapp := readFile(t, "../../docs/examples/webapp.yaml")

	cfg, _ := graphFiles(t, readFile(t, "../../testdata/graphs/invalid-cycle.yaml"), "")
	out, code := resyncd(t, "validate", "--config", cfg)
	if code != 1 || !strings.Contains(out, "webapp.yaml:6: resources[config]: is part of a cycle of references: config → deployment → config") {
		t.Errorf("cycle: exit %d, output:\n%s", code, out)
	}

	cfg, kc := graphFiles(t, webapp, "")
	out, code = resyncd(t, "validate", "--config", cfg)
	if code != 0 || !strings.Contains(out, "valid, 1 watched resources (graphs checked offline") {
		t.Errorf("offline: exit %d, output:\n%s", code, out)
	}
	out, code = resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc)
	if code != 0 || !strings.Contains(out, "graphs type-checked against its schemas") {
		t.Errorf("typed: exit %d, output:\n%s", code, out)
	}
	cfg, kc = graphFiles(t, readFile(t, "../../testdata/graphs/httpservice.yaml"), "")
	cfgText := strings.Replace(readFile(t, cfg), "{group: example.resyncd.io, version: v1alpha1, resource: webapps", "{group: resyncd.io, version: v1alpha1, resource: httpservices", 1)
	if err := os.WriteFile(cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code = resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc); code != 0 {
		t.Errorf("the HttpService graph, typed: exit %d, output:\n%s", code, out)
	}

	wrong := strings.Replace(webapp, "replicas: ${schema.spec.replicas}", "replicas: ${schema.spec.image}", 1)
	cfg, kc = graphFiles(t, wrong, "")
	if out, code = resyncd(t, "validate", "--config", cfg); code != 0 {
		t.Errorf("a type error is not found offline, where every value is dynamic: exit %d, output:\n%s", code, out)
	}
	out, code = resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc)
	want := "webapp.yaml:29: resources[deployment].template.spec.replicas: ${schema.spec.image} is of type string, but Deployment's spec.replicas is int"
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("type error: exit %d, output:\n%s\nwant: %s", code, out, want)
	}

	// A status field the parent's CRD does not declare would be dropped by
	// the API server, and the status written every pass.
	cfg, kc = graphFiles(t, strings.Replace(webapp, "    configMap: ${config.metadata.name}", "    configMap: ${config.metadata.name}\n    colour: blue", 1), "")
	out, code = resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc)
	if code != 1 || !strings.Contains(out, "spec.status.colour: is not a field of WebApp's status in its CustomResourceDefinition") {
		t.Errorf("undeclared status field: exit %d, output:\n%s", code, out)
	}

	// A cluster-scoped kind the resource does not allow is refused against
	// the API server, as the chart refuses it (TestValidatePlacements has
	// the rest).
	cfg, kc = graphFiles(t, readFile(t, "../../testdata/graphs/cluster-scoped.yaml"), "")
	out, code = resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc)
	if code != 1 || !strings.Contains(out, "webapp.yaml:32: resources[role] (ClusterRole): ClusterRole is cluster-scoped, and webapps.v1alpha1.example.resyncd.io does not allow cluster-scoped children") {
		t.Errorf("cluster-scoped kinds: exit %d, output:\n%s", code, out)
	}

	cfg, kc = graphFiles(t, readFile(t, "../../testdata/graphs/costbomb.yaml"), "cel: {maxEstimatedCost: 100000}\n")
	out, code = resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc)
	if code != 1 || !strings.Contains(out, "exceeds the limit of 100000 (cel.maxEstimatedCost)") {
		t.Errorf("cost estimate: exit %d, output:\n%s", code, out)
	}
}

// TestRender prints a parent's children offline, the ones that wait for
// a live child named in a comment.
func TestRender(t *testing.T) {
	t.Parallel()
	cfg, _ := graphFiles(t, readFile(t, "../../docs/examples/webapp.yaml"), "")
	parent := filepath.Join(t.TempDir(), "parent.yaml")
	if err := os.WriteFile(parent, []byte(`apiVersion: example.resyncd.io/v1alpha1
kind: WebApp
metadata: {name: shop, namespace: team, uid: 0b5c2e4a-1111-4222-8333-944455556666}
spec: {image: nginx, replicas: 2, port: 8080, expose: true, config: [{name: A, value: "1"}]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := resyncd(t, "render", "--config", cfg, "--parent", parent)
	for _, want := range []string{
		"# WebApp team/shop: 3 children\n",
		"kind: ConfigMap\n", "  A: \"1\"\n", "kind: Service\n", "resyncd.io/parent-kind: WebApp.example.resyncd.io\n",
		// Rendered from the ConfigMap as rendered, as one pass writes it.
		"kind: Deployment\n", "            name: shop-config\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, "# waiting") {
		t.Errorf("a child waits for what is known offline:\n%s", out)
	}

	// A chain whose last child reads what only the API server sets: the
	// first three are rendered, the last named as waiting for it.
	cfg, _ = graphFiles(t, readFile(t, "../../testdata/graphs/chain.yaml"), "")
	out, code = resyncd(t, "render", "--config", cfg, "--parent", parent)
	want := "# WebApp team/shop: 3 children\n# waiting: address waits for service: resources[address].template.data.clusterIP: ${service.spec.clusterIP}: no such key: clusterIP\n"
	if code != 0 || !strings.HasPrefix(out, want) || strings.Count(out, "\nkind: ") != 3 || !strings.Contains(out, "kind: Service\n") {
		t.Errorf("chain: exit %d, want %q and the ConfigMap, Deployment and Service:\n%s", code, want, out)
	}

	// A kro RGD, and a parent written the kro way: its defaults left out,
	// applied from spec.schema before rendering.
	cfg, _ = graphFiles(t, readFile(t, "../../testdata/kro/storefront.yaml"), "")
	text := strings.Replace(readFile(t, cfg), "{group: example.resyncd.io, version: v1alpha1, resource: webapps", "{group: kro.run, version: v1alpha1, resource: storefronts", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(parent, []byte(`apiVersion: kro.run/v1alpha1
kind: Storefront
metadata: {name: shop, namespace: team, uid: 0b5c2e4a-1111-4222-8333-944455556666}
spec: {name: shop}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = resyncd(t, "render", "--config", cfg, "--parent", parent)
	for _, want := range []string{"# Storefront team/shop: 2 children\n", "replicas: 2\n", "image: nginx:1.27\n", "kind: Service\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("kro RGD: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}

	// A collection: an item for each region and tier, and for each backup
	// shard; the summary, which lists the items' objects, rendered from
	// them as rendered.
	cfg, _ = graphFiles(t, readFile(t, "../../testdata/kro/fan-out.yaml"), "")
	text = strings.Replace(readFile(t, cfg), "{group: example.resyncd.io, version: v1alpha1, resource: webapps", "{group: kro.run, version: v1alpha1, resource: fanouts", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	instance := strings.Replace(readFile(t, "../../testdata/kro/instances/fan-out.yaml"), "  name: demo\n", "  name: demo\n  namespace: team\n", 1)
	if err := os.WriteFile(parent, []byte(instance), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = resyncd(t, "render", "--config", cfg, "--parent", parent)
	for _, want := range []string{
		"# FanOut team/demo: 7 children\n", "name: demo-summary\n",
		"name: demo-eu-web\n", "name: demo-eu-api\n", "name: demo-us-web\n", "name: demo-us-api\n", "name: demo-backup-0\n", "name: demo-backup-1\n",
		"  image: nginx:1.27\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("collection: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
}

// installWebAppsAs installs WebApp's CRD under group, as a team would its
// own kind, without waiting for its schema; it returns a configuration
// watching it with the example graph, and the kubeconfig.
func installWebAppsAs(t *testing.T, group string) (string, string) {
	t.Helper()
	crd := strings.ReplaceAll(readFile(t, "../../testdata/crds/example.resyncd.io_webapps.yaml"), "example.resyncd.io", group)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crd.yaml"), []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(env(t).Config, envtest.CRDInstallOptions{Paths: []string{dir}}); err != nil {
		t.Fatal(err)
	}
	cfg, kc := graphFiles(t, readFile(t, "../../docs/examples/webapp.yaml"), "")
	text := strings.Replace(readFile(t, cfg), "group: example.resyncd.io", "group: "+group, 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, kc
}

// TestValidateWaitsForSchema: right after a kind's CRD is installed the
// API server serves it but has not published its schema yet; a start then
// waits for the schema rather than failing.
func TestValidateWaitsForSchema(t *testing.T) {
	t.Parallel()
	cfg, kc := installWebAppsAs(t, "late.resyncd.io")
	paths, err := discovery.NewDiscoveryClientForConfigOrDie(env(t).Config).OpenAPIV3().Paths()
	if _, published := paths["apis/late.resyncd.io/v1alpha1"]; err == nil && published {
		t.Skip("the schema was published at once: nothing to wait for")
	}
	if out, code := resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc); code != 0 {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

// TestValidateParentKindTooLong: a kind whose name and group do not fit
// the resyncd.io/parent-kind label is refused at start, with the key.
func TestValidateParentKindTooLong(t *testing.T) {
	t.Parallel()
	group := "a-group-long-enough-that-no-label-value-can-hold-it.example.resyncd.io"
	cfg, kc := installWebAppsAs(t, group)
	out, code := resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc)
	want := "config.yaml:2: resources[0]: webapps.v1alpha1." + group + " cannot be a parent kind: its children's label resyncd.io/parent-kind=WebApp." +
		group + " would have 77 characters, a label value at most 63"
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("exit %d, output:\n%s\nwant: %s", code, out, want)
	}
}

// TestRenderDraws: render --format dot|mermaid draws the graph file of
// --graph with no configuration; a graph that does not load is not drawn
// but refused with its problems, and the flags that do not go together
// say so.
func TestRenderDraws(t *testing.T) {
	t.Parallel()
	out, code := resyncd(t, "render", "--graph", "../../docs/examples/webapp.yaml", "--format", "mermaid", "--config", "/nonexistent.yaml")
	if code != 0 || !strings.HasPrefix(out, "flowchart LR\n") || !strings.Contains(out, " --> ") {
		t.Errorf("mermaid: exit %d:\n%s", code, out)
	}
	out, code = resyncd(t, "render", "--graph", "../../docs/examples/webapp.yaml", "--format", "dot")
	if code != 0 || !strings.HasPrefix(out, `digraph "webapp" {`) {
		t.Errorf("dot: exit %d:\n%s", code, out)
	}
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(broken, []byte("apiVersion: resyncd.io/v1alpha1\nkind: Graph\nmetadata: {name: b}\nspec:\n  resources:\n"+
		"    - id: a\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"${nosuch.x}\"}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--graph", broken, "--format", "dot"}, "undeclared reference to 'nosuch'"},
		{[]string{"--format", "dot"}, "--format dot draws a graph file: name it with --graph"},
		{[]string{"--graph", broken}, "--graph is drawn with --format dot or mermaid"},
		{[]string{"--graph", broken, "--format", "svg"}, `--format "svg": yaml (the children of parents), dot or mermaid (the graph of --graph)`},
	} {
		out, code := resyncd(t, append([]string{"render"}, tt.args...)...)
		if code != 1 || !strings.Contains(out, tt.want) {
			t.Errorf("render %v: exit %d, want 1 and %q:\n%s", tt.args, code, tt.want, out)
		}
	}
}
