package engine

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/internal/fixture"
)

var widgets = schema.GroupVersionResource{Group: "test.resyncd.io", Version: "v1", Resource: "widgets"}

// widgetCRD is a second parent kind, for tests only: a Widget names the
// Service it wants in spec.target.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	yes := true
	open := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.resyncd.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgets.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *open, "status": *open},
				}},
			}},
		},
	}
}

// widgetRenderer renders a Widget into one Service named spec.target.
type widgetRenderer struct{}

func (widgetRenderer) ChildTypes() []desired.ChildType {
	return []desired.ChildType{{GVR: services, Kind: "Service"}}
}

func (widgetRenderer) Policy(*unstructured.Unstructured) desired.Policy { return desired.Policy{} }

func (widgetRenderer) Render(p *unstructured.Unstructured, _ []desired.Child) (desired.Graph, error) {
	target, _, _ := unstructured.NestedString(p.Object, "spec", "target")
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": target, "namespace": p.GetNamespace()},
		"spec": map[string]any{
			"selector": map[string]any{"widget": p.GetName()},
			"ports":    []any{map[string]any{"name": "http", "port": int64(80), "protocol": "TCP", "targetPort": int64(8080)}},
		},
	}}
	return desired.Graph{Children: []*unstructured.Unstructured{svc}}, nil
}

func (widgetRenderer) Status(*unstructured.Unstructured, desired.Observation) (desired.Status, error) {
	return desired.Status{Readiness: desired.Readiness{Ready: true, Reason: "Applied", Message: "Its Service is applied"}}, nil
}

// TestTwoParentsOneChild: an HttpService and a Widget, two watched
// resources, want the same Service. The first to create it (the resource
// of the higher priority) keeps it; the
// other is Stalled with NameTaken, and nothing flips between passes. Once
// the first parent is gone and resyncd has pruned its Service, the Widget
// gets the name.
func TestTwoParentsOneChild(t *testing.T) {
	if _, err := envtest.InstallCRDs(env(t).Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD()}}); err != nil {
		t.Fatal(err)
	}
	ns := "two-parents"
	cfg := testConfig(ns)
	// The HttpServices' writes go first, and finish first: their resource's
	// priority is the higher, one pass plans both resources before either
	// writes, and one worker makes the writes.
	cfg.Resources[0].Priority = 1
	cfg.Apply.Concurrency = 1
	w := config.DefaultResource()
	w.Group, w.Version, w.Resource, w.Renderer, w.Namespaces = widgets.Group, widgets.Version, widgets.Resource, "widget", []string{ns}
	cfg.Resources = append(cfg.Resources, w)
	renderers := desired.DefaultRegistry()
	renderers["widget"] = widgetRenderer{}
	h := newHarnessWith(t, cfg, renderers)
	h.namespace(ns)
	h.recordEvents()

	hs := h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.resyncd.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "gadget", "namespace": ns},
		"spec":     map[string]any{"target": "web"},
	}}
	if _, err := h.dyn.Resource(widgets).Namespace(ns).Create(t.Context(), widget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var rvs []string
	for pass := 1; pass <= 3; pass++ {
		h.log.reset()
		if _, err := h.engine.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		// Each resource reads only its own children.
		selectors := map[string]bool{}
		for _, r := range h.log.reset() {
			if strings.HasPrefix(r, "GET /api/v1/namespaces/two-parents/services?") {
				u, _ := url.ParseQuery(r[strings.Index(r, "?")+1:])
				selectors[u.Get("labelSelector")] = true
			}
		}
		want := map[string]bool{desired.ChildSelector(schema.GroupKind{Group: "resyncd.io", Kind: "HttpService"}): true,
			desired.ChildSelector(schema.GroupKind{Group: widgets.Group, Kind: "Widget"}): true}
		if !cmp.Equal(selectors, want) {
			t.Errorf("pass %d: Service LISTs with selectors %v, want %v", pass, selectors, want)
		}
		svc := h.mustGet(services, ns, "web")
		refs := svc.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != hs.GetUID() {
			t.Fatalf("pass %d: Service web owners = %v, want HttpService web only", pass, refs)
		}
		rvs = append(rvs, svc.GetResourceVersion())
		s := condition(t, h.mustGet(widgets, ns, "gadget"), ConditionStalled)
		if s["status"] != "True" || s["reason"] != ReasonNameTaken || !strings.Contains(str(s["message"]), "controlled by HttpService web") {
			t.Errorf("pass %d: Widget Stalled = %v, want NameTaken naming HttpService web", pass, s)
		}
		if s := condition(t, h.mustGet(httpServices, ns, "web"), ConditionStalled); s["status"] != "False" {
			t.Errorf("pass %d: HttpService Stalled = %v", pass, s)
		}
	}
	if rvs[0] != rvs[1] || rvs[1] != rvs[2] {
		t.Errorf("Service web written after the first pass: resourceVersions %v", rvs)
	}
	if got := fixture.WarningEvents(t, h.cs, ns, "", map[string]int{"gadget/NameTaken": 1}); !cmp.Equal(got, map[string]int{"gadget/NameTaken": 1}) {
		t.Errorf("Warning Events = %v, want one NameTaken on the Widget", got)
	}

	// No garbage collector runs here: resyncd prunes the HttpService's
	// children as orphans, and the next pass gives the name to the Widget.
	h.deleteParent(ns, "web")
	for range 2 {
		if _, err := h.engine.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	svc := h.mustGet(services, ns, "web")
	if refs := svc.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Widget" {
		t.Errorf("after HttpService web is gone, Service web owners = %v, want the Widget", refs)
	}
	if s := condition(t, h.mustGet(widgets, ns, "gadget"), ConditionStalled); s["status"] != "False" {
		t.Errorf("Widget Stalled = %v once the name is free", s)
	}
}
