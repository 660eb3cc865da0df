package graph

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// loadOffline loads the graph at path typed by the parent kind's CRD its
// spec.schema makes, or crdPath gives, as `resyncd validate` does with no
// cluster.
func loadOffline(t *testing.T, path, crdPath string) (*Renderer, error) {
	t.Helper()
	p, err := ReadParentCRD(path, crdPath)
	if err != nil {
		t.Fatal(err)
	}
	if p == nil {
		t.Fatalf("%s: no parent kind", path)
	}
	opts, err := p.Options("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return Load(path, opts)
}

func writeGraph(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "graph.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOfflineTypes: without a cluster, the parent's CRD — made from
// spec.schema, or the team's file — types every expression as far as the
// parent decides: a type error over the parent's fields is refused with
// the file and line, the children stay dynamic, the parent's metadata is
// ObjectMeta, and a status field that reads a child is declared.
func TestOfflineTypes(t *testing.T) {
	kro := `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: shop}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Shop
    spec:
      replicas: integer | default=2
      image: string | default="nginx"
    status:
      ready: ${deployment.status.?readyReplicas.orValue(0)}
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${schema.metadata.name}", labels: "${schema.metadata.labels}"}
        spec:
          replicas: REPLICAS
          x: ${deployment2.spec.anything.at.all}
    - id: deployment2
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${schema.metadata.name + '-2'}"}
`
	tests := []struct {
		name, replicas, want string
	}{
		{"well typed", "${schema.spec.replicas}", ""},
		{"int plus string", "${schema.spec.replicas + schema.spec.image}",
			":20: resources[deployment].template.spec.replicas: ${schema.spec.replicas + schema.spec.image}: at 1:22: found no matching overload for '_+_' applied to '(int, string)'"},
		{"no such field", "${schema.spec.replica}",
			":20: resources[deployment].template.spec.replicas: ${schema.spec.replica}: at 1:12: undefined field 'replica'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeGraph(t, strings.Replace(kro, "REPLICAS", tt.replicas, 1))
			if _, err := Load(path, Options{}); err != nil {
				t.Fatalf("untyped: %v", err)
			}
			_, err := loadOffline(t, path, "")
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), path)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// The same graph without spec.schema, beside the team's own CRD file.
	webapp, err := os.ReadFile("../../docs/examples/webapp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const crd = "../../testdata/crds/example.resyncd.io_webapps.yaml"
	path := writeGraph(t, string(webapp))
	if _, err := loadOffline(t, path, crd); err != nil {
		t.Errorf("the WebApp graph against its CRD file: %v", err)
	}
	path = writeGraph(t, strings.Replace(string(webapp), "replicas: ${schema.spec.replicas}", "replicas: ${schema.spec.replicas + schema.spec.image}", 1))
	_, err = loadOffline(t, path, crd)
	want := ":29: resources[deployment].template.spec.replicas: ${schema.spec.replicas + schema.spec.image}: at 1:22: found no matching overload for '_+_' applied to '(int, string)'"
	if err == nil || strings.TrimPrefix(err.Error(), path) != want {
		t.Errorf("a type error against the CRD file: %v\nwant %s%s", err, path, want)
	}
}

// TestParentCRD: the parent kind's resource comes from spec.schema as kro
// derives it, or from the CRD file; a graph with neither has none.
func TestParentCRD(t *testing.T) {
	p, err := ReadParentCRD("../../testdata/kro/storefront.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	gvr, ok := p.GroupVersionResource("")
	if want := (schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "storefronts"}); !ok || gvr != want || !p.FromSchema ||
		p.Where != "../../testdata/kro/storefront.yaml:9" {
		t.Errorf("storefront: %v %v, from schema %v, where %s", gvr, ok, p.FromSchema, p.Where)
	}
	if _, ok := p.GroupVersionResource("v2"); ok {
		t.Error("a version the CRD does not serve")
	}
	const crd = "../../testdata/crds/example.resyncd.io_webapps.yaml"
	p, err = ReadParentCRD("../../docs/examples/webapp.yaml", crd)
	if err != nil {
		t.Fatal(err)
	}
	gvr, _ = p.GroupVersionResource("v1alpha1")
	if want := (schema.GroupVersionResource{Group: "example.resyncd.io", Version: "v1alpha1", Resource: "webapps"}); gvr != want || p.FromSchema || p.Where != crd {
		t.Errorf("webapp: %v, from schema %v, where %s", gvr, p.FromSchema, p.Where)
	}
	if p, err := ReadParentCRD("../../docs/examples/webapp.yaml", ""); p != nil || err != nil {
		t.Errorf("no spec.schema, no crd file: %v, %v", p, err)
	}
	bad := writeGraph(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	if _, err := ReadCRD(bad); err == nil || !strings.Contains(err.Error(), bad+": apiVersion, kind: are \"v1\", \"ConfigMap\", want apiextensions.k8s.io/v1 CustomResourceDefinition") {
		t.Errorf("not a CRD: %v", err)
	}
}

// TestDefaultsFromCRDFile: a graph without spec.schema, beside the team's
// CRD file, applies that file's defaults to a parent before rendering.
func TestDefaultsFromCRDFile(t *testing.T) {
	r, err := loadOffline(t, "../../docs/examples/webapp.yaml", "../../testdata/crds/example.resyncd.io_webapps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": "shop", "namespace": "team"}, "spec": map[string]any{"image": "nginx"}}}
	r.Default(parent)
	got, _, _ := unstructured.NestedFieldNoCopy(parent.Object, "spec")
	want := map[string]any{"image": "nginx", "replicas": int64(1), "port": int64(8080), "expose": false, "config": []any{}, "tags": []any{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec defaulted (-want +got):\n%s", diff)
	}
}
