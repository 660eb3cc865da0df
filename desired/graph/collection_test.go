package graph

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/resyncd/resyncd/desired"
)

const fanOut = "../../testdata/kro/fan-out.yaml"

// fanOutParent is a FanOut named demo with spec, its defaults applied.
func fanOutParent(t *testing.T, r *Renderer, spec string) *unstructured.Unstructured {
	t.Helper()
	p := decode(t, []byte(`{"apiVersion": "kro.run/v1alpha1", "kind": "FanOut",
		"metadata": {"name": "demo", "namespace": "team", "uid": "u-1"}, "spec": `+spec+`}`))
	r.Default(p)
	return p
}

// liveOf is what the engine would have LISTed of objs: each as it was
// rendered.
func liveOf(objs ...*unstructured.Unstructured) []desired.Child {
	var out []desired.Child
	for _, o := range objs {
		out = append(out, desired.Child{Kind: o.GetKind(), Name: o.GetName(), Object: o.DeepCopy().Object})
	}
	return out
}

// TestCollectionCartesian: two iterators make one child for each pair,
// the first iterator the outer loop, each item's template filled with its
// pair; what refers to the collection waits until every item exists,
// then reads the list of their live objects and refers to each of them.
func TestCollectionCartesian(t *testing.T) {
	r := load(t, fanOut, Options{})
	parent := fanOutParent(t, r, `{"regions": ["eu", "us"], "tiers": ["web", "api"], "image": "nginx:2"}`)

	g, err := r.Render(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	items := []string{"ConfigMap/demo-eu-web", "ConfigMap/demo-eu-api", "ConfigMap/demo-us-web", "ConfigMap/demo-us-api"}
	if diff := cmp.Diff(items, kinds(g)); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	for i, want := range [][2]string{{"eu", "web"}, {"eu", "api"}, {"us", "web"}, {"us", "api"}} {
		data, _, _ := unstructured.NestedStringMap(g.Children[i].Object, "data")
		if diff := cmp.Diff(map[string]string{"region": want[0], "tier": want[1], "image": "nginx:2"}, data); diff != "" {
			t.Errorf("item %d data (-want +got):\n%s", i, diff)
		}
	}
	wantWaiting := []desired.Waiting{{ID: "summary", Kind: "ConfigMap", Name: "demo-summary", Namespace: "team", Reason: "WaitingForConfigs",
		Message: "summary waits for configs: 4 of its 4 items do not exist yet, the first ConfigMap team/demo-eu-web"}}
	if diff := cmp.Diff(wantWaiting, g.Waiting); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}

	// Three of four exist: the summary still waits, for the fourth.
	live := liveOf(g.Children[:3]...)
	g2, err := r.Render(parent, live)
	if err != nil {
		t.Fatal(err)
	}
	if len(g2.Waiting) != 1 || !strings.Contains(g2.Waiting[0].Message, "1 of its 4 items do not exist yet, the first ConfigMap team/demo-us-api") {
		t.Errorf("waiting with 3 of 4 items: %v", g2.Waiting)
	}

	live = liveOf(g.Children...)
	g, err = r.Render(parent, live)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(items, "ConfigMap/demo-summary"), kinds(g)); diff != "" {
		t.Errorf("children once the items exist (-want +got):\n%s", diff)
	}
	if got, _, _ := unstructured.NestedString(g.Children[4].Object, "data", "configs"); got != "demo-eu-web,demo-eu-api,demo-us-web,demo-us-api" {
		t.Errorf("summary data.configs = %q, want the items' names in order", got)
	}
	if diff := cmp.Diff([][]int{nil, nil, nil, nil, {0, 1, 2, 3}}, g.Refs); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
}

