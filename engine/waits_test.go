package engine

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
)

// TestWaitingChildIsKept: a child outside its parent's namespace, whose
// template gives its namespace before its name, survives a pass where it
// waits for another child (deleted by hand, made again in that pass): the
// same object, not pruned and made again.
func TestWaitingChildIsKept(t *testing.T) {
	t.Parallel()
	ns, other := "waits-tenant", "waits-shared"
	h := placedHarness(t, ns, "../testdata/graphs/waits-outside.yaml", func(r *config.Resource) { r.ChildNamespaces = []string{other} })
	h.namespace(ns)
	h.namespace(other)
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx", "tags": []any{other}})
	h.sync() // config; web waits for it
	h.sync() // web
	web := h.mustGet(configMaps, other, "shop-web")

	if err := h.cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), "shop-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep := h.sync(); rep.Deleted != 0 || rep.Created != 1 {
		t.Errorf("the pass where web waits: deleted %d, created %d; want 0, 1 (config made again)", rep.Deleted, rep.Created)
	}
	got, err := h.get(configMaps, other, "shop-web")
	if err != nil || got.GetUID() != web.GetUID() {
		t.Fatalf("web after a pass where it waited: %v; want the same object (uid %s)", err, web.GetUID())
	}
	h.sync()
	h.log.reset()
	if rep := h.sync(); rep.Writes() != 0 {
		t.Errorf("the pass after convergence wrote %v", writes(h.log.reset()))
	}
}

// TestWaits: a waiting child keeps from pruning only the children it may
// be: of its group and kind, of its name and namespace where known.
func TestWaits(t *testing.T) {
	t.Parallel()
	web := childKey{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "web"}
	for _, tc := range []struct {
		name string
		w    desired.Waiting
		want bool
	}{
		{"itself", desired.Waiting{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "web"}, true},
		{"name and namespace unknown", desired.Waiting{Group: "apps", Kind: "Deployment"}, true},
		{"namespace unknown", desired.Waiting{Group: "apps", Kind: "Deployment", Name: "web"}, true},
		{"another name", desired.Waiting{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "api"}, false},
		{"the name in another namespace", desired.Waiting{Group: "apps", Kind: "Deployment", Namespace: "team-b", Name: "web"}, false},
		{"the namespace as its name", desired.Waiting{Group: "apps", Kind: "Deployment", Name: "team-a"}, false},
		{"another kind", desired.Waiting{Group: "apps", Kind: "StatefulSet", Namespace: "team-a", Name: "web"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &job{extra: &jobExtra{waiting: []desired.Waiting{tc.w}}}
			if got := j.waits(web); got != tc.want {
				t.Errorf("waits(%s) with %+v = %v, want %v", web, tc.w, got, tc.want)
			}
		})
	}
}
