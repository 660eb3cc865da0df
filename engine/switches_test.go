package engine

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// annotate sets (or, with value "", removes) one annotation as an SRE would.
func (h *harness) annotate(gvr schema.GroupVersionResource, ns, name, key, value string) {
	h.t.Helper()
	v := any(value)
	if value == "" {
		v = nil
	}
	h.mergePatch(gvr, ns, name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
}

func (h *harness) mergePatch(gvr schema.GroupVersionResource, ns, name string, patch map[string]any) {
	h.t.Helper()
	body, err := json.Marshal(patch)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.dyn.Resource(gvr).Namespace(ns).Patch(h.t.Context(), name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "sre"}); err != nil {
		h.t.Fatalf("patch %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

// TestHeldChild: a Deployment with resyncd.io/reconcile: disabled is
// neither repaired nor pruned; its drift is counted and the parent's Ready
// condition names it. Without the annotation the next pass repairs it.
func TestHeldChild(t *testing.T) {
	t.Parallel()
	ns := "held"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.createParent(ns, "web", map[string]any{"image": "nginx:1", "port": int64(8080)})
	h.sync()
	h.annotate(deployments, ns, "web", "resyncd.io/reconcile", "disabled")
	forceApply(t, h, "incident", ns, "web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"held"},
		"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:hotfix"}]}}}}`)

	changed := h.engine.metrics.drift.WithLabelValues("local", hsvcResource, "Deployment", reasonChanged)
	before := testutil.ToFloat64(changed)
	for range 2 {
		h.log.reset()
		rep := h.sync()
		if w := requestsTo(writes(h.log.reset()), "deployments", "web"); len(w) != 0 {
			t.Errorf("held Deployment written: %v", w)
		}
		if rep.Drifted != 1 {
			t.Errorf("drifted = %d, want 1", rep.Drifted)
		}
	}
	if got := testutil.ToFloat64(changed) - before; got != 2 {
		t.Errorf("resyncd_drift_total{reason=changed} grew by %v over two passes, want 2", got)
	}
	if img := containerImage(t, h.mustGet(deployments, ns, "web")); img != "nginx:hotfix" {
		t.Errorf("held Deployment image = %q, want the hotfix kept", img)
	}
	r := condition(t, h.mustGet(httpServices, ns, "web"), "Ready")
	if r["status"] != "False" || r["reason"] != "ChildHeld" || !strings.Contains(str(r["message"]), "Deployment/held/web") ||
		!strings.Contains(str(r["message"]), "resyncd.io/reconcile") {
		t.Errorf("Ready = %v, want False/ChildHeld naming the Deployment and the annotation", r)
	}

	h.annotate(deployments, ns, "web", "resyncd.io/reconcile", "")
	rep := h.sync()
	if rep.Updated != 1 || containerImage(t, h.mustGet(deployments, ns, "web")) != "nginx:1" {
		t.Errorf("after the hold is lifted: updated %d, image %q; want 1, nginx:1", rep.Updated, containerImage(t, h.mustGet(deployments, ns, "web")))
	}

	// A held child outlives its parent: the orphan sweep leaves it.
	h.annotate(deployments, ns, "web", "resyncd.io/reconcile", "disabled")
	h.deleteParent(ns, "web")
	rep = h.sync()
	if _, err := h.get(deployments, ns, "web"); err != nil {
		t.Errorf("held Deployment of a deleted parent: %v, want it kept", err)
	}
	if _, err := h.get(services, ns, "web"); err == nil || rep.Deleted != 1 {
		t.Errorf("Service of the deleted parent: deleted %d, get error %v; want it pruned", rep.Deleted, err)
	}
}

// TestReconcileDisabledParent: resyncd.io/reconcile: disabled on a parent
// withholds its writes as spec.paused does, and the status says why.
func TestReconcileDisabledParent(t *testing.T) {
	t.Parallel()
	ns := "disabled-parent"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})
	h.annotate(httpServices, ns, "web", "resyncd.io/reconcile", "disabled")
	h.log.reset()
	rep := h.sync()
	if w := childWrites(h.log.reset()); len(w) != 0 || rep.Withheld != 2 {
		t.Errorf("child writes %v, withheld %d; want none, 2", w, rep.Withheld)
	}
	p := h.mustGet(httpServices, ns, "web")
	if r := condition(t, p, "Ready"); r["status"] != "False" || !strings.Contains(str(r["message"]), "resyncd.io/reconcile") {
		t.Errorf("Ready = %v, want False naming resyncd.io/reconcile", r)
	}
	if r := condition(t, p, "Reconciling"); r["reason"] != "ReconcileDisabled" {
		t.Errorf("Reconciling = %v, want reason ReconcileDisabled", r)
	}
	h.annotate(httpServices, ns, "web", "resyncd.io/reconcile", "")
	if rep := h.sync(); rep.Created != 2 {
		t.Errorf("created %d after the annotation is removed, want 2", rep.Created)
	}
}

// TestPruneDisabledReleases: a child with resyncd.io/prune: disabled that
// is no longer desired — the HorizontalPodAutoscaler after autoscaling is
// switched off, the children of a parent deleted with orphaning — is
// released: resyncd's labels, ownerReference and field ownership go, every
// value stays, and later passes leave it alone. A child with no controller
// ownerReference (orphaned, or adopted) is released without the
// annotation too: resyncd deletes only what carries its ownerReference.
func TestPruneDisabledReleases(t *testing.T) {
	t.Parallel()
	ns := "released"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.createParent(ns, "scaled", map[string]any{"image": "nginx", "port": int64(8080),
		"resources":   map[string]any{"requests": map[string]any{"cpu": "100m"}},
		"autoscaling": map[string]any{"minReplicas": int64(2), "maxReplicas": int64(5)}})
	h.createParent(ns, "orphaned", map[string]any{"image": "nginx", "port": int64(8080)})
	h.sync()

	h.annotate(hpas, ns, "scaled", "resyncd.io/prune", "disabled")
	h.mergePatch(httpServices, ns, "scaled", map[string]any{"spec": map[string]any{"autoscaling": nil}})
	// What the garbage collector does to the children of a parent deleted
	// with propagationPolicy Orphan; none runs here.
	h.annotate(deployments, ns, "orphaned", "resyncd.io/prune", "disabled")
	for _, gvr := range []schema.GroupVersionResource{deployments, services} {
		h.mergePatch(gvr, ns, "orphaned", map[string]any{"metadata": map[string]any{"ownerReferences": nil}})
	}
	h.deleteParent(ns, "orphaned")

	rep := h.sync()
	if rep.Released != 3 || rep.Deleted != 0 {
		t.Errorf("released %d, deleted %d; want 3 (the HPA, the orphaned Deployment and Service), 0", rep.Released, rep.Deleted)
	}
	released := map[string]*unstructured.Unstructured{"hpa": h.mustGet(hpas, ns, "scaled"), "deployment": h.mustGet(deployments, ns, "orphaned"),
		"service": h.mustGet(services, ns, "orphaned")}
	for what, u := range released {
		for _, l := range []string{"app.kubernetes.io/managed-by", "resyncd.io/parent", "resyncd.io/parent-kind"} {
			if _, ok := u.GetLabels()[l]; ok {
				t.Errorf("released %s keeps label %s", what, l)
			}
		}
		if refs := u.GetOwnerReferences(); len(refs) != 0 {
			t.Errorf("released %s keeps ownerReferences %v", what, refs)
		}
		for _, mf := range u.GetManagedFields() {
			if mf.Manager == "resyncd" {
				t.Errorf("released %s: resyncd still manages fields: %s", what, mf.FieldsV1.GetRawString())
			}
		}
	}
	if max, _, _ := unstructured.NestedInt64(released["hpa"].Object, "spec", "maxReplicas"); max != 5 {
		t.Errorf("released HPA maxReplicas = %d, want 5 kept", max)
	}
	if img := containerImage(t, released["deployment"]); img != "nginx" {
		t.Errorf("released Deployment image = %q, want nginx kept", img)
	}

	h.log.reset()
	h.sync()
	reqs := h.log.reset()
	if r := slices.Concat(requestsTo(reqs, "horizontalpodautoscalers", "scaled"), requestsTo(reqs, "deployments", "orphaned"),
		requestsTo(reqs, "services", "orphaned")); len(r) != 0 {
		t.Errorf("a later pass touched the released objects: %v", r)
	}
}

// TestPruneOff: with prune off for the resource, a child no longer wanted
// is counted orphaned and left as it is, no write is planned for it, and
// the parent is idle again in the next pass: nothing deferred, nothing
// rendered.
func TestPruneOff(t *testing.T) {
	t.Parallel()
	ns := "prune-off"
	cfg := testConfig(ns)
	cfg.Resources[0].Prune = false
	h := newHarness(t, cfg)
	h.namespace(ns)
	h.createParent(ns, "scaled", map[string]any{"image": "nginx", "port": int64(8080),
		"resources":   map[string]any{"requests": map[string]any{"cpu": "100m"}},
		"autoscaling": map[string]any{"minReplicas": int64(2), "maxReplicas": int64(5)}})
	h.sync()
	h.mergePatch(httpServices, ns, "scaled", map[string]any{"spec": map[string]any{"autoscaling": nil}})
	h.sync()
	for pass := 1; pass <= 2; pass++ {
		h.log.reset()
		rep := h.sync()
		if w := writes(h.log.reset()); len(w) != 0 || rep.Deferred != 0 || rep.Orphaned != 1 {
			t.Errorf("pass %d: writes %v, deferred %d, orphaned %d; want none, 0, 1", pass, w, rep.Deferred, rep.Orphaned)
		}
	}
	h.mustGet(hpas, ns, "scaled")
	if n := h.engine.resources[0].mem.idle.len(); n != 1 {
		t.Errorf("%d parents idle, want 1: a parent with an orphan left by prune: false is rendered every pass", n)
	}
}
