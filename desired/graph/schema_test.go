package graph

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseSchemaErrors: each problem of a graph file's spec.schema names
// the file, the line and the field.
func TestParseSchemaErrors(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"not a graph", "apiVersion: v1\nkind: ConfigMap\n", []string{
			`g.yaml:1: apiVersion, kind: are "v1", "ConfigMap"; a graph file is a kro.run/v1alpha1 ResourceGraphDefinition (or ResourceGroup) or a resyncd.io/v1alpha1 Graph`}},
		{"old kro fields", "apiVersion: kro.run/v1alpha1\nkind: ResourceGroup\nspec:\n  schema:\n    apiVersion: v1\n    kind: Q\n    validation: [{expression: 'true'}]\n    spec: {a: striing}\n", []string{
			`g.yaml:8: spec.schema.spec.a: unknown type "striing": not a SimpleSchema type (string, integer, boolean, float, object, []T, map[string]T) nor one of types`}},
		{"no schema", "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nspec:\n  resources: []\n", []string{
			"g.yaml:4: spec.schema: is missing: the parent kind and its CRD are declared there (apiVersion, kind, spec)"}},
		{"bad names", `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
spec:
  schema:
    apiVersion: kro.run/v1
    kind: web-app
    scope: Global
    colour: red
`, []string{
			`g.yaml:5: spec.schema.apiVersion: "kro.run/v1" is not a version such as v1, v1alpha1 or v2beta1 (the group goes in spec.schema.group)`,
			`g.yaml:6: spec.schema.kind: "web-app" is not a kind: an upper-case letter, then up to 62 letters and digits`,
			`g.yaml:7: spec.schema.scope: is "Global", must be Namespaced or Cluster`,
			`g.yaml:8: spec.schema.colour: unknown key; known here: apiVersion, kind, group, scope, spec, types, status, additionalPrinterColumns, shortNames, categories, metadata, validation`,
		}},
		{"simple schema", `apiVersion: resyncd.io/v1alpha1
kind: Graph
spec:
  schema:
    apiVersion: v1
    kind: App
    spec:
      replicas: integer | default=many
      db:
        port: Port
    additionalPrinterColumns:
      - {name: X, type: string}
`, []string{
			`g.yaml:8: spec.schema.spec.replicas: default=many: is not an integer`,
			`g.yaml:10: spec.schema.spec.db.port: unknown type "Port": not a SimpleSchema type (string, integer, boolean, float, object, []T, map[string]T) nor one of types`,
			`g.yaml:12: spec.schema.additionalPrinterColumns[0].jsonPath: is missing`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSchema("g.yaml", []byte(tt.body))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if diff := cmp.Diff(tt.want, e.Problems); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseSchema: what each kind of graph file declares.
func TestParseSchema(t *testing.T) {
	for _, head := range []string{"apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition", "apiVersion: kro.run/v1alpha1\nkind: ResourceGroup", "apiVersion: resyncd.io/v1alpha1\nkind: Graph"} {
		s, err := ParseSchema("g.yaml", []byte(head+`
spec:
  schema:
    apiVersion: v2
    kind: Q
    group: q.example.com
    spec: {n: integer}
    status: {n: "${schema.spec.n}"}
  resources: [{id: a}, {id: b}]
`))
		if err != nil {
			t.Fatal(err)
		}
		want := &Schema{APIVersion: "v2", Kind: "Q", Group: "q.example.com", Scope: "Namespaced",
			Spec: map[string]any{"n": "integer"}, Status: map[string]any{"n": "${schema.spec.n}"}, Resources: []string{"a", "b"}}
		if diff := cmp.Diff(want, s); diff != "" {
			t.Errorf("%s (-want +got):\n%s", strings.SplitN(head, "\n", 2)[1], diff)
		}
	}
}

// FuzzParseSchema: any file is a schema or an error, never a panic.
func FuzzParseSchema(f *testing.F) {
	f.Add([]byte("apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nspec:\n  schema:\n    apiVersion: v1\n    kind: A\n    spec: {a: '[]B | minItems=1'}\n    types: {B: {c: string | default=x}}\n"))
	f.Add([]byte("apiVersion: resyncd.io/v1alpha1\nkind: Graph\nspec: {schema: {apiVersion: v1, kind: A, additionalPrinterColumns: [{name: a, type: string, jsonPath: .a}]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchema("f.yaml", data)
		if (s == nil) == (err == nil) {
			t.Fatalf("schema %v and error %v", s, err)
		}
		if err == nil {
			if _, err := CRD(s, InferStatusTypes(s)); err != nil {
				var se *SchemaError
				if errors.As(err, &se) {
					t.Fatalf("a schema ParseSchema accepted fails: %v", err)
				}
			}
		}
	})
}
