package engine

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestTakenOnCreateHoldsPrunes: a name found taken only as the child is
// created (a bare object the LIST does not select) holds, in that very
// job, the pruning of what the parent no longer renders, as one the plan
// finds does: the HorizontalPodAutoscaler outlives autoscaling switched
// off while the Service's name is someone else's.
func TestTakenOnCreateHoldsPrunes(t *testing.T) {
	ns := "taken-holds"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080),
		"resources":   map[string]any{"requests": map[string]any{"cpu": "100m"}},
		"autoscaling": map[string]any{"minReplicas": int64(1), "maxReplicas": int64(3)}})
	h.sync()
	hpa := h.mustGet(hpas, ns, "web")
	if err := h.cs.CoreV1().Services(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := h.cs.CoreV1().Services(ns).Create(t.Context(), theirs, metav1.CreateOptions{FieldManager: "team-x"}); err != nil {
		t.Fatal(err)
	}
	h.mergePatch(httpServices, ns, "web", map[string]any{"spec": map[string]any{"autoscaling": nil}})
	for pass := 1; pass <= 2; pass++ {
		h.sync()
		if got, err := h.get(hpas, ns, "web"); err != nil || got.GetUID() != hpa.GetUID() {
			t.Fatalf("pass %d: the HorizontalPodAutoscaler while the Service's name is taken: %v; want it kept", pass, err)
		}
	}
	if s := condition(t, h.mustGet(httpServices, ns, "web"), "Stalled"); s["status"] != "True" || s["reason"] != ReasonNameTaken {
		t.Errorf("Stalled = %v, want NameTaken", s)
	}
	if err := h.cs.CoreV1().Services(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync()
	if _, err := h.get(hpas, ns, "web"); !apierrors.IsNotFound(err) {
		t.Errorf("the HorizontalPodAutoscaler once the name is free: %v, want deleted", err)
	}
}
