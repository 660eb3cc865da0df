package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestPruneOrder: prunes go in the reverse of where the parent last
// rendered each child when that is known of all, else in the reverse of
// their kinds' order; then by name.
func TestPruneOrder(t *testing.T) {
	t.Parallel()
	cms, secrets := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	rs := &resourceState{kindOrder: map[schema.GroupVersionResource]int{cms: 0, secrets: 1}}
	prune := func(gvr schema.GroupVersionResource, kind, name string, position int32) *op {
		return &op{kind: OpDelete, gvr: gvr, key: childKey{Kind: kind, Namespace: "x", Name: name}, live: &liveChild{position: position}}
	}
	order := func(prunes []*op) []string {
		rs.pruneOrder(prunes)
		var out []string
		for _, o := range prunes {
			out = append(out, o.key.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		prunes []*op
		want   []string
	}{
		{"positions known", []*op{prune(cms, "ConfigMap", "base", 1), prune(secrets, "Secret", "token", 2), prune(cms, "ConfigMap", "summary", 3)},
			[]string{"summary", "token", "base"}},
		{"one position unknown: by kind, then name", []*op{prune(cms, "ConfigMap", "summary", 3), prune(cms, "ConfigMap", "base", 0), prune(secrets, "Secret", "token", 2)},
			[]string{"token", "base", "summary"}},
		{"two parents' orphans keep each one's order", []*op{prune(cms, "ConfigMap", "a-base", 1), prune(cms, "ConfigMap", "b-base", 1),
			prune(cms, "ConfigMap", "a-summary", 3), prune(secrets, "Secret", "b-token", 2)},
			[]string{"a-summary", "b-token", "a-base", "b-base"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, order(tc.prunes)); diff != "" {
				t.Errorf("prune order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPruneOrderOnServer: a deleted parent's children are deleted in the
// reverse of the graph's apply order — the ConfigMap that names the
// Secret, the Secret, the ConfigMap it reads — not by kind.
func TestPruneOrderOnServer(t *testing.T) {
	t.Parallel()
	ns := "prune-order"
	h := graphHarness(t, ns, "../testdata/graphs/prune-order.yaml")
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx"})
	for range 4 {
		h.sync()
	}
	h.mustGet(configMaps, ns, "shop-summary")
	if err := h.dyn.Resource(fixture.WebApps).Namespace(ns).Delete(t.Context(), "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.log.reset()
	h.sync()
	deletes := deleted(h.log.reset())
	if want := []string{"configmaps/shop-summary", "secrets/shop-token", "configmaps/shop-base"}; !cmp.Equal(want, deletes) {
		t.Errorf("deletes after the parent was deleted = %v, want %v", deletes, want)
	}
}
