package engine

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/resyncd/resyncd/desired"
)

// forceApply server-side applies body to a Deployment as another manager.
func forceApply(t *testing.T, h *harness, manager, ns, name, body string) {
	t.Helper()
	force := true
	_, err := h.dyn.Resource(deployments).Namespace(ns).Patch(t.Context(), name, types.ApplyPatchType, []byte(body),
		metav1.PatchOptions{FieldManager: manager, Force: &force})
	if err != nil {
		t.Fatalf("%s applies Deployment %s/%s: %v", manager, ns, name, err)
	}
}

func containerImage(t *testing.T, dep *unstructured.Unstructured) string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == "app" {
			return m["image"].(string)
		}
	}
	return ""
}

// TestDriftRepair: another manager changes a Deployment's image and
// replicas, a Service is deleted, and an unrelated label is added to a third
// object; the next pass makes exactly two child writes and leaves the label.
func TestDriftRepair(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("repair"))
	h.namespace("repair")
	for i := range 3 {
		h.createParent("repair", fmt.Sprintf("app-%d", i), map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2)})
	}
	h.sync()

	forceApply(t, h, "intruder", "repair", "app-0",
		`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"app","image":"nginx:evil"}]}}}}`)
	if err := h.dyn.Resource(services).Namespace("repair").Delete(t.Context(), "app-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dep2 := h.mustGet(deployments, "repair", "app-2")
	labels := dep2.GetLabels()
	labels["team"] = "payments"
	dep2.SetLabels(labels)
	if _, err := h.dyn.Resource(deployments).Namespace("repair").Update(t.Context(), dep2, metav1.UpdateOptions{FieldManager: "kubectl-label"}); err != nil {
		t.Fatal(err)
	}

	h.log.reset()
	rep := h.sync()
	cw := childWrites(h.log.reset())
	if len(cw) != 2 {
		t.Errorf("child writes = %d, want 2:\n%s", len(cw), strings.Join(cw, "\n"))
	}
	if rep.Drifted != 1 || rep.Missing != 1 {
		t.Errorf("drifted %d, missing %d; want 1, 1", rep.Drifted, rep.Missing)
	}
	dep0 := h.mustGet(deployments, "repair", "app-0")
	if img := containerImage(t, dep0); img != "nginx:1.27" {
		t.Errorf("image = %q, want nginx:1.27 restored", img)
	}
	if r, _, _ := unstructured.NestedInt64(dep0.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas = %d, want 2 restored", r)
	}
	h.mustGet(services, "repair", "app-1")
	if got := h.mustGet(deployments, "repair", "app-2").GetLabels()["team"]; got != "payments" {
		t.Errorf("the unrelated label was removed or changed: %q", got)
	}

	h.log.reset()
	h.sync()
	if w := writes(h.log.reset()); len(w) != 0 {
		t.Errorf("pass after the repair wrote: %v", w)
	}
}

