package graph

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/resyncd/resyncd/desired"
)

// TestRGDFormsRenderAlike: the RGD forms of flat.yaml and chain.yaml
// render, for the same parent, the same children as the graph files, each
// pass over what the one before made (a child of the chain waits for the
// one it reads), until nothing more is rendered.
func TestRGDFormsRenderAlike(t *testing.T) {
	for _, name := range []string{"flat", "chain"} {
		file, err := Load("../../testdata/graphs/"+name+".yaml", Options{})
		if err != nil {
			t.Fatal(err)
		}
		rgd, err := Load("../../testdata/graphs/"+name+"-rgd.yaml", Options{})
		if err != nil {
			t.Fatal(err)
		}
		spec := `"spec": {"image": "registry.example/web:1.2", "replicas": 3}`
		asFile := decode(t, []byte(`{"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
			"metadata": {"name": "shop", "namespace": "team", "uid": "u-1"}, `+spec+`}`))
		asRGD := decode(t, []byte(`{"apiVersion": "kro.run/v1alpha1", "kind": "WebApp`+map[string]string{"flat": "Flat", "chain": "Chain"}[name]+`",
			"metadata": {"name": "shop", "namespace": "team", "uid": "u-1"}, `+spec+`}`))
		rgd.Default(asRGD)
		want, got := converge(t, file, asFile), converge(t, rgd, asRGD)
		if len(want) != 4 {
			t.Fatalf("%s.yaml renders %d children, want 4", name, len(want))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: children differ (-graph file +RGD):\n%s", name, diff)
		}
	}
}

// converge renders parent with r again and again, each time with what
// the render before made as live (a UID and a cluster IP given, as the API
// server would), until the number of children stays; it returns them.
func converge(t *testing.T, r *Renderer, parent *unstructured.Unstructured) []map[string]any {
	t.Helper()
	var live []desired.Child
	var out []map[string]any
	for range 6 {
		g, err := r.Render(parent, live)
		if err != nil {
			t.Fatal(err)
		}
		if out != nil && len(g.Children) == len(out) {
			break
		}
		out, live = nil, nil
		for _, c := range g.Children {
			out = append(out, c.DeepCopy().Object)
			obj := c.DeepCopy()
			obj.SetUID(types.UID("uid-" + obj.GetName()))
			if obj.GetKind() == "Service" {
				_ = unstructured.SetNestedField(obj.Object, "10.96.0.10", "spec", "clusterIP")
			}
			live = append(live, desired.Child{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: obj.Object})
		}
	}
	return out
}
