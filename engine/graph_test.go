package engine

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
	"github.com/resyncd/resyncd/internal/fixture"
)

var configMaps = services.GroupVersion().WithResource("configmaps")

// graphHarness watches WebApps in ns with the graph file at path,
// compiled against the API server's schemas as resyncd run does.
func graphHarness(t *testing.T, ns, path string) *harness {
	t.Helper()
	h := placedHarness(t, ns, path, func(*config.Resource) {})
	h.namespace(ns)
	return h
}

func (h *harness) createWebApp(ns, name string, spec map[string]any) {
	h.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}
	if _, err := h.dyn.Resource(fixture.WebApps).Namespace(ns).Create(h.t.Context(), u, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func names(items []unstructured.Unstructured) []string {
	var out []string
	for _, u := range items {
		out = append(out, u.GetName())
	}
	slices.Sort(out)
	return out
}

// TestGraphWebApp runs docs/examples/webapp.yaml on the API server: one
// pass writes every child, the Deployment, which names the live ConfigMap,
// from what the server returned of the ConfigMap in the same pass; the
// second writes nothing; drift is repaired in one pass; switching
// includeWhen off prunes the Service.
func TestGraphWebApp(t *testing.T) {
	t.Parallel()
	ns := "graph-webapp"
	h := graphHarness(t, ns, "../docs/examples/webapp.yaml")
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx:1.27", "replicas": int64(2), "expose": true,
		"config": []any{map[string]any{"name": "MODE", "value": "prod"}}})
	h.createWebApp(ns, "blog", map[string]any{"image": "nginx:1.27"})

	h.sync()
	if got := names(h.list(configMaps, ns)); !slices.Equal(got, []string{"blog-config", "kube-root-ca.crt", "shop-config"}) &&
		!slices.Equal(got, []string{"blog-config", "shop-config"}) {
		t.Errorf("ConfigMaps after pass 1: %v", got)
	}
	if got := names(h.list(services, ns)); !slices.Equal(got, []string{"shop"}) {
		t.Errorf("Services after pass 1: %v, want shop's only (blog does not expose)", got)
	}
	if data, _, _ := unstructured.NestedStringMap(h.mustGet(configMaps, ns, "shop-config").Object, "data"); data["MODE"] != "prod" {
		t.Errorf("shop-config data = %v", data)
	}
	dep := h.mustGet(deployments, ns, "shop")
	from, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(from) != 1 || !slices.ContainsFunc(from[0].(map[string]any)["envFrom"].([]any), func(e any) bool {
		n, _, _ := unstructured.NestedString(e.(map[string]any), "configMapRef", "name")
		return n == "shop-config"
	}) {
		t.Errorf("the Deployment does not name the ConfigMap: %v", from)
	}
	if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas = %d, want 2", r)
	}
	shop := h.mustGet(fixture.WebApps, ns, "shop")
	st, _ := shop.Object["status"].(map[string]any)
	if st["configMap"] != "shop-config" || st["url"] != "http://shop."+ns+".svc" {
		t.Errorf("shop status fields = %v", st)
	}
	if got := fixture.StatusReason(shop, "Reconciling"); got != "True/DeploymentNotReady" {
		// No controller runs here: the Deployment never becomes available.
		t.Errorf("shop Reconciling = %q, want True/DeploymentNotReady: %v", got, st)
	}
	if _, ok := h.mustGet(fixture.WebApps, ns, "blog").Object["status"].(map[string]any)["url"]; ok {
		t.Errorf("blog shows a url with no Service")
	}

	h.log.reset()
	h.sync()
	if w := writes(h.log.reset()); len(w) != 0 {
		t.Errorf("pass 2 of an unchanged graph wrote: %v", w)
	}

	// Drift in each kind of child, one pass to repair all.
	edit := func(gvr schema.GroupVersionResource, name, body string) {
		t.Helper()
		if _, err := h.dyn.Resource(gvr).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(body),
			metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	}
	edit(deployments, "shop", `{"spec": {"replicas": 7}}`)
	edit(configMaps, "shop-config", `{"data": {"MODE": "debug"}}`)
	edit(services, "shop", `{"spec": {"selector": {"app.kubernetes.io/name": "elsewhere"}}}`)
	rep := h.sync()
	if rep.Updated != 3 {
		t.Errorf("updated = %d, want the 3 drifted children", rep.Updated)
	}
	if r, _, _ := unstructured.NestedInt64(h.mustGet(deployments, ns, "shop").Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas = %d after the repair, want 2", r)
	}
	if v, _, _ := unstructured.NestedString(h.mustGet(configMaps, ns, "shop-config").Object, "data", "MODE"); v != "prod" {
		t.Errorf("MODE = %q after the repair, want prod", v)
	}
	if sel, _, _ := unstructured.NestedString(h.mustGet(services, ns, "shop").Object, "spec", "selector", "app.kubernetes.io/name"); sel != "shop" {
		t.Errorf("Service selector after the repair = %q, want shop", sel)
	}

	// includeWhen off: the Service goes, the rest stays.
	if _, err := h.dyn.Resource(fixture.WebApps).Namespace(ns).Patch(t.Context(), "shop", types.MergePatchType,
		[]byte(`{"spec": {"expose": false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	rep = h.sync()
	if _, err := h.get(services, ns, "shop"); !apierrors.IsNotFound(err) || rep.Deleted != 1 {
		t.Errorf("Service shop after expose: false: %v (deleted %d), want pruned", err, rep.Deleted)
	}
	h.mustGet(deployments, ns, "shop")
	h.mustGet(configMaps, ns, "shop-config")
}

// TestGraphCostBudget: a parent whose graph costs more than the budget to
// evaluate is Stalled with CostExceeded and gets no child; the others of
// the same graph converge in the same pass.
func TestGraphCostBudget(t *testing.T) {
	t.Parallel()
	ns := "graph-cost"
	h := graphHarness(t, ns, "../testdata/graphs/costbomb.yaml")
	tags := make([]any, 1000)
	for i := range tags {
		tags[i] = "tag-" + string(rune('a'+i%26)) + "-" + string(rune('a'+i/26%26))
	}
	h.createWebApp(ns, "bomb", map[string]any{"image": "nginx", "tags": tags})
	h.createWebApp(ns, "small", map[string]any{"image": "nginx", "tags": []any{"a", "b", "a"}})
	h.createWebApp(ns, "empty", map[string]any{"image": "nginx"})

	rep := h.sync()
	if rep.Stalled != 1 {
		t.Errorf("stalled = %d, want 1", rep.Stalled)
	}
	bomb := h.mustGet(fixture.WebApps, ns, "bomb")
	if got := fixture.StatusReason(bomb, "Stalled"); got != "True/CostExceeded" {
		t.Errorf("bomb Stalled = %q, want True/CostExceeded: %v", got, bomb.Object["status"])
	}
	if _, err := h.get(configMaps, ns, "bomb-config"); !apierrors.IsNotFound(err) {
		t.Errorf("bomb-config: %v, want none written", err)
	}
	small := h.mustGet(configMaps, ns, "small-config")
	if got, _, _ := unstructured.NestedString(small.Object, "data", "repeats"); got != "5" {
		t.Errorf("small-config repeats = %q, want 5", got)
	}
	h.mustGet(configMaps, ns, "empty-config")
}

// TestGraphHTTPService: testdata/graphs/httpservice.yaml, whose children
// wait for none of each other, converges in one pass, and the next pass
// writes nothing.
func TestGraphHTTPService(t *testing.T) {
	t.Parallel()
	ns := "graph-hsvc"
	disc := discovery.NewDiscoveryClientForConfigOrDie(env(t).Config)
	path := "../testdata/graphs/httpservice.yaml"
	g, err := graph.Load(path, graph.Options{Schemas: &resolver.ClientDiscoveryResolver{Discovery: disc},
		Parent: httpServices.GroupVersion().WithKind("HttpService")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(ns)
	cfg.Resources[0].Renderer, cfg.Resources[0].Graph = "", path
	reg := desired.DefaultRegistry()
	reg[cfg.Resources[0].RendererKey()] = g
	h := newHarnessWith(t, cfg, reg)
	h.namespace(ns)
	h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080), "env": []any{map[string]any{"name": "A", "value": "1"}}})
	h.createParent(ns, "api", map[string]any{"image": "nginx", "port": int64(9090),
		"resources":   map[string]any{"requests": map[string]any{"cpu": "0.1"}},
		"autoscaling": map[string]any{"maxReplicas": int64(4)}})

	rep := h.sync()
	if rep.Created != 5 || rep.Failed != 0 {
		t.Errorf("pass 1: created %d, failed %d; want 5 children (2 Deployments, 2 Services, 1 HorizontalPodAutoscaler)", rep.Created, rep.Failed)
	}
	h.mustGet(hpas, ns, "api")
	if got := fixture.StatusReason(h.mustGet(httpServices, ns, "web"), "Reconciling"); got != "True/DeploymentNotReady" {
		t.Errorf("web Reconciling = %q, want True/DeploymentNotReady (no deployment controller here)", got)
	}
	h.log.reset()
	rep = h.sync()
	if w := writes(h.log.reset()); len(w) != 0 || rep.InSync != 5 {
		t.Errorf("pass 2: %d in sync, writes %v; want 5 and none", rep.InSync, w)
	}
}

// TestGraphInvalidNames: a child name the API server would refuse, from
// the tenant's spec, and a parent name too long for the resyncd.io/parent
// label, make their parents Stalled with InvalidSpec before any request;
// the pass succeeds, nothing counts as failed or transient, and the other
// parents converge.
func TestGraphInvalidNames(t *testing.T) {
	t.Parallel()
	ns := "graph-names"
	h := graphHarness(t, ns, "../testdata/graphs/named-by-spec.yaml")
	long := strings.Repeat("l", 70)
	for name, image := range map[string]string{"dots": "..", "slash": "a/b", "upper": "Nginx", "good": "fine", long: "long-parent"} {
		h.createWebApp(ns, name, map[string]any{"image": image})
	}
	for pass := 1; pass <= 2; pass++ {
		rep := h.sync() // fails the test if the pass fails
		if rep.Failed != 0 || rep.Transient != 0 {
			t.Errorf("pass %d: failed %d, transient %d; want 0, 0", pass, rep.Failed, rep.Transient)
		}
	}
	for name, want := range map[string]string{"dots": `".."`, "slash": `"a/b"`, "upper": `"Nginx"`, long: "resyncd.io/parent"} {
		p := h.mustGet(fixture.WebApps, ns, name)
		s := condition(t, p, "Stalled")
		if s["status"] != "True" || s["reason"] != "InvalidSpec" || !strings.Contains(str(s["message"]), want) {
			t.Errorf("%s Stalled = %v, want True/InvalidSpec naming %s", name, s, want)
		}
	}
	if got := names(h.list(configMaps, ns)); !slices.Contains(got, "fine") || slices.Contains(got, "long-parent") {
		t.Errorf("ConfigMaps = %v, want fine and not long-parent", got)
	}
}

// TestGraphStatusFieldRemoved: a status field the graph no longer returns
// is removed from the parent's status on the server, in the pass that
// finds it gone, though nothing else of the status changes; the pass after
// writes nothing.
func TestGraphStatusFieldRemoved(t *testing.T) {
	t.Parallel()
	ns := "graph-status-gone"
	h := graphHarness(t, ns, "../testdata/graphs/annotated-url.yaml")
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx"})
	h.annotate(fixture.WebApps, ns, "shop", "example.resyncd.io/url", "http://shop")
	for range 2 {
		h.sync()
	}
	url := func() any {
		st, _, _ := unstructured.NestedMap(h.mustGet(fixture.WebApps, ns, "shop").Object, "status")
		return st["url"]
	}
	if got := url(); got != "http://shop" {
		t.Fatalf("status.url after converging = %v, want http://shop", got)
	}
	h.mergePatch(fixture.WebApps, ns, "shop", map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.resyncd.io/url": nil}}})
	if rep := h.sync(); rep.Statuses != 1 {
		t.Errorf("statuses written = %d after the annotation went, want 1", rep.Statuses)
	}
	if got := url(); got != nil {
		t.Errorf("status.url after the annotation went = %v, want none", got)
	}
	h.log.reset()
	if rep := h.sync(); rep.Writes() != 0 {
		t.Errorf("the pass after made %d writes: %v", rep.Writes(), writes(h.log.reset()))
	}
}

// TestGraphStatusEvaluationFails: a status expression that fails (a
// division by zero) stalls the parent with EvaluationFailed, rather than
// being dropped unseen.
func TestGraphStatusEvaluationFails(t *testing.T) {
	t.Parallel()
	ns := "graph-status-fails"
	h := graphHarness(t, ns, "../testdata/graphs/divides.yaml")
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx", "config": []any{map[string]any{"name": "first", "value": "a"}}})
	for range 2 {
		h.sync()
	}
	s := condition(t, h.mustGet(fixture.WebApps, ns, "shop"), "Stalled")
	if s["status"] != "True" || s["reason"] != "EvaluationFailed" || !strings.Contains(str(s["message"]), "division by zero") {
		t.Errorf("Stalled = %v, want True/EvaluationFailed naming the division by zero", s)
	}
}
