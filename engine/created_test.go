package engine

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/internal/fixture"
)

// TestCreatedOutsideMarker: a child resyncd creates outside its parent's
// namespace carries resyncd.io/created, kept by every later apply, and is
// deleted after its parent; one handed over (resyncd.io/adopt) never gets
// it, and once the adopt annotation is removed and its parent deleted it
// is released, not deleted; one whose marker is removed by hand is
// released too.
func TestCreatedOutsideMarker(t *testing.T) {
	t.Parallel()
	ns, other := "created-tenant", "created-shared"
	h := outsideHarness(t, ns, func(r *config.Resource) { r.ChildNamespaces = []string{other} })
	h.namespace(ns)
	h.namespace(other)
	handed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ns + "-blog", Namespace: other,
		Annotations: map[string]string{desired.AnnotationAdopt: "WebApp.example.resyncd.io/" + ns + "/blog"}}, Data: map[string]string{"team": "platform"}}
	if _, err := h.cs.CoreV1().ConfigMaps(other).Create(t.Context(), handed, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"shop", "blog", "cart"} {
		h.createWebApp(ns, name, map[string]any{"image": "nginx", "tags": []any{other}})
	}
	h.sync()
	h.sync()
	for name, want := range map[string]string{"shop": desired.CreatedValue, "cart": desired.CreatedValue, "blog": ""} {
		u := h.mustGet(configMaps, other, ns+"-"+name)
		assertOutsideChild(t, u, ns, name)
		if got := u.GetAnnotations()[desired.AnnotationCreated]; got != want {
			t.Errorf("%s's shared ConfigMap: %s = %q, want %q", name, desired.AnnotationCreated, got, want)
		}
	}
	h.log.reset()
	if rep := h.sync(); rep.Writes() != 0 {
		t.Errorf("the pass after convergence wrote %v", writes(h.log.reset()))
	}

	// The team's annotation removed, cart's marker removed by hand.
	h.mergePatch(configMaps, other, ns+"-blog", map[string]any{"metadata": map[string]any{"annotations": map[string]any{desired.AnnotationAdopt: nil}}})
	h.mergePatch(configMaps, other, ns+"-cart", map[string]any{"metadata": map[string]any{"annotations": map[string]any{desired.AnnotationCreated: nil}}})
	h.sync()
	if got := h.mustGet(configMaps, other, ns+"-cart").GetAnnotations()[desired.AnnotationCreated]; got != "" {
		t.Errorf("cart's shared ConfigMap: the marker removed by hand was put back (%q)", got)
	}
	for _, name := range []string{"shop", "blog", "cart"} {
		if err := h.dyn.Resource(fixture.WebApps).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.sync()
	if _, err := h.get(configMaps, other, ns+"-shop"); !apierrors.IsNotFound(err) {
		t.Errorf("shop's shared ConfigMap after its parent was deleted: %v, want deleted", err)
	}
	for _, name := range []string{"blog", "cart"} {
		u, err := h.get(configMaps, other, ns+"-"+name)
		if err != nil {
			t.Errorf("%s's shared ConfigMap after its parent was deleted: %v, want it released, not deleted", name, err)
			continue
		}
		if l := u.GetLabels(); l[desired.LabelManagedBy] != "" || l[desired.LabelParentNamespace] != "" {
			t.Errorf("%s's shared ConfigMap: labels %v, want resyncd's removed", name, l)
		}
	}
}