// TestSpecChanges: image and port follow the spec; autoscaling switched on
// creates the HorizontalPodAutoscaler and cedes replicas, switched off
// prunes it and takes replicas back; observedGeneration follows.
func TestSpecChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("changes"))
	h.namespace("changes")
	h.createParent("changes", "web", map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(3),
		"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}})
	h.sync()

	edit := func(f func(spec map[string]any)) {
		t.Helper()
		p := h.mustGet(httpServices, "changes", "web")
		spec := p.Object["spec"].(map[string]any)
		f(spec)
		if _, err := h.dyn.Resource(httpServices).Namespace("changes").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	observed := func() int64 {
		p := h.mustGet(httpServices, "changes", "web")
		g, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
		if g != p.GetGeneration() {
			t.Errorf("observedGeneration %d, generation %d", g, p.GetGeneration())
		}
		for _, c := range []string{"Ready", "Reconciling", "Stalled"} {
			if og := condition(t, p, c)["observedGeneration"]; og != p.GetGeneration() {
				t.Errorf("%s observedGeneration %v, generation %d", c, og, p.GetGeneration())
			}
		}
		return g
	}
	g1 := observed()

	edit(func(s map[string]any) { s["image"] = "nginx:1.28"; s["port"] = int64(9090) })
	h.sync()
	dep := h.mustGet(deployments, "changes", "web")
	if img := containerImage(t, dep); img != "nginx:1.28" {
		t.Errorf("image %q, want nginx:1.28", img)
	}
	svc := h.mustGet(services, "changes", "web")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if p := ports[0].(map[string]any)["port"]; p != int64(9090) {
		t.Errorf("service port %v, want 9090", p)
	}
	if g2 := observed(); g2 <= g1 {
		t.Errorf("observedGeneration did not move: %d then %d", g1, g2)
	}

	edit(func(s map[string]any) {
		s["autoscaling"] = map[string]any{"minReplicas": int64(2), "maxReplicas": int64(6)}
	})
	h.sync()
	hpa := h.mustGet(hpas, "changes", "web")
	if m, _, _ := unstructured.NestedInt64(hpa.Object, "spec", "maxReplicas"); m != 6 {
		t.Errorf("maxReplicas %d", m)
	}
	dep = h.mustGet(deployments, "changes", "web")
	for _, mf := range dep.GetManagedFields() {
		if mf.Manager == "resyncd" && strings.Contains(mf.FieldsV1.GetRawString(), `"f:replicas"`) {
			t.Errorf("resyncd still owns spec.replicas while autoscaling: %s", mf.FieldsV1.GetRawString())
		}
	}
	observed()

	edit(func(s map[string]any) { delete(s, "autoscaling"); s["replicas"] = int64(4) })
	h.sync()
	if _, err := h.get(hpas, "changes", "web"); err == nil {
		t.Error("the HorizontalPodAutoscaler was not pruned")
	}
	dep = h.mustGet(deployments, "changes", "web")
	if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 4 {
		t.Errorf("replicas %d, want 4 taken back", r)
	}
	observed()
}

// TestPruneParentGone: a deleted parent's children are pruned on the next
// pass; a child re-created under the same name with another UID survives a
// stale plan.
func TestPruneParentGone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("prune"))
	h.namespace("prune")
	h.createParent("prune", "gone", map[string]any{"image": "nginx", "port": int64(80)})
	h.createParent("prune", "stays", map[string]any{"image": "nginx", "port": int64(80)})
	h.sync()
	if err := h.dyn.Resource(httpServices).Namespace("prune").Delete(t.Context(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := h.sync()
	if rep.Orphaned != 2 || rep.Deleted != 2 {
		t.Errorf("orphaned %d, deleted %d; want 2, 2", rep.Orphaned, rep.Deleted)
	}
	if _, err := h.get(deployments, "prune", "gone"); err == nil {
		t.Error("Deployment of the deleted parent is still there")
	}
	if _, err := h.get(services, "prune", "gone"); err == nil {
		t.Error("Service of the deleted parent is still there")
	}
	h.mustGet(deployments, "prune", "stays")

	// A fresh process, after the last parent of a namespace went away,
	// still knows the children's parent kind and prunes them.
	if err := h.dyn.Resource(httpServices).Namespace("prune").Delete(t.Context(), "stays", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep := newHarness(t, testConfig("prune")).sync(); rep.Deleted != 2 {
		t.Errorf("a fresh engine with no parent left deleted %d children, want 2", rep.Deleted)
	}

	// A stale plan: the engine read a child, then it was re-created with
	// another UID before the delete went out. The UID precondition saves it.
	h.createParent("prune", "stale", map[string]any{"image": "nginx", "port": int64(80)})
	h.sync()
	old := h.mustGet(services, "prune", "stale")
	rs := h.engine.resources[0]
	live, err := h.engine.owner.reduceChild(old, services, false, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.dyn.Resource(services).Namespace("prune").Delete(t.Context(), "stale", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := old.DeepCopy()
	fresh.SetUID("")
	fresh.SetResourceVersion("")
	fresh.SetManagedFields(nil)
	unstructured.RemoveNestedField(fresh.Object, "spec", "clusterIP")
	unstructured.RemoveNestedField(fresh.Object, "spec", "clusterIPs")
	unstructured.RemoveNestedField(fresh.Object, "status")
	recreated, err := h.dyn.Resource(services).Namespace("prune").Create(t.Context(), fresh, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{rs: rs, rep: &ResourceReport{}, budget: new(atomic.Int64)}
	r.budget.Store(10)
	j := &job{}
	_, _ = h.engine.write(t.Context(), r, j, &op{kind: OpDelete, key: live.key, gvr: services, live: live})
	if len(j.outcomes) != 1 || j.outcomes[0].result != resultSuperseded {
		t.Errorf("outcomes of the stale delete: %+v, want one, superseded", j.outcomes)
	}
	got := h.mustGet(services, "prune", "stale")
	if got.GetUID() != recreated.GetUID() {
		t.Errorf("the re-created Service was deleted by a stale plan")
	}
}

// TestIdleParentsRemembered: a parent the last pass left with nothing to
// do is not rendered again while it and its children keep their versions;
// any change to either brings it back into the plan.
func TestIdleParentsRemembered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("idle"))
	h.namespace("idle")
	h.createParent("idle", "web", map[string]any{"image": "nginx", "port": int64(80), "replicas": int64(2)})
	h.sync()
	h.sync()
	rs := h.engine.resources[0]
	if rs.mem.idle.len() != 1 {
		t.Fatalf("after a pass with nothing to do, %d parents remembered as idle, want 1", rs.mem.idle.len())
	}
	// A renderer that fails shows whether the parent is rendered again.
	rs.renderer = failingRenderer{rs.renderer}
	if rep := h.sync(); rep.InSync != 2 || rep.Stalled != 0 || rs.mem.idle.len() != 1 {
		t.Fatalf("unchanged parent: %+v, %d idle; want 2 in sync and no rendering", rep, rs.mem.idle.len())
	}
	rs.renderer = rs.renderer.(failingRenderer).Renderer

	// Another writer scales the Deployment: its version changes.
	h.log.reset()
	patch := []byte(`{"spec":{"replicas":5}}`)
	if _, err := h.cs.AppsV1().Deployments("idle").Patch(t.Context(), "web", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	if rep := h.sync(); rep.Updated != 1 {
		t.Errorf("after a child changed: %d updates, want 1", rep.Updated)
	}
	h.sync()

	// The parent's spec changes: its version changes.
	p := h.mustGet(httpServices, "idle", "web")
	if err := unstructured.SetNestedField(p.Object, "nginx:1.27", "spec", "image"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.dyn.Resource(httpServices).Namespace("idle").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep := h.sync(); rep.Updated != 1 {
		t.Errorf("after the spec changed: %d updates, want 1", rep.Updated)
	}
	d := h.mustGet(deployments, "idle", "web")
	if img := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]; img != "nginx:1.27" {
		t.Errorf("image = %v, want nginx:1.27", img)
	}
}

// failingRenderer renders nothing.
type failingRenderer struct{ desired.Renderer }

func (failingRenderer) Render(*unstructured.Unstructured, []desired.Child) (desired.Graph, error) {
	return desired.Graph{}, errors.New("rendered again")
}