// TestCollectionIncludeWhen: includeWhen includes or leaves out the whole
// collection; an empty list makes an empty collection, which waits for
// nothing and is ready.
func TestCollectionIncludeWhen(t *testing.T) {
	r := load(t, fanOut, Options{})
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"off", `{"backups": {"enabled": false, "shards": 3}}`, []string{"ConfigMap/demo-eu-web"}},
		{"on", `{"backups": {"enabled": true, "shards": 3}}`,
			[]string{"ConfigMap/demo-eu-web", "ConfigMap/demo-backup-0", "ConfigMap/demo-backup-1", "ConfigMap/demo-backup-2"}},
		{"on, no shards", `{"backups": {"enabled": true, "shards": 0}}`, []string{"ConfigMap/demo-eu-web"}},
		{"no tiers", `{"tiers": [], "backups": {"enabled": true, "shards": 1}}`, []string{"ConfigMap/demo-backup-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := r.Render(fanOutParent(t, r, tt.spec), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range kinds(g) {
				if k != "ConfigMap/demo-summary" {
					got = append(got, k)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
		})
	}
	// No tiers: no item, so the summary waits for nothing.
	g, err := r.Render(fanOutParent(t, r, `{"tiers": []}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Waiting) != 0 || len(g.Children) != 1 {
		t.Fatalf("an empty collection: children %v, waiting %v; want the summary alone", kinds(g), g.Waiting)
	}
	if got, _, _ := unstructured.NestedString(g.Children[0].Object, "data", "configs"); got != "" {
		t.Errorf("summary of no items: %q", got)
	}
}

// TestCollectionLimit: more than MaxCollectionSize items is an
// InvalidError that names the resource and the size, found before any
// item is rendered; exactly the limit renders.
func TestCollectionLimit(t *testing.T) {
	r := load(t, fanOut, Options{})
	list := func(n int) string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%q", fmt.Sprint("x", i)))
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	_, err := r.Render(fanOutParent(t, r, `{"regions": `+list(11)+`, "tiers": `+list(91)+`}`), nil)
	var ie *desired.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("1,001 items: err %v, want an InvalidError", err)
	}
	want := desired.InvalidError{Reason: ReasonCollectionTooLarge, Field: "resources[configs].forEach",
		Message: "would make 1001 items (11 × 91); a collection makes at most 1000: shorten the lists it iterates over"}
	if diff := cmp.Diff(want, *ie); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	st, err := r.Status(fanOutParent(t, r, `{"regions": `+list(11)+`, "tiers": `+list(91)+`}`), desired.Observation{})
	if err != nil || st.Readiness.Reason != ReasonCollectionTooLarge {
		t.Errorf("status: %v, readiness %+v; want CollectionTooLarge", err, st.Readiness)
	}

	g, err := r.Render(fanOutParent(t, r, `{"regions": `+list(10)+`, "tiers": `+list(100)+`}`), nil)
	if err != nil || len(g.Children) != 1000 {
		t.Fatalf("1,000 items: %d children, err %v", len(g.Children), err)
	}
}

// TestCollectionLimitBeforeEvaluation: a list far over the limit stalls
// the parent without an item evaluated: the budget of a parent is not
// spent on items that will never be written.
func TestCollectionLimitBeforeEvaluation(t *testing.T) {
	r, err := Parse("g.yaml", []byte(`apiVersion: resyncd.io/v1alpha1
kind: Graph
spec:
  resources:
    - id: shards
      forEach:
        - shard: ${lists.range(schema.spec.n)}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}-${string(shard)}"}
        data: {big: "${lists.range(100).map(i, string(shard)).join(',')}"}
`), Options{CostBudget: 200_000})
	if err != nil {
		t.Fatal(err)
	}
	parent := decode(t, []byte(`{"apiVersion": "v1", "kind": "P", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"n": 50000}}`))
	_, err = r.Render(parent, nil)
	var ie *desired.InvalidError
	if !errors.As(err, &ie) || ie.Reason != ReasonCollectionTooLarge || !strings.Contains(ie.Message, "would make 50000 items;") {
		t.Errorf("err %v, want CollectionTooLarge for 50000 items", err)
	}
	// Within the limit, the items together spend the parent's budget.
	parent.Object["spec"] = map[string]any{"n": int64(1000)}
	if _, err = r.Render(parent, nil); !errors.As(err, &ie) || ie.Reason != ReasonCostExceeded {
		t.Errorf("1,000 costly items: err %v, want CostExceeded", err)
	}
}

// TestCollectionDuplicateNames: two items with one name make the parent
// invalid, with the resource and the name.
func TestCollectionDuplicateNames(t *testing.T) {
	r := load(t, fanOut, Options{})
	_, err := r.Render(fanOutParent(t, r, `{"regions": ["eu", "us", "eu"]}`), nil)
	var ie *desired.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("err %v, want an InvalidError", err)
	}
	want := desired.InvalidError{Reason: ReasonDuplicateName, Field: "resources[configs].template.metadata.name",
		Message: "items 0 and 2 of the collection are both ConfigMap team/demo-eu-web: each item needs a name of its own; make the name of every iterator, and the parent's name"}
	if diff := cmp.Diff(want, *ie); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestCollectionReadiness: the parent is ready when every item exists and
// holds the readyWhen, judged with the item as each; the status fields
// that read the collection appear once every item exists.
func TestCollectionReadiness(t *testing.T) {
	r := load(t, fanOut, Options{})
	parent := fanOutParent(t, r, `{"regions": ["eu", "us"]}`)
	g, err := r.Render(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	items := liveOf(g.Children...)
	summary := desired.Child{Kind: "ConfigMap", Name: "demo-summary", Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "demo-summary"}}}
	notReady := liveOf(g.Children...)
	notReady[1].Object["data"].(map[string]any)["tier"] = ""
	tests := []struct {
		name       string
		live       []desired.Child
		want       desired.Readiness
		wantFields map[string]any
	}{
		{"none", nil, desired.Readiness{Reason: "WaitingForConfigs",
			Message: "summary waits for configs: 2 of its 2 items do not exist yet, the first ConfigMap team/demo-eu-web"}, map[string]any{}},
		{"one missing", append(items[:1:1], summary), desired.Readiness{Reason: "WaitingForConfigs",
			Message: "summary waits for configs: 1 of its 2 items do not exist yet, the first ConfigMap team/demo-us-web"}, map[string]any{}},
		{"one not ready", append(notReady, summary), desired.Readiness{Reason: "ConfigsNotReady",
			Message: "ConfigMap team/demo-us-web: readyWhen ${each.data.tier != ''} is false"},
			map[string]any{"configs": int64(2), "names": "demo-eu-web,demo-us-web"}},
		{"ready", append(items, summary), desired.Readiness{Ready: true, Reason: "Ready", Message: "3 of 3 resources ready"},
			map[string]any{"configs": int64(2), "names": "demo-eu-web,demo-us-web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := desired.Observation{Children: tt.live}
			if g, err := r.Render(parent, tt.live); err == nil {
				obs.Waiting = g.Waiting
			}
			st, err := r.Status(parent, obs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, st.Readiness); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFields, st.Fields); diff != "" {
				t.Errorf("status fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCollectionKeep: the engine keeps of the items' live objects what
// readyWhen reads of each, and what the summary and the status read of the
// collection.
func TestCollectionKeep(t *testing.T) {
	r := load(t, fanOut, Options{})
	cts := r.ChildTypes()
	if len(cts) != 1 || cts[0].Kind != "ConfigMap" {
		t.Fatalf("child types %+v, want ConfigMaps", cts)
	}
	// configs.map(c, …) reads the whole of each item; kstatus, for the
	// backups without readyWhen, reads status and the rest.
	if diff := cmp.Diff([]string{""}, cts[0].Keep); diff != "" {
		t.Errorf("keep (-want +got):\n%s", diff)
	}
	r, err := Parse("g.yaml", []byte(`apiVersion: resyncd.io/v1alpha1
