package graph

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/resyncd/resyncd/desired"
)

func load(t *testing.T, path string, opts Options) *Renderer {
	t.Helper()
	r, err := Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func webApp(t *testing.T, spec string) *unstructured.Unstructured {
	return decode(t, []byte(`{"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
		"metadata": {"name": "shop", "namespace": "team", "uid": "u-1", "generation": 2}, "spec": `+spec+`}`))
}

func kinds(g desired.Graph) []string {
	var out []string
	for _, c := range g.Children {
		out = append(out, c.GetKind()+"/"+c.GetName())
	}
	return out
}

// TestRenderWaitsForLiveFields: the Deployment refers to the live
// ConfigMap, so it waits until the ConfigMap is LISTed; the Service
// follows spec.expose.
func TestRenderWaitsForLiveFields(t *testing.T) {
	r := load(t, "../../docs/examples/webapp.yaml", Options{})
	parent := webApp(t, `{"image": "nginx", "replicas": 2, "port": 8080, "expose": true, "config": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]}`)

	g, err := r.Render(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ConfigMap/shop-config", "Service/shop"}, kinds(g)); diff != "" {
		t.Errorf("first pass (-want +got):\n%s", diff)
	}
	want := []desired.Waiting{{ID: "deployment", Group: "apps", Kind: "Deployment", Name: "shop", Namespace: "team", Reason: "WaitingForConfig",
		Message: "deployment waits for config: ConfigMap team/shop-config does not exist yet"}}
	if diff := cmp.Diff(want, g.Waiting); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}

	live := []desired.Child{{Kind: "ConfigMap", Name: "shop-config", Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "shop-config"},
		"data": map[string]any{"A": "1", "B": "2"}}}}
	g, err = r.Render(parent, live)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Waiting) > 0 || len(g.Children) != 3 {
		t.Fatalf("second pass: children %v, waiting %v", kinds(g), g.Waiting)
	}
	// The Deployment refers to the ConfigMap: if that is someone else's,
	// the engine writes neither.
	if diff := cmp.Diff([][]int{nil, {0}, nil}, g.Refs); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
	dep := g.Children[1]
	ann, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "metadata", "annotations", "example.resyncd.io/config-hash")
	ref, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if ann == "" || !strings.Contains(fmt.Sprint(ref), "shop-config") {
		t.Errorf("the Deployment does not refer to the ConfigMap: hash %q, containers %v", ann, ref)
	}
	// Another content, another hash: the pods roll.
	parent.Object["spec"].(map[string]any)["config"] = []any{map[string]any{"name": "B", "value": "3"}, map[string]any{"name": "A", "value": "1"}}
	g, _ = r.Render(parent, live)
	other, _, _ := unstructured.NestedString(g.Children[1].Object, "spec", "template", "metadata", "annotations", "example.resyncd.io/config-hash")
	if other == ann {
		t.Errorf("the hash %q did not change with the content", ann)
	}
	if replicas, _, _ := unstructured.NestedInt64(g.Children[1].Object, "spec", "replicas"); replicas != 2 {
		t.Errorf("replicas = %d, want 2, typed as the expression's int", replicas)
	}

	parent.Object["spec"].(map[string]any)["expose"] = false
	g, _ = r.Render(parent, live)
	if diff := cmp.Diff([]string{"ConfigMap/shop-config", "Deployment/shop"}, kinds(g)); diff != "" {
		t.Errorf("expose false (-want +got):\n%s", diff)
	}
}

