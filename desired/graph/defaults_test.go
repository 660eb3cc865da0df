package graph

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// TestDefaulter: a parent written without the fields its schema defaults
// gets them at every depth: in objects left out, in list items and in map
// values; what it sets is kept.
func TestDefaulter(t *testing.T) {
	tests := []struct {
		graph, parent, want string
	}{
		{"legacy-queue", `spec: {name: q}`,
			`spec: {name: q, retention: {days: 7, archive: {enabled: true, bucket: archive}}}`},
		{"legacy-queue", `spec: {name: q, retention: {days: 1, archive: {enabled: false}}}`,
			`spec: {name: q, retention: {days: 1, archive: {enabled: false, bucket: archive}}}`},
		{"legacy-queue", `{}`, `{}`}, // spec is required by nothing, and has no default: it has a required field
		{"team-roster", `spec: {name: ann, contacts: [{value: a@b.c}, {kind: phone, value: "123"}]}`,
			`spec: {name: ann, height: 1.75, level: 1, tags: [new], settings: {theme: dark, beta: {enabled: false}},
			        contacts: [{kind: email, value: a@b.c}, {kind: phone, value: "123"}]}`},
		{"storefront", `spec: {name: shop, ingress: {enabled: true}}`,
			`spec: {name: shop, image: "nginx:1.27", replicas: 2, port: 8080, ingress: {enabled: true, host: shop.example.com}}`},
	}
	for _, tt := range tests {
		t.Run(tt.graph+" "+tt.parent, func(t *testing.T) {
			crd, err := CRDOfFile(filepath.Join("..", "..", "testdata", "kro", tt.graph+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			d, err := NewDefaulter(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
			if err != nil {
				t.Fatal(err)
			}
			var parent, want map[string]any
			if err := yaml.Unmarshal([]byte(tt.parent), &parent); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			d.Default(parent)
			if diff := cmp.Diff(want, parent); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaulterNotStructural: a schema the API server would refuse is
// refused.
func TestDefaulterNotStructural(t *testing.T) {
	crd, err := CRD(&Schema{APIVersion: "v1", Kind: "Thing", Spec: map[string]any{"a": "string"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec := s.Properties["spec"]
	spec.Type = ""
	s.Properties["spec"] = spec
	if _, err := NewDefaulter(s); err == nil {
		t.Error("a property without a type is accepted")
	}
}