kind: Graph
spec:
  resources:
    - id: pods
      forEach: [{worker: "${schema.spec.workers}"}]
      readyWhen: ["${each.status.phase == 'Running'}"]
      template: {apiVersion: v1, kind: Pod, metadata: {name: "${worker}"}}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"status.phase"}, r.ChildTypes()[0].Keep); diff != "" {
		t.Errorf("keep of each (-want +got):\n%s", diff)
	}
}

// schemas is a SchemaResolver of fixed schemas.
type schemas map[schema.GroupVersionKind]*spec.Schema

func (s schemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if sc, ok := s[gvk]; ok {
		return sc, nil
	}
	return nil, fmt.Errorf("no schema of %s", gvk)
}

func object(props map[string]spec.Schema) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: props}}
}

func typed(typ string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{typ}}}
}

// TestCollectionTypes: with schemas, an iterator has the type of its
// list's items and each the type of the collection's kind, and both are
// checked against where they go; the costs estimated are those of kro's
// idioms: lists.range over a count of the spec, a join of the items'
// names.
func TestCollectionTypes(t *testing.T) {
	regions := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, MaxItems: ptr(int64(50)),
		Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, MaxLength: ptr(int64(20))}}}}}
	meta := object(map[string]spec.Schema{"name": typed("string")})
	opts := Options{Parent: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "App"}, Schemas: schemas{
		{Group: "example.com", Version: "v1", Kind: "App"}: ptr(object(map[string]spec.Schema{"metadata": meta,
			"spec": object(map[string]spec.Schema{"regions": regions, "count": typed("integer")})})),
		{Version: "v1", Kind: "ConfigMap"}: ptr(object(map[string]spec.Schema{"metadata": meta,
			"data": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: ptr(typed("string"))}}}})),
		{Group: "apps", Version: "v1", Kind: "Deployment"}: ptr(object(map[string]spec.Schema{"metadata": meta,
			"spec":   object(map[string]spec.Schema{"replicas": typed("integer")}),
			"status": object(map[string]spec.Schema{"readyReplicas": typed("integer")})})),
	}}
	graph := `apiVersion: resyncd.io/v1alpha1
kind: Graph
spec:
  resources:
    - id: deployments
      forEach:
        - region: ${schema.spec.regions}
        - %s
      readyWhen: ["%s"]
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${region}-${string(n)}"}
        spec: {replicas: "%s"}
`
	// The collection is a list of up to 1,000 Deployments, each name at
	// most 253 characters: the summary costs what joining those costs.
	summary := `    - id: summary
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: summary}
        data: {names: "${deployments.map(d, d.metadata.name).join(',')}"}
`
	tests := []struct {
		name, iterator, ready, replicas, want string
	}{
		{"fits", "n: ${lists.range(3)}", "${each.status.readyReplicas == 1}", "${n}", ""},
		{"an iterator's type", "n: ${lists.range(3)}", "${each.status.readyReplicas == 1}", "${region}",
			`g.yaml:14: resources[deployments].template.spec.replicas: ${region} is of type string, but Deployment's spec.replicas is int`},
		{"each's type", "n: ${lists.range(3)}", "${each.status.readyReplicas}", "${n}",
			`g.yaml:9: resources[deployments].readyWhen[0]: ${each.status.readyReplicas} is of type int, but readyWhen is bool`},
		{"a range of the spec's count", "n: ${lists.range(schema.spec.count)}", "${each.status.readyReplicas == 1}", "${n}", ""},
		{"not a list", "n: ${schema.spec.count}", "${each.status.readyReplicas == 1}", "${n}",
			`g.yaml:8: resources[deployments].forEach[1].n: ${schema.spec.count} is of type int, but a forEach iterates over a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte(fmt.Sprintf(graph+summary, tt.iterator, tt.ready, tt.replicas)), opts)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCollectionChained: a collection may iterate over another: it waits
// until every item of that one exists, then makes an item for each of
// their live objects, referring to all of them.
func TestCollectionChained(t *testing.T) {
	r, err := Parse("g.yaml", []byte(`apiVersion: resyncd.io/v1alpha1
kind: Graph
spec:
  resources:
    - id: databases
      forEach: [{db: "${schema.spec.databases}"}]
      template:
        apiVersion: v1
        kind: Secret
        metadata: {name: "${schema.metadata.name}-${db}"}
    - id: backups
      forEach: [{database: "${databases}"}]
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${database.metadata.name}-backup"}
        data: {uid: "${database.metadata.uid}"}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	parent := decode(t, []byte(`{"apiVersion": "v1", "kind": "P", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"databases": ["a", "b"]}}`))
	g, err := r.Render(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Secret/p-a", "Secret/p-b"}, kinds(g)); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	if len(g.Waiting) != 1 || g.Waiting[0].Reason != "WaitingForDatabases" || g.Waiting[0].Name != "" {
		t.Errorf("waiting %+v, want the backups waiting for the databases, their names unknown", g.Waiting)
	}
	var live []desired.Child
	for i, c := range g.Children {
		o := c.DeepCopy()
		o.SetUID(types.UID(fmt.Sprint("uid-", i)))
		live = append(live, desired.Child{Kind: "Secret", Name: o.GetName(), Object: o.Object})
	}
	g, err = r.Render(parent, live)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Secret/p-a", "Secret/p-b", "ConfigMap/p-a-backup", "ConfigMap/p-b-backup"}, kinds(g)); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	if uid, _, _ := unstructured.NestedString(g.Children[3].Object, "data", "uid"); uid != "uid-1" {
		t.Errorf("p-b-backup data.uid = %q, want the live uid of p-b", uid)
	}
	if diff := cmp.Diff([][]int{nil, nil, {0, 1}, {0, 1}}, g.Refs); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
}