// TestStatusProjectsLiveChildren: status fields come from the live
// children; one that refers to a child left out is left out; readiness
// names the first child that is not ready.
func TestStatusProjectsLiveChildren(t *testing.T) {
	r := load(t, "../../docs/examples/webapp.yaml", Options{})
	parent := webApp(t, `{"image": "nginx", "replicas": 2, "port": 8080, "expose": false, "config": []}`)
	cm := desired.Child{Kind: "ConfigMap", Name: "shop-config", Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "shop-config"}}}
	dep := desired.Child{Kind: "Deployment", Name: "shop", Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "shop"},
		"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"availableReplicas": int64(1)}}}
	st, err := r.Status(parent, desired.Observation{Children: []desired.Child{cm, dep}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"availableReplicas": int64(1), "configMap": "shop-config"}, st.Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	want := desired.Readiness{Reason: "DeploymentNotReady",
		Message: "Deployment team/shop: readyWhen ${deployment.status.?availableReplicas.orValue(0) == deployment.spec.replicas} is false"}
	if diff := cmp.Diff(want, st.Readiness); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
	dep.Object["status"] = map[string]any{"availableReplicas": int64(2)}
	st, _ = r.Status(parent, desired.Observation{Children: []desired.Child{cm, dep}})
	if diff := cmp.Diff(desired.Readiness{Ready: true, Reason: "Ready", Message: "2 of 2 resources ready"}, st.Readiness); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
}

// TestCostBudget: a parent whose graph costs more than the budget is
// refused with CostExceeded, and its evaluation never spends more than the
// budget; a parent within it renders.
func TestCostBudget(t *testing.T) {
	r := load(t, "../../testdata/graphs/costbomb.yaml", Options{})
	tags := make([]string, 1000)
	for i := range tags {
		tags[i] = fmt.Sprintf("%q", fmt.Sprintf("t%d", i))
	}
	bomb := webApp(t, `{"image": "nginx", "tags": [`+strings.Join(tags, ",")+`]}`)
	small := webApp(t, `{"image": "nginx", "tags": ["a", "b", "a"]}`)

	g, err := r.Render(small, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Children[0].Object["data"]; !cmp.Equal(got, map[string]any{"repeats": "5"}) {
		t.Errorf("data = %v, want repeats 5", got)
	}
	_, err = r.Render(bomb, nil)
	var ie *desired.InvalidError
	if !errors.As(err, &ie) || ie.Reason != ReasonCostExceeded {
		t.Fatalf("got %v, want CostExceeded", err)
	}
	// The message adds up: what was spent before, what the expression could
	// spend of what was left.
	var budget, before, limit, left uint64
	if _, err := fmt.Sscanf(ie.Message[strings.Index(ie.Message, "the budget is"):],
		"the budget is %d (cel.costBudget); the expressions before it spent %d, and it was stopped after %d more: its cost limits halve from the budget down, and that is the largest within the %d left",
		&budget, &before, &limit, &left); err != nil || budget != r.budget || before+left != budget || limit > left {
		t.Errorf("message %q: budget %d, before %d, limit %d, left %d (%v)", ie.Message, budget, before, limit, left, err)
	}
	ev := r.evaluation(bomb, nil, nil)
	_, err = ev.resolve(r.resources[0], true)
	if err == nil || ev.meter.spent > r.budget || ev.meter.spent < r.budget/2 {
		t.Errorf("spent %d of a budget of %d (%v): want the budget spent and no more", ev.meter.spent, r.budget, err)
	}
}

// TestEvaluationErrorsStall: only data not there yet makes a resource
// wait — a live child missing, or a key of it; an expression that fails
// otherwise (a division by zero) is EvaluationFailed, in the children and
// in the status, where the field is left out and the failure reported.
func TestEvaluationErrorsStall(t *testing.T) {
	r := load(t, "../../testdata/graphs/divides.yaml", Options{})
	parent := webApp(t, `{"image": "nginx", "config": []}`)
	base := func(data map[string]any) desired.Child {
		return desired.Child{Kind: "ConfigMap", Name: "shop-base", Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "shop-base"}, "data": data}}
	}

	g, err := r.Render(parent, nil)
	if err != nil || len(g.Waiting) != 1 || g.Waiting[0].Reason != "WaitingForBase" {
		t.Errorf("no live base: waiting %v, err %v; want WaitingForBase", g.Waiting, err)
	}
	g, err = r.Render(parent, []desired.Child{base(map[string]any{"x": "1", "y": "2"})})
	if err != nil || len(g.Waiting) != 1 || !strings.Contains(g.Waiting[0].Message, "no such key") {
		t.Errorf("base without the key first: waiting %v, err %v; want waiting for the key", g.Waiting, err)
	}
	_, err = r.Render(parent, []desired.Child{base(map[string]any{"first": "a"})})
	var ie *desired.InvalidError
	if !errors.As(err, &ie) || ie.Reason != "EvaluationFailed" || !strings.Contains(ie.Message, "division by zero") {
		t.Errorf("base of one entry: err %v, want EvaluationFailed with the division by zero", err)
	}

	st, err := r.Status(parent, desired.Observation{Children: []desired.Child{base(map[string]any{"first": "a", "y": "b"})}})
	if err != nil || st.Failure != nil {
		t.Fatalf("status with a base of two entries: failure %v, err %v", st.Failure, err)
	}
	if diff := cmp.Diff(map[string]any{"configMap": "100", "url": "a"}, st.Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	st, _ = r.Status(parent, desired.Observation{Children: []desired.Child{base(map[string]any{"first": "a"})}})
	if st.Failure == nil || st.Failure.Reason != "EvaluationFailed" || !strings.Contains(st.Failure.Message, "division by zero") {
		t.Errorf("status with a base of one entry: failure %v, want EvaluationFailed", st.Failure)
	}
	if _, ok := st.Fields["configMap"]; ok {
		t.Errorf("fields %v keep configMap, which failed", st.Fields)
	}
}

