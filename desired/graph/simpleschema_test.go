package graph

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// schemaJSON is a schema as compact JSON, to compare with what a test
// writes by hand.
func schemaJSON(t *testing.T, s *extv1.JSONSchemaProps) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// canonical is JSON text with its keys in the order schemaJSON has them.
func canonical(t *testing.T, text string) string {
	t.Helper()
	var s extv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		t.Fatal(err)
	}
	return schemaJSON(t, &s)
}

// specOf parses a SimpleSchema written as YAML: spec, and types after a
// line "---".
func specOf(t *testing.T, text string) (map[string]any, map[string]any) {
	t.Helper()
	specText, typesText, _ := strings.Cut(text, "---\n")
	var spec, types map[string]any
	if err := yaml.Unmarshal([]byte(specText), &spec); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(typesText), &types); err != nil {
		t.Fatal(err)
	}
	return spec, types
}

// TestParseSimpleSchema: each type and marker, as the OpenAPI schema of
// the spec's one field f (or, for required, of the spec).
func TestParseSimpleSchema(t *testing.T) {
	tests := []struct {
		name, spec string
		// want is the schema of the field f, as JSON.
		want string
	}{
		{"string", `f: string`, `{"type":"string"}`},
		{"integer", `f: integer`, `{"type":"integer"}`},
		{"boolean", `f: boolean`, `{"type":"boolean"}`},
		{"float", `f: float`, `{"type":"number"}`},
		{"object keeps unknown fields", `f: object`, `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{"spaces around the type", `f: "  string  |  description=x  "`, `{"description":"x","type":"string"}`},
		{"array", `f: "[]string"`, `{"type":"array","items":{"type":"string"}}`},
		{"array of arrays", `f: "[][]integer"`, `{"type":"array","items":{"type":"array","items":{"type":"integer"}}}`},
		{"map", `f: "map[string]integer"`, `{"type":"object","additionalProperties":{"type":"integer"}}`},
		{"map of arrays", `f: "map[string][]boolean"`, `{"type":"object","additionalProperties":{"type":"array","items":{"type":"boolean"}}}`},
		{"array of maps", `f: "[]map[string]float"`, `{"type":"array","items":{"type":"object","additionalProperties":{"type":"number"}}}`},
		{"nested object", "f:\n  a: string\n  b:\n    c: integer", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"integer"}}}}}`},
		{"nested defaults make the object default to {}", "f:\n  a: string | default=x\n  b: integer",
			`{"type":"object","properties":{"a":{"default":"x","type":"string"},"b":{"type":"integer"}},"default":{}}`},
		{"a required field keeps the object without a default", "f:\n  a: string | default=x\n  b: integer | required=true",
			`{"type":"object","required":["b"],"properties":{"a":{"default":"x","type":"string"},"b":{"type":"integer"}}}`},
		{"empty object", "f: {}", `{"type":"object","properties":{}}`},
		{"custom type", "f: Server\n---\nServer:\n  host: string\n  port: integer", `{"type":"object","properties":{"host":{"type":"string"},"port":{"type":"integer"}}}`},
		{"custom type in a list", "f: \"[]Server\"\n---\nServer:\n  host: string", `{"type":"array","items":{"type":"object","properties":{"host":{"type":"string"}}}}`},
		{"custom type in a map", "f: \"map[string]Port\"\n---\nPort: integer | minimum=1", `{"type":"object","additionalProperties":{"minimum":1,"type":"integer"}}`},
		{"custom types using custom types", "f: Employee\n---\nAddress:\n  city: string\nCompany:\n  hq: Address\nEmployee:\n  company: Company",
			`{"type":"object","properties":{"company":{"type":"object","properties":{"hq":{"type":"object","properties":{"city":{"type":"string"}}}}}}}`},
		{"markers on a custom type where used", "f: Name | description=who\n---\nName: string | maxLength=5",
			`{"description":"who","type":"string","maxLength":5}`},
		{"description", `f: string | description="A name, with spaces and \"quotes\""`, `{"description":"A name, with spaces and \"quotes\"","type":"string"}`},
		{"default string", `f: string | default=x`, `{"default":"x","type":"string"}`},
		{"default quoted string", `f: string | default="a b"`, `{"default":"a b","type":"string"}`},
		{"default empty string", `f: string | default=""`, `{"default":"","type":"string"}`},
		{"default integer", `f: integer | default=+5`, `{"default":5,"type":"integer"}`},
		{"default float", `f: float | default=.5`, `{"default":0.5,"type":"number"}`},
		{"default boolean", `f: boolean | default=T`, `{"default":true,"type":"boolean"}`},
		{"default array", `f: '[]string | default=["a", "b"]'`, `{"default":["a","b"],"type":"array","items":{"type":"string"}}`},
		{"default object", `f: 'map[string]integer | default={"a": 1}'`, `{"default":{"a":1},"type":"object","additionalProperties":{"type":"integer"}}`},
		{"minimum and maximum", `f: integer | minimum=-1 maximum=10`, `{"type":"integer","maximum":10,"minimum":-1}`},
		{"float bounds", `f: float | minimum=0.5 maximum=1e3`, `{"type":"number","maximum":1000,"minimum":0.5}`},
		{"enum of strings", `f: string | enum="a, b,c"`, `{"type":"string","enum":["a","b","c"]}`},
		{"enum of integers", `f: integer | enum="1,2"`, `{"type":"integer","enum":[1,2]}`},
		{"pattern keeps its backslashes", `f: string | pattern="^\d+\.\w$"`, `{"type":"string","pattern":"^\\d+\\.\\w$"}`},
		{"minLength and maxLength", `f: string | minLength=1 maxLength=63`, `{"type":"string","maxLength":63,"minLength":1}`},
		{"minItems and maxItems", `f: "[]string | minItems=0 maxItems=3"`, `{"type":"array","maxItems":3,"minItems":0,"items":{"type":"string"}}`},
		{"uniqueItems is a set", `f: "[]string | uniqueItems=true"`, `{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"}`},
		{"uniqueItems false says nothing", `f: "[]string | uniqueItems=false"`, `{"type":"array","items":{"type":"string"}}`},
		{"listType and listMapKey", "f: \"[]C | listType=map listMapKey=a listMapKey=b\"\n---\nC:\n  a: string | required=true\n  b: integer | default=1",
			`{"type":"array","items":{"type":"object","required":["a"],"properties":{"a":{"type":"string"},"b":{"default":1,"type":"integer"}}},"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["a","b"]}`},
		{"listType atomic", `f: "[]string | listType=atomic"`, `{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"atomic"}`},
		{"immutable", `f: string | immutable=true`, `{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"field is immutable"}]}`},
		{"immutable false says nothing", `f: string | immutable=false`, `{"type":"string"}`},
		{"validation", `f: integer | validation="self % 2 == 0"`, `{"type":"integer","x-kubernetes-validations":[{"rule":"self % 2 == 0","message":"validation failed"}]}`},
		{"required false says nothing", `f: string | required=false`, `{"type":"string"}`},
		{"several markers", `f: string | required=true default=b enum="a,b" description="d"`, `{"description":"d","default":"b","type":"string","enum":["a","b"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, types := specOf(t, tt.spec)
			s, err := ParseSimpleSchema(spec, types)
			if err != nil {
				t.Fatal(err)
			}
			f := s.Properties["f"]
			if diff := cmp.Diff(canonical(t, tt.want), schemaJSON(t, &f)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseSimpleSchemaRequired: required=true, on a field or on the
// custom type a field has, lists the field in its object's required.
func TestParseSimpleSchemaRequired(t *testing.T) {
	spec, types := specOf(t, "b: string | required=true\na: string | required=true required=true\nc: ID\nd: string\n---\nID: string | required=true")
	s, err := ParseSimpleSchema(spec, types)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, s.Required); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if s.Default != nil {
		t.Errorf("an object with required fields has the default %s", s.Default.Raw)
	}
}

// TestParseSimpleSchemaErrors: every problem names its field and what is
// wrong; all of a schema's problems are listed.
func TestParseSimpleSchemaErrors(t *testing.T) {
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"empty type", `f: " | default=1"`, []string{`spec.f: type "": is empty: a field needs a type (string, integer, boolean, float, object, []T, map[string]T or a type of types)`}},
		{"unknown type", `f: strin`, []string{`spec.f: unknown type "strin": not a SimpleSchema type (string, integer, boolean, float, object, []T, map[string]T) nor one of types`}},
		{"unknown type, with the types there are", "f: Srv\n---\nServer: {host: string}\nPort: integer", []string{`spec.f: unknown type "Srv": not a SimpleSchema type (string, integer, boolean, float, object, []T, map[string]T) nor one of types (Port, Server)`}},
		{"number is float", `f: number`, []string{`spec.f: unknown type "number": not a SimpleSchema type (string, integer, boolean, float, object, []T, map[string]T) nor one of types; SimpleSchema spells it float`}},
		{"array without element", `f: "[]"`, []string{`spec.f: type "[]": [] needs an element type, as in []string`}},
		{"map with integer keys", `f: "map[integer]string"`, []string{`spec.f: type "map[integer]string": a map's keys must be strings, as in map[string]integer`}},
		{"map without value", `f: "map[string]"`, []string{`spec.f: type "map[string]": map[string] needs a value type, as in map[string]string`}},
		{"too deep", `f: "` + strings.Repeat("[]", 17) + `string"`, []string{`spec.f: type "` + strings.Repeat("[]", 17) + `string": nests deeper than 16 levels`}},
		{"not a type string", "f: 3", []string{`spec.f: is a number; a field is a type string ("integer | default=1") or a mapping of nested fields`}},
		{"a list", "f: [string]", []string{`spec.f: is a list; a field is a type string ("integer | default=1") or a mapping of nested fields`}},
		{"nothing", "f:", []string{`spec.f: is empty; a field is a type string ("integer | default=1") or a mapping of nested fields`}},
		{"nested", "a:\n  b:\n    c: integr", []string{`spec.a.b.c: unknown type "integr": not a SimpleSchema type (string, integer, boolean, float, object, []T, map[string]T) nor one of types`}},
		{"unknown marker", `f: string | requird=true`, []string{`spec.f: markers "requird=true": unknown marker "requird"; known: ` + strings.Join(markerKeys, ", ")}},
		{"marker without value", `f: string | required`, []string{`spec.f: markers "required": "required" has no value; write required=VALUE`}},
		{"nothing after |", `f: "string |"`, []string{`spec.f: markers "": no marker after "|"; write key=value, as in default=1`}},
		{"unclosed quote", `f: string | description="abc`, []string{`spec.f: markers "description=\"abc": a quote is not closed`}},
		{"unclosed bracket", `f: '[]string | default=["a"'`, []string{`spec.f: markers "default=[\"a\"": a bracket or brace is not closed`}},
		{"closing bracket", `f: '[]string | default=]'`, []string{`spec.f: markers "default=]": ']' closes a bracket that is not open`}},
		{"required not a boolean", `f: string | required=yes`, []string{`spec.f: required=yes: must be true or false`}},
		{"immutable not a boolean", `f: string | immutable=1x`, []string{`spec.f: immutable=1x: must be true or false`}},
		{"default not an integer", `f: integer | default=1.5`, []string{`spec.f: default=1.5: is not an integer`}},
		{"default not a float", `f: float | default=NaN`, []string{`spec.f: default=NaN: is not a number`}},
		{"default not a boolean", `f: boolean | default=yes`, []string{`spec.f: default=yes: must be true or false`}},
		{"default not JSON", `f: "[]string | default=a"`, []string{`spec.f: default=a: is not JSON, which the default of an array field is`}},
		{"default of another type", `f: '[]string | default={}'`, []string{`spec.f: default={}: is a mapping, the field is an array`}},
		{"default with items of another type", `f: '[]integer | default=["a"]'`, []string{`spec.f: ["a"] does not fit the field: default[0]: Invalid value: "string": default[0] in body must be of type integer: "string"`}},
		{"default not in enum", `f: string | enum="a,b" default=c`, []string{`spec.f: "c" does not fit the field: default: Unsupported value: "c": supported values: "a", "b"`}},
		{"default below minimum", `f: integer | default=0 minimum=1`, []string{`spec.f: 0 does not fit the field: default: Invalid value: 0: default in body should be greater than or equal to 1`}},
		{"default not matching pattern", `f: string | default=X pattern="^[a-z]+$"`, []string{`spec.f: "X" does not fit the field: default: Invalid value: "X": default in body should match '^[a-z]+$'`}},
		{"default lacking a required field", "f: 'S | default={}'\n---\nS:\n  a: string | required=true", []string{`spec.f: {} does not fit the field: default.a: Required value`}},
		{"minimum not a number", `f: integer | minimum=low`, []string{`spec.f: minimum=low: is not a number`}},
		{"maximum not a number", `f: integer | maximum=Inf`, []string{`spec.f: maximum=Inf: is not a number`}},
		{"enum on a boolean", `f: boolean | enum="true"`, []string{`spec.f: enum=true: applies to string and integer fields only, this one is boolean`}},
		{"enum with an empty value", `f: string | enum="a,,b"`, []string{`spec.f: enum=a,,b: has an empty value; list values apart by commas, as in enum="a,b"`}},
		{"enum not an integer", `f: integer | enum="1,x"`, []string{`spec.f: enum=1,x: value "x": is not an integer`}},
		{"pattern on an integer", `f: integer | pattern="^1$"`, []string{`spec.f: pattern=^1$: applies to string fields only, this one is integer`}},
		{"empty pattern", `f: string | pattern=""`, []string{`spec.f: pattern=: needs a regular expression`}},
		{"bad pattern", `f: string | pattern="(a"`, []string{"spec.f: pattern=(a: is not a regular expression: error parsing regexp: missing closing ): `(a`"}},
		{"minLength on an array", `f: "[]string | minLength=1"`, []string{`spec.f: minLength=1: applies to string fields only, this one is an array`}},
		{"maxLength negative", `f: string | maxLength=-1`, []string{`spec.f: maxLength=-1: must be a whole number, 0 or more`}},
		{"minItems on a string", `f: string | minItems=1`, []string{`spec.f: minItems=1: applies to array fields only, this one is string`}},
		{"maxItems not a number", `f: "[]string | maxItems=ten"`, []string{`spec.f: maxItems=ten: must be a whole number, 0 or more`}},
		{"uniqueItems on an object", `f: "map[string]string | uniqueItems=true"`, []string{`spec.f: uniqueItems=true: applies to array fields only, this one is an object`}},
		{"uniqueItems not a boolean", `f: "[]string | uniqueItems=on"`, []string{`spec.f: uniqueItems=on: must be true or false`}},
		{"listType unknown", `f: "[]string | listType=bag"`, []string{`spec.f: listType=bag: must be atomic, set or map`}},
		{"listType on a string", `f: string | listType=set`, []string{`spec.f: listType=set: applies to array fields only, this one is string`}},
		{"listType contradicts uniqueItems", `f: "[]string | uniqueItems=true listType=map"`, []string{`spec.f: listType=map: contradicts listType set set before (uniqueItems=true is listType=set)`}},
		{"listMapKey without listType map", "f: \"[]C | listMapKey=a\"\n---\nC: {a: string}", []string{`spec.f: listMapKey needs listType=map`}},
		{"listMapKey twice", "f: \"[]C | listType=map listMapKey=a listMapKey=a\"\n---\nC: {a: string}", []string{`spec.f: listMapKey=a: is given twice`}},
		{"listMapKey on a map", `f: "map[string]string | listMapKey=a"`, []string{`spec.f: listMapKey=a: applies to array fields only, this one is an object`}},
		{"empty validation", `f: string | validation=""`, []string{`spec.f: validation=: needs a CEL rule`}},
		{"cycle", "f: Person\n---\nPerson:\n  employer: Company\nCompany:\n  staff: \"[]Person\"", []string{
			`types.Person.employer: types refer to each other in a cycle: Company → Person → Company; break it with an inline mapping or object`}},
		{"type referring to itself", "f: string\n---\nNode:\n  next: Node", []string{
			`types.Node.next: types refer to each other in a cycle: Node → Node; break it with an inline mapping or object`}},
		{"a bad type is reported where it is declared, once", "a: Port\nb: \"[]Port\"\n---\nPort: integer | minimum=x", []string{
			`types.Port: minimum=x: is not a number`}},
		{"a type that is not a type", "f: string\n---\nT: 3", []string{
			`types.T: is a number; a type is a type string ("string | default=x") or a mapping of fields`}},
		{"every problem, in order", "b: strng\na: integer | default=x", []string{
			`spec.a: default=x: is not an integer`,
			`spec.b: unknown type "strng": not a SimpleSchema type (string, integer, boolean, float, object, []T, map[string]T) nor one of types`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, types := specOf(t, tt.spec)
			_, err := ParseSimpleSchema(spec, types)
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want *SchemaError", err, err)
			}
			var got []string
			for _, p := range se.Problems {
				got = append(got, p.Field()+": "+p.Message)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if se.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("Error() = %q", se.Error())
			}
		})
	}
}

// FuzzParseSimpleSchema: any field string and type is either a schema or
// an error, never a panic.
func FuzzParseSimpleSchema(f *testing.F) {
	for _, s := range []string{"string | default=x", `[]map[string]T | listType=map listMapKey="a" default=[{"a":1}]`,
		`integer | enum="1,2" minimum=0`, `T | description="a \"b\" \\"`, "map[string][]float | default={}"} {
		f.Add(s, "integer | default=1")
	}
	f.Fuzz(func(t *testing.T, field, typ string) {
		s, err := ParseSimpleSchema(map[string]any{"f": field, "g": map[string]any{"h": field}}, map[string]any{"T": typ, "U": map[string]any{"t": "T"}})
		if (s == nil) == (err == nil) {
			t.Fatalf("schema %v and error %v", s, err)
		}
	})
}
