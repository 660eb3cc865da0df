package graph

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resyncd/resyncd/desired"
)

const orderRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: gated
spec:
  schema:
    apiVersion: v1alpha1
    kind: Gated
    spec:
      flag: string | default="on"
  resources:
    - id: after
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-after
        data:
          from: ${gate.metadata.name}
    - id: free
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-free
    - id: gate
      readyWhen:
        - ${gate.data.ready == "yes"}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-gate
        data:
          flag: ${schema.spec.flag}
`

// TestKroOrder: resources are ordered as kro orders them, of those whose
// references are placed the one declared first (free, gate, after, where
// a depth-first order would give gate, after, free); served as kro, a
// resource is rendered only once those it reads are ready by their
// readyWhen, while a graph file renders it once they exist.
func TestKroOrder(t *testing.T) {
	var ids []string
	r, err := Parse("gated.yaml", []byte(orderRGD), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range r.Picture().Nodes {
		ids = append(ids, n.ID)
	}
	if diff := cmp.Diff([]string{"free", "gate", "after"}, ids); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	parent := decode(t, []byte(`{"apiVersion": "kro.run/v1alpha1", "kind": "Gated",
		"metadata": {"name": "g", "namespace": "team", "uid": "u-1"}, "spec": {"flag": "on"}}`))
	gate := func(ready string) []desired.Child {
		return []desired.Child{{Kind: "ConfigMap", Namespace: "team", Name: "g-gate", Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "g-gate", "namespace": "team"},
			"data": map[string]any{"flag": "on", "ready": ready}}}}
	}
	rendered := func(r *Renderer, live []desired.Child) ([]string, []string) {
		t.Helper()
		g, err := r.Render(parent, live)
		if err != nil {
			t.Fatal(err)
		}
		var waits []string
		for _, w := range g.Waiting {
			waits = append(waits, w.ID+" "+w.Reason)
		}
		return kinds(g), waits
	}
	file, err := Parse("gated.yaml", []byte(orderRGD), Options{})
	if err != nil {
		t.Fatal(err)
	}
	kro, err := Parse("gated.yaml", []byte(orderRGD), Options{})
	if err != nil {
		t.Fatal(err)
	}
	kro.ServeAsKro("gated", "rgd-uid")

	children, waits := rendered(file, gate("no"))
	if !slices.Contains(children, "ConfigMap/g-after") || len(waits) != 0 {
		t.Errorf("graph file, gate not ready: children %v, waiting %v; want g-after rendered, nothing waiting", children, waits)
	}
	children, waits = rendered(kro, gate("no"))
	if slices.Contains(children, "ConfigMap/g-after") || !slices.Equal(waits, []string{"after WaitingForGate"}) {
		t.Errorf("served as kro, gate not ready: children %v, waiting %v; want g-after left to wait for gate", children, waits)
	}
	children, waits = rendered(kro, gate("yes"))
	if !slices.Contains(children, "ConfigMap/g-after") || len(waits) != 0 {
		t.Errorf("served as kro, gate ready: children %v, waiting %v; want g-after rendered", children, waits)
	}
}
