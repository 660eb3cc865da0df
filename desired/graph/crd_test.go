package graph

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/resyncd/resyncd/internal/golden"
)

// TestCRDGolden: the CRD of each graph of testdata/kro, as `resyncd crd`
// prints it, in testdata/kro/crds.
func TestCRDGolden(t *testing.T) {
	for _, name := range corpus(t) {
		t.Run(name, func(t *testing.T) {
			crd, err := CRDOfFile(filepath.Join("..", "..", "testdata", "kro", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			out, err := CRDManifest(crd)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("..", "..", "testdata", "kro", "crds", name+".yaml"), string(out))
		})
	}
}

// TestCRDNames: group, names and resource as kro derives them.
func TestCRDNames(t *testing.T) {
	tests := []struct {
		group, kind, wantName, wantPlural string
	}{
		{"", "WebApplication", "webapplications.kro.run", "webapplications"},
		{"example.com", "Policy", "policies.example.com", "policies"},
		{"", "Person", "people.kro.run", "people"},
		{"", "Status", "statuses.kro.run", "statuses"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			s := &Schema{Group: tt.group, APIVersion: "v1alpha1", Kind: tt.kind}
			crd, err := CRD(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := crd.Spec.Names
			got := []string{crd.Name, n.Plural, n.Singular, n.ListKind, string(crd.Spec.Scope)}
			want := []string{tt.wantName, tt.wantPlural, strings.ToLower(tt.kind), tt.kind + "List", "Namespaced"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if gvr := s.GroupVersionResource(); gvr.Resource != tt.wantPlural || gvr.Group+"" != crd.Spec.Group {
				t.Errorf("GroupVersionResource() = %v, CRD %s", gvr, crd.Name)
			}
		})
	}
}

// TestCRDStatusTypes: a status field's schema is what the caller found,
// else what its value says.
func TestCRDStatusTypes(t *testing.T) {
	s := &Schema{APIVersion: "v1", Kind: "Thing", Status: map[string]any{
		"replicas": "${deployment.status.replicas}",
		"url":      "http://${service.metadata.name}",
		"unknown":  "${deployment.status}",
		"ports":    []any{"${a}", "${b}"},
		"nested":   map[string]any{"on": true, "n": int64(3), "f": 1.5},
		// resyncd writes these two, whatever the graph says.
		"conditions":         []any{"${[]}"},
		"observedGeneration": "${1}",
	}}
	crd, err := CRD(s, StatusTypes{
		"replicas": SchemaOfCELType(cel.IntType, nil),
		"ports[0]": SchemaOfCELType(cel.StringType, nil),
		"ports[1]": SchemaOfCELType(cel.StringType, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties
	yes := true
	want := map[string]extv1.JSONSchemaProps{
		"replicas": {Type: "integer"},
		"url":      {Type: "string"},
		"unknown":  {XPreserveUnknownFields: &yes},
		"ports":    {Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: &extv1.JSONSchemaProps{Type: "string"}}},
		"nested": {Type: "object", Properties: map[string]extv1.JSONSchemaProps{
			"on": {Type: "boolean"}, "n": {Type: "integer"}, "f": {Type: "number"},
		}},
		"observedGeneration": {Type: "integer", Format: "int64"},
		"conditions":         conditionsSchema(),
		"state":              {Type: "string"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestSchemaOfCELType: CEL's types as kro declares them in a status.
func TestSchemaOfCELType(t *testing.T) {
	yes := true
	str := &extv1.JSONSchemaProps{Type: "string"}
	tests := []struct {
		t    *cel.Type
		want *extv1.JSONSchemaProps
	}{
		{cel.BoolType, &extv1.JSONSchemaProps{Type: "boolean"}},
		{cel.IntType, &extv1.JSONSchemaProps{Type: "integer"}},
		{cel.UintType, &extv1.JSONSchemaProps{Type: "integer"}},
		{cel.DoubleType, &extv1.JSONSchemaProps{Type: "number"}},
		{cel.StringType, str},
		{cel.BytesType, &extv1.JSONSchemaProps{Type: "string", Format: "byte"}},
		{cel.TimestampType, &extv1.JSONSchemaProps{Type: "string", Format: "date-time"}},
		{cel.OptionalType(cel.StringType), str},
		{cel.ListType(cel.StringType), &extv1.JSONSchemaProps{Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: str}}},
		{cel.MapType(cel.StringType, cel.StringType), &extv1.JSONSchemaProps{Type: "object", AdditionalProperties: &extv1.JSONSchemaPropsOrBool{Allows: true, Schema: str}}},
		{cel.MapType(cel.IntType, cel.StringType), &extv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}},
		{cel.DynType, &extv1.JSONSchemaProps{XPreserveUnknownFields: &yes}},
		{cel.NullType, &extv1.JSONSchemaProps{XPreserveUnknownFields: &yes}},
		{cel.DurationType, &extv1.JSONSchemaProps{XPreserveUnknownFields: &yes}},
		{cel.ObjectType("unknown.Type"), &extv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}},
	}
	for _, tt := range tests {
		t.Run(tt.t.String(), func(t *testing.T) {
			if diff := cmp.Diff(tt.want, SchemaOfCELType(tt.t, nil)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestInferStatusTypes: offline, what reads only the parent is typed by
// the spec's schema, what reads a resource is not.
func TestInferStatusTypes(t *testing.T) {
	s := &Schema{
		APIVersion: "v1", Kind: "Thing",
		Spec:      map[string]any{"port": "integer", "tags": "[]string", "db": map[string]any{"host": "string"}},
		Status:    map[string]any{"port": "${schema.spec.port + 1}", "tags": "${schema.spec.tags}", "db": "${schema.spec.db}", "name": "${schema.metadata.name}", "live": "${svc.spec}", "bad": "${nope}"},
		Resources: []string{"svc"},
	}
	str := extv1.JSONSchemaProps{Type: "string"}
	want := StatusTypes{
		"port": {Type: "integer"},
		"tags": {Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: &str}},
		"db":   {Type: "object", Properties: map[string]extv1.JSONSchemaProps{"host": str}},
		"name": &str,
	}
	if diff := cmp.Diff(want, InferStatusTypes(s)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
