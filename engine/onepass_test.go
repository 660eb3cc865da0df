package engine

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestChainConvergesInOnePass runs testdata/graphs/chain.yaml, four
// children each reading the live fields of the one before (ConfigMap →
// Deployment naming it → Service named after the Deployment → ConfigMap
// holding the Service's clusterIP and the Deployment's uid), on the API
// server: one pass from nothing writes all four and the status, the
// second writes nothing; with the Service, then the Deployment, deleted
// by hand, one pass makes it again and rewrites what reads it.
func TestChainConvergesInOnePass(t *testing.T) {
	t.Parallel()
	ns := "one-pass-chain"
	h := graphHarness(t, ns, "../testdata/graphs/chain.yaml")
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx:1.27", "replicas": int64(2)})

	rep := h.sync()
	if rep.Created != 4 || rep.Statuses != 1 || rep.Failed != 0 {
		t.Errorf("pass 1: created %d, statuses %d, failed %d; want 4, 1, 0: %+v", rep.Created, rep.Statuses, rep.Failed, rep)
	}
	assertChain(t, h, ns, "shop")

	h.log.reset()
	rep = h.sync()
	if w := writes(h.log.reset()); len(w) != 0 || rep.InSync != 4 {
		t.Errorf("pass 2 after a converged pass: %d in sync, wrote %v; want 4 and nothing", rep.InSync, w)
	}

	for _, gone := range []struct {
		what string
		gvr  schema.GroupVersionResource
	}{{"Service", services}, {"Deployment", deployments}} {
		before := h.mustGet(configMaps, ns, "shop-address")
		if err := h.dyn.Resource(gone.gvr).Namespace(ns).Delete(t.Context(), "shop", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		h.log.reset()
		rep = h.sync()
		if rep.Created != 1 || rep.Updated != 1 || rep.NoOps != 0 || rep.Failed != 0 {
			t.Errorf("%s deleted: created %d, updated %d, no-ops %d, failed %d; want 1, 1 (the address ConfigMap) and no other apply: %+v",
				gone.what, rep.Created, rep.Updated, rep.NoOps, rep.Failed, rep)
		}
		if w := slices.DeleteFunc(writes(h.log.reset()), func(w string) bool { return strings.Contains(w, "/webapps/") }); len(w) != 2 {
			t.Errorf("%s deleted: child writes %v, want the create and the address's update", gone.what, w)
		}
		after := assertChain(t, h, ns, "shop")
		if after.GetResourceVersion() == before.GetResourceVersion() {
			t.Errorf("%s deleted: the address ConfigMap was not rewritten", gone.what)
		}
		h.log.reset()
		h.sync()
		if w := writes(h.log.reset()); len(w) != 0 {
			t.Errorf("%s deleted: the pass after the repair wrote %v", gone.what, w)
		}
	}
}

// assertChain checks what the API server holds of the chain of the WebApp
// ns/name and returns its address ConfigMap.
func assertChain(t *testing.T, h *harness, ns, name string) *unstructured.Unstructured {
	t.Helper()
	dep := h.mustGet(deployments, ns, name)
	from, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(from) != 1 || !slices.ContainsFunc(from[0].(map[string]any)["envFrom"].([]any), func(e any) bool {
		n, _, _ := unstructured.NestedString(e.(map[string]any), "configMapRef", "name")
		return n == name+"-settings"
	}) {
		t.Errorf("the Deployment does not name the settings ConfigMap: %v", from)
	}
	svc := h.mustGet(services, ns, name)
	ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
	addr := h.mustGet(configMaps, ns, name+"-address")
	data, _, _ := unstructured.NestedStringMap(addr.Object, "data")
	if ip == "" || data["clusterIP"] != ip || data["deploymentUID"] != string(dep.GetUID()) {
		t.Errorf("address ConfigMap data = %v; want the Service's clusterIP %q and the Deployment's uid %q", data, ip, dep.GetUID())
	}
	parent := h.mustGet(fixture.WebApps, ns, name)
	if url, _, _ := unstructured.NestedString(parent.Object, "status", "url"); url != "http://"+ip {
		t.Errorf("status.url = %q, want http://%s", url, ip)
	}
	if got := fixture.StatusReason(parent, "Reconciling"); got == "True/WaitingForService" || got == "True/WaitingForDeployment" || got == "True/WaitingForSettings" {
		t.Errorf("Reconciling = %q after the chain was written", got)
	}
	return addr
}

// TestChainWithinLimits runs testdata/graphs/chain.yaml with a budget of
// two writes a pass: the writes a job adds as its chain renders count
// against the budget as the others do, and what is left is deferred to
// the next pass, which finishes the chain.
func TestChainWithinLimits(t *testing.T) {
	t.Parallel()
	ns := "one-pass-budget"
	h := graphHarness(t, ns, "../testdata/graphs/chain.yaml")
	h.engine.sched = newScheduler(1, 2, h.engine.runJob)
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx:1.27"})

	rep := h.sync()
	if rep.Created != 2 || rep.Deferred == 0 {
		t.Errorf("pass 1 with a budget of 2: created %d, deferred %d; want 2 and the rest deferred: %+v", rep.Created, rep.Deferred, rep)
	}
	if _, err := h.get(services, ns, "shop"); err == nil {
		t.Errorf("the Service was written past the budget")
	}
	h.sync()
	h.sync()
	assertChain(t, h, ns, "shop")
}

// TestChainRenderFails runs testdata/graphs/chain-fails.yaml: the parent
// whose last child fails to render from its Deployment as the server
// returned it is Stalled with the render's error, its earlier children
// kept; the other parent converges in the same pass.
func TestChainRenderFails(t *testing.T) {
	t.Parallel()
	ns := "one-pass-fails"
	h := graphHarness(t, ns, "../testdata/graphs/chain-fails.yaml")
	h.createWebApp(ns, "bad", map[string]any{"image": "nginx:1.27", "replicas": int64(3)})
	h.createWebApp(ns, "good", map[string]any{"image": "nginx:1.27"})

	rep := h.sync()
	if rep.Stalled != 1 || rep.Created != 5 {
		t.Errorf("pass 1: stalled %d, created %d; want 1 (bad) and 5 (bad's settings and Deployment, good's three): %+v", rep.Stalled, rep.Created, rep)
	}
	bad := h.mustGet(fixture.WebApps, ns, "bad")
	if s := condition(t, bad, "Stalled"); s["status"] != "True" || s["reason"] != "EvaluationFailed" {
		t.Errorf("bad Stalled = %v, want True/EvaluationFailed", s)
	}
	h.mustGet(deployments, ns, "bad")
	if _, err := h.get(configMaps, ns, "bad-address"); err == nil {
		t.Errorf("bad's address ConfigMap written")
	}
	h.mustGet(configMaps, ns, "good-address")
	if got := fixture.StatusReason(h.mustGet(fixture.WebApps, ns, "good"), "Stalled"); got != "False/NoError" {
		t.Errorf("good Stalled = %q", got)
	}
}
