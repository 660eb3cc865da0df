package engine

import (
	"strings"
	"testing"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/fixture"
)

// TestRefusedChildPrunesNothing: a tenant's spec that moves a child to a
// namespace the watched resource does not allow deletes nothing, as an
// invalid spec would not: neither the child at its earlier, allowed place
// nor the ClusterRole that refers to it (and waits); the parent is
// Stalled; the spec put right, the next pass deletes and creates nothing.
func TestRefusedChildPrunesNothing(t *testing.T) {
	ns, allowed, typo := "refused-tenant", "refused-allowed", "refused-typo"
	h := outsideHarness(t, ns, func(r *config.Resource) { r.ChildNamespaces = []string{allowed}; r.ClusterScopedChildren = true })
	h.namespace(ns)
	h.namespace(allowed)
	h.namespace(typo)
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx", "expose": true, "tags": []any{allowed}})
	h.sync() // home and shared; reader waits for shared
	h.sync() // reader
	shared := h.mustGet(configMaps, allowed, ns+"-shop")
	reader := h.mustGet(clusterRoles, "", ns+"-shop-reader")

	h.mergePatch(fixture.WebApps, ns, "shop", map[string]any{"spec": map[string]any{"tags": []any{typo}}})
	for pass := 1; pass <= 2; pass++ {
		if rep := h.sync(); rep.Deleted+rep.Released != 0 {
			t.Errorf("pass %d with the child refused: deleted %d, released %d; want none", pass, rep.Deleted, rep.Released)
		}
	}
	if got, err := h.get(configMaps, allowed, ns+"-shop"); err != nil || got.GetUID() != shared.GetUID() {
		t.Errorf("the shared ConfigMap at its allowed place: %v; want it kept", err)
	}
	if got, err := h.get(clusterRoles, "", ns+"-shop-reader"); err != nil || got.GetUID() != reader.GetUID() {
		t.Errorf("the ClusterRole that refers to it: %v; want it kept", err)
	}
	if got := h.list(configMaps, typo); len(got) != 0 {
		t.Errorf("ConfigMaps in %s: %v, want none", typo, names(got))
	}
	s := condition(t, h.mustGet(fixture.WebApps, ns, "shop"), "Stalled")
	if s["status"] != "True" || s["reason"] != ReasonNamespaceNotAllowed || !strings.Contains(str(s["message"]), "ConfigMap/"+typo+"/"+ns+"-shop") {
		t.Errorf("shop Stalled = %v, want %s naming the child", s, ReasonNamespaceNotAllowed)
	}

	h.mergePatch(fixture.WebApps, ns, "shop", map[string]any{"spec": map[string]any{"tags": []any{allowed}}})
	if rep := h.sync(); rep.Deleted+rep.Created != 0 {
		t.Errorf("the pass after the spec was put right: deleted %d, created %d; want none", rep.Deleted, rep.Created)
	}
	if s := condition(t, h.mustGet(fixture.WebApps, ns, "shop"), "Stalled"); s["status"] != "False" {
		t.Errorf("shop Stalled after the spec was put right = %v", s)
	}
}
