package graph

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/resyncd/resyncd/desired"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// TestFreeFormObject: a SimpleSchema `object` keeps unknown fields, so any
// field of it is read as dyn, as kro reads it: the graph loads typed
// offline, renders what the instance holds, and a field the instance
// lacks fails at evaluation, not at load. Objects that declare their
// fields stay closed: a misspelt field is still refused at load. A child
// kind's field that keeps unknown fields (a CRD's free-form config) is
// open in the same way, and one typed as only "keep unknown fields" is
// dyn where the API server's own typing hides it.
func TestFreeFormObject(t *testing.T) {
	const rgd = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: free}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Free
    spec:
      name: string
      nested: object
      closed:
        field: string | default="x"
  resources:
    - id: example
      template:
        apiVersion: kro.run/v1alpha1
        kind: AllowUnknown
        metadata: {name: "${schema.spec.name}"}
        spec:
          config: {foo: bar}
    - id: configmap
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data:
          foo: ${example.spec.config.foo}
          any: ${string(example.spec.anything)}
          nested: ${schema.spec.nested.field}
          deep: ${schema.spec.nested.a.b[1]}
          closed: CLOSED
`
	tests := []struct{ name, closed, want string }{
		{"free-form fields are dyn", "${schema.spec.closed.field}", ""},
		{"a declared object stays closed", "${schema.spec.closed.feild}",
			":31: resources[configmap].template.data.closed: ${schema.spec.closed.feild}: at 1:19: undefined field 'feild'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeGraph(t, strings.Replace(rgd, "CLOSED", tt.closed, 1))
			_, err := loadOffline(t, path, "")
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), path)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("offline (-want +got):\n%s", diff)
			}
		})
	}

	// Typed against the schemas a server would publish for both kinds.
	path := writeGraph(t, strings.Replace(rgd, "CLOSED", "${schema.spec.closed.field}", 1))
	p, err := ReadParentCRD(path, "")
	if err != nil {
		t.Fatal(err)
	}
	offline, err := p.Options("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	parentSchema, err := offline.Schemas.ResolveSchema(offline.Parent)
	if err != nil {
		t.Fatal(err)
	}
	yes := func(s spec.Schema) spec.Schema {
		s.Extensions = spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}
		return s
	}
	untyped := yes(spec.Schema{})
	allowUnknown := object(map[string]spec.Schema{
		"spec": object(map[string]spec.Schema{"config": yes(typed("object")), "anything": untyped}),
	})
	configMap := object(map[string]spec.Schema{"data": {SchemaProps: spec.SchemaProps{Type: []string{"object"},
		AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}}}})
	opts := Options{Parent: offline.Parent, ParentSchema: offline.ParentSchema, Schemas: schemas{
		offline.Parent: parentSchema,
		{Group: "kro.run", Version: "v1alpha1", Kind: "AllowUnknown"}: &allowUnknown,
		{Version: "v1", Kind: "ConfigMap"}:                            &configMap,
	}}
	r, err := Load(path, opts)
	if err != nil {
		t.Fatalf("typed by the server's schemas: %v", err)
	}

	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kro.run/v1alpha1", "kind": "Free",
		"metadata": map[string]any{"name": "f", "namespace": "ns", "uid": "u1"},
		"spec": map[string]any{"name": "ex", "nested": map[string]any{
			"field": "value", "a": map[string]any{"b": []any{"zero", "one"}}}},
	}}
	r.Default(parent)
	example := []desired.Child{{Kind: "AllowUnknown", Name: "ex", Object: map[string]any{
		"apiVersion": "kro.run/v1alpha1", "kind": "AllowUnknown",
		"metadata": map[string]any{"name": "ex", "namespace": "ns"},
		"spec":     map[string]any{"config": map[string]any{"foo": "bar"}, "anything": 7},
	}}}
	g, err := r.Render(parent, example)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	for _, c := range g.Children {
		if c.GetKind() == "ConfigMap" {
			data = c.Object["data"].(map[string]any)
		}
	}
	want := map[string]any{"foo": "bar", "any": "7", "nested": "value", "deep": "one", "closed": "x"}
	if diff := cmp.Diff(want, data); diff != "" {
		t.Errorf("the ConfigMap's data (-want +got):\n%s\nwaiting: %v", diff, g.Waiting)
	}

	// An instance without the field: that parent fails to render, with
	// the expression named; the graph itself loaded.
	unstructured.RemoveNestedField(parent.Object, "spec", "nested", "field")
	if _, err := r.Render(parent, example); err == nil || !strings.Contains(err.Error(), "${schema.spec.nested.field}") {
		t.Errorf("a free-form field the instance lacks: %v, want an error naming the expression", err)
	}
}