// TestRenderPlacement: a template's namespace is the one it gives (from
// the parent's spec), the parent's when it gives none, and none for a
// cluster-scoped kind; the kinds say so, for the engine to LIST them.
func TestRenderPlacement(t *testing.T) {
	r := load(t, "../../testdata/graphs/outside.yaml", Options{})
	parent := webApp(t, `{"image": "nginx", "expose": true, "tags": ["shared-a"]}`)
	g, err := r.Render(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	where := func(g desired.Graph) []string {
		var out []string
		for _, c := range g.Children {
			out = append(out, c.GetKind()+" "+objectPath(c.GetNamespace(), c.GetName()))
		}
		return out
	}
	if diff := cmp.Diff([]string{"ConfigMap team/shop-home", "ConfigMap shared-a/team-shop"}, where(g)); diff != "" {
		t.Errorf("first pass (-want +got):\n%s", diff)
	}
	if len(g.Waiting) != 1 || g.Waiting[0].Message != "reader waits for shared: ConfigMap shared-a/team-shop does not exist yet" {
		t.Errorf("waiting = %+v", g.Waiting)
	}
	live := []desired.Child{{Kind: "ConfigMap", Namespace: "shared-a", Name: "team-shop", Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "team-shop", "namespace": "shared-a"}}}}
	if g, err = r.Render(parent, live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ConfigMap team/shop-home", "ConfigMap shared-a/team-shop", "ClusterRole team-shop-reader"}, where(g)); diff != "" {
		t.Errorf("with the shared ConfigMap live (-want +got):\n%s", diff)
	}
	// The same name in the parent's namespace is not the child it refers to.
	elsewhere := []desired.Child{{Kind: "ConfigMap", Namespace: "team", Name: "team-shop", Object: live[0].Object}}
	if g, err = r.Render(parent, elsewhere); err != nil || len(g.Waiting) != 1 {
		t.Errorf("a ConfigMap of the name in another namespace: waiting %v, err %v; want reader waiting", g.Waiting, err)
	}

	want := []desired.ChildType{
		{GVR: configMapsGVR, Kind: "ConfigMap", Keep: []string{"metadata.generation", "metadata.name", "spec.replicas", "spec.type", "spec.updateStrategy", "status"}, Anywhere: true},
		{GVR: clusterRolesGVR, Kind: "ClusterRole", Keep: []string{"metadata.generation", "spec.replicas", "spec.type", "spec.updateStrategy", "status"}, ClusterScoped: true},
	}
	if diff := cmp.Diff(want, r.ChildTypes()); diff != "" {
		t.Errorf("child types (-want +got):\n%s", diff)
	}
	wantPlaces := []Placement{
		{ID: "shared", Line: 21, APIVersion: "v1", Kind: "ConfigMap", Namespace: "${schema.spec.tags[0]}", NamespaceLine: 27, Expression: true},
		{ID: "reader", Line: 30, APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", ClusterScoped: true},
	}
	if diff := cmp.Diff(wantPlaces, r.Placements()); diff != "" {
		t.Errorf("placements (-want +got):\n%s", diff)
	}

	// A namespace that cannot be evaluated stalls the parent.
	_, err = r.Render(webApp(t, `{"image": "nginx", "tags": []}`), nil)
	var ie *desired.InvalidError
	if !errors.As(err, &ie) || ie.Field != "resources[shared].template.metadata.namespace" {
		t.Errorf("tags[0] of no tags: %v, want an EvaluationFailed of the namespace", err)
	}
	// One that evaluates to null leaves the child in its parent's.
	null, err := Parse("null.yaml", []byte(`{apiVersion: resyncd.io/v1alpha1, kind: Graph, metadata: {name: n}, spec: {resources: [
  {id: c, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: "${null}"}}}]}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g, err = null.Render(parent, nil); err != nil || len(g.Children) != 1 || g.Children[0].GetNamespace() != "team" {
		t.Errorf("a namespace of null: %v, err %v; want the ConfigMap in team", where(g), err)
	}
}

var (
	configMapsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	clusterRolesGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

// TestRenderWaitingPlace: a waiting child is named by its metadata.name
// and placed in its metadata.namespace, whichever the template writes
// first, so that the engine keeps that child alone from being pruned; a
// namespace that waits too is left empty (any), one not written is the
// parent's.
func TestRenderWaitingPlace(t *testing.T) {
	parent := webApp(t, `{"image": "nginx", "tags": ["shared-a"]}`)
	graph := func(metadata string) *Renderer {
		t.Helper()
		r, err := Parse("waits.yaml", []byte(`{apiVersion: resyncd.io/v1alpha1, kind: Graph, metadata: {name: w}, spec: {resources: [
  {id: config, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}, data: {ns: x}}},
  {id: web, template: {apiVersion: v1, kind: ConfigMap, metadata: `+metadata+`, data: {image: "${config.data.ns}"}}}]}}`), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name, metadata  string
		namespace, want string
	}{
		{"literal name after an expression namespace", `{namespace: "${schema.spec.tags[0]}", name: web}`, "shared-a", "web"},
		{"expression name after an expression namespace", `{namespace: "${schema.spec.tags[0]}", name: "${schema.metadata.name}-web"}`, "shared-a", "shop-web"},
		{"literal namespace", `{namespace: other, name: web}`, "other", "web"},
		{"no namespace", `{name: web}`, "team", "web"},
		{"a namespace that waits too", `{namespace: "${config.data.ns}", name: web}`, "", "web"},
		{"a name that waits too", `{namespace: other, name: "${config.data.ns}"}`, "other", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := graph(tc.metadata).Render(parent, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Waiting) != 1 || g.Waiting[0].Namespace != tc.namespace || g.Waiting[0].Name != tc.want {
				t.Errorf("waiting %+v, want web waiting as %q in %q", g.Waiting, tc.want, tc.namespace)
			}
		})
	}
	r := load(t, "../../testdata/graphs/waits-outside.yaml", Options{})
	g, err := r.Render(parent, nil)
	if err != nil || len(g.Waiting) != 1 || g.Waiting[0].Namespace != "shared-a" || g.Waiting[0].Name != "shop-web" {
		t.Errorf("waits-outside.yaml: waiting %+v, err %v; want shared-a/shop-web", g.Waiting, err)
	}
}