// TestCollectionUntypedKind: a collection of a kind with no schema (as
// offline, the parent typed by spec.schema) is still a list of at most
// 1,000 items: joining their names is within the estimate.
func TestCollectionUntypedKind(t *testing.T) {
	meta := object(map[string]spec.Schema{"name": typed("string")})
	opts := Options{Parent: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "App"}, Schemas: schemas{
		{Group: "example.com", Version: "v1", Kind: "App"}: ptr(object(map[string]spec.Schema{"metadata": meta,
			"spec": object(map[string]spec.Schema{"count": typed("integer")})})),
		// No type: the kind's objects are of any value.
		{Group: "example.com", Version: "v1", Kind: "Widget"}: {},
		{Version: "v1", Kind: "ConfigMap"}:                    {},
	}}
	_, err := Parse("g.yaml", []byte(`apiVersion: resyncd.io/v1alpha1
kind: Graph
spec:
  resources:
    - id: widgets
      forEach: [{n: "${lists.range(schema.spec.count)}"}]
      template:
        apiVersion: example.com/v1
        kind: Widget
        metadata: {name: "${schema.metadata.name}-${string(n)}"}
    - id: summary
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data: {names: "${widgets.map(w, w.metadata.name).join(',')}"}
`), opts)
	if err != nil {
		t.Fatal(err)
	}
}
