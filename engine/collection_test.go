package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
	"github.com/resyncd/resyncd/internal/fixture"
)

// kroHarness watches, in ns, the parents of the kro ResourceGraphDefinition
// at path: the parent kind's CRD installed as `resyncd crd` prints it, the
// graph compiled against the API server's schemas as resyncd run does.
func kroHarness(t *testing.T, ns, path string) (*harness, schema.GroupVersionResource) {
	t.Helper()
	return kroHarnessWith(t, ns, path, func(*extv1.CustomResourceDefinition) {})
}

// kroHarnessWith is kroHarness with the CRD changed by edit before it is
// installed.
func kroHarnessWith(t *testing.T, ns, path string, edit func(*extv1.CustomResourceDefinition)) (*harness, schema.GroupVersionResource) {
	t.Helper()
	crd, err := graph.CRDOfFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(crd)
	if _, err := envtest.InstallCRDs(env(t).Config, envtest.CRDInstallOptions{CRDs: []*extv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
	disc := discovery.NewDiscoveryClientForConfigOrDie(env(t).Config)
	fixture.Eventually(t, "the OpenAPI schema of "+crd.Spec.Names.Kind+" published", 30*time.Second, func() bool {
		paths, err := disc.OpenAPIV3().Paths()
		_, ok := paths["apis/"+gvr.Group+"/"+gvr.Version]
		return err == nil && ok
	})
	g, err := graph.Load(path, graph.Options{Schemas: &resolver.ClientDiscoveryResolver{Discovery: disc},
		Parent: gvr.GroupVersion().WithKind(crd.Spec.Names.Kind)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(ns)
	r := cfg.Resources[0]
	r.Group, r.Version, r.Resource, r.Renderer, r.Graph = gvr.Group, gvr.Version, gvr.Resource, "", path
	cfg.Resources = []config.Resource{r}
	reg := desired.DefaultRegistry()
	reg[r.RendererKey()] = g
	h := newHarnessWith(t, cfg, reg)
	h.namespace(ns)
	return h, gvr
}

// items returns the names of the ConfigMaps in ns whose name starts with
// prefix, sorted.
func (h *harness) items(ns, prefix string) []string {
	h.t.Helper()
	var out []string
	for _, n := range names(h.list(configMaps, ns)) {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// TestGraphCollection runs testdata/kro/fan-out.yaml on the API server: a
// forEach over 3 items creates 3 ConfigMaps, and the summary that lists
// them once they exist; over 2, the third is pruned, and the summary
// updated, in one pass; then a pass writes nothing. A parent whose
// collection would make 1,001 items is Stalled, CollectionTooLarge, with
// one Warning Event and no child written, and the other parent converges
// in the same passes.
func TestGraphCollection(t *testing.T) {
	ns := "graph-collection"
	h, fanOuts := kroHarness(t, ns, "../testdata/kro/fan-out.yaml")
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: h.cs.EventsV1()})
	b.StartRecordingToSink(t.Context().Done())
	h.engine.events = b.NewRecorder(scheme.Scheme, "resyncd")
	create := func(name string, spec map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kro.run/v1alpha1", "kind": "FanOut",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
		if _, err := h.dyn.Resource(fanOuts).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string, n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprint(prefix, i)
		}
		return out
	}
	create("demo", map[string]any{"regions": []any{"eu", "us", "ap"}})
	create("huge", map[string]any{"regions": list("r", 11), "tiers": list("t", 91)})

	rep := h.sync()
	if got := h.items(ns, "demo-"); !slices.Equal(got, []string{"demo-ap-web", "demo-eu-web", "demo-summary", "demo-us-web"}) {
		t.Errorf("pass 1: %v, want the 3 items and the summary, written from the items the server returned", got)
	}
	if rep.Stalled != 1 {
		t.Errorf("pass 1: stalled = %d, want 1 (huge)", rep.Stalled)
	}
	huge := h.mustGet(fanOuts, ns, "huge")
	if s := condition(t, huge, "Stalled"); s["status"] != "True" || s["reason"] != graph.ReasonCollectionTooLarge ||
		!strings.Contains(s["message"].(string), "resources[configs].forEach: would make 1001 items (11 × 91); a collection makes at most 1000") {
		t.Errorf("huge Stalled = %v, want True/CollectionTooLarge naming the resource and the size", s)
	}
	if got := h.items(ns, "huge-"); len(got) != 0 {
		t.Errorf("huge's children written: %d", len(got))
	}

	summary := h.mustGet(configMaps, ns, "demo-summary")
	if got, _, _ := unstructured.NestedString(summary.Object, "data", "configs"); got != "demo-eu-web,demo-us-web,demo-ap-web" {
		t.Errorf("pass 1: summary lists %q, want the 3 items in order", got)
	}
	demo := h.mustGet(fanOuts, ns, "demo")
	if got := fixture.StatusReason(demo, "Ready"); got != "True/Ready" {
		t.Errorf("demo Ready = %q after pass 1: %v", got, demo.Object["status"])
	}
	if n, _, _ := unstructured.NestedInt64(demo.Object, "status", "configs"); n != 3 {
		t.Errorf("demo status.configs = %d, want 3", n)
	}

	h.log.reset()
	h.sync()
	if w := writes(h.log.reset()); len(w) != 0 {
		t.Errorf("pass 3 of an unchanged collection wrote: %v", w)
	}

	// Two items: the third is pruned in the same pass as the summary is
	// updated.
	demo = h.mustGet(fanOuts, ns, "demo")
	if err := unstructured.SetNestedSlice(demo.Object, []any{"eu", "us"}, "spec", "regions"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.dyn.Resource(fanOuts).Namespace(ns).Update(t.Context(), demo, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep = h.sync()
	if got := h.items(ns, "demo-"); !slices.Equal(got, []string{"demo-eu-web", "demo-summary", "demo-us-web"}) {
		t.Errorf("after 2 items, one pass: %v, want demo-ap-web pruned", got)
	}
	if rep.Deleted != 1 || rep.Updated != 1 {
		t.Errorf("deleted %d, updated %d; want the third item deleted and the summary updated", rep.Deleted, rep.Updated)
	}
	summary = h.mustGet(configMaps, ns, "demo-summary")
	if got, _, _ := unstructured.NestedString(summary.Object, "data", "configs"); got != "demo-eu-web,demo-us-web" {
		t.Errorf("summary lists %q after the prune", got)
	}

	// A removed item and a new one at once: the summary waits for the new
	// one, yet the removed one is pruned in the same pass.
	demo = h.mustGet(fanOuts, ns, "demo")
	if err := unstructured.SetNestedSlice(demo.Object, []any{"eu", "sa"}, "spec", "regions"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.dyn.Resource(fanOuts).Namespace(ns).Update(t.Context(), demo, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync()
	if got := h.items(ns, "demo-"); !slices.Equal(got, []string{"demo-eu-web", "demo-sa-web", "demo-summary"}) {
		t.Errorf("after a new item and a removed one, one pass: %v, want demo-us-web pruned", got)
	}

	h.sync()
	h.log.reset()
	h.sync()
	if w := writes(h.log.reset()); len(w) != 0 {
		t.Errorf("a pass after the collection converged wrote: %v", w)
	}
	if got := h.items(ns, "huge-"); len(got) != 0 {
		t.Errorf("huge's children written: %d", len(got))
	}
	// One Warning Event for huge, on the transition, not one a pass.
	want := map[string]int{"huge/" + graph.ReasonCollectionTooLarge: 1}
	if got := fixture.WarningEvents(t, h.cs, ns, "FanOut", want); got["huge/"+graph.ReasonCollectionTooLarge] != 1 {
		t.Errorf("Warning Events %v, want %v", got, want)
	}
}
