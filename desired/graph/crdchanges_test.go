package graph

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestBreakingChanges: each change to a parent kind's SimpleSchema that
// would break the objects stored is named; the compatible ones are not.
func TestBreakingChanges(t *testing.T) {
	base := map[string]any{
		"name":     "string | required=true",
		"replicas": "integer | default=2 minimum=0 maximum=20",
		"tier":     `string | enum="small,large" default=small`,
		"tags":     "[]string",
		"ingress":  map[string]any{"host": "string"},
	}
	crdOf := func(t *testing.T, spec map[string]any, scope extv1.ResourceScope, version string) *extv1.CustomResourceDefinition {
		t.Helper()
		crd, err := CRD(&Schema{APIVersion: version, Kind: "Shop", Scope: scope, Spec: spec}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return crd
	}
	with := func(k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range base {
			out[kk] = vv
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		spec    map[string]any
		scope   extv1.ResourceScope
		version string
		want    []string
	}{
		{name: "unchanged", spec: base},
		{name: "optional field added", spec: with("color", "string | default=blue")},
		{name: "bounds relaxed, enum widened, description", spec: with("replicas", `integer | default=3 minimum=0 maximum=50 description="how many"`)},
		{name: "enum widened", spec: with("tier", `string | enum="small,medium,large" default=small`)},
		{name: "required field with a default added", spec: with("zone", `string | required=true default="a"`)},
		{name: "field removed", spec: with("tags", nil), want: []string{"v1alpha1: spec.tags: would be removed"}},
		{name: "type changed", spec: with("replicas", "string"), want: []string{"v1alpha1: spec.replicas: type integer would become string"}},
		{name: "required field added", spec: with("zone", "string | required=true"), want: []string{"v1alpha1: spec.zone: would become required"}},
		{name: "existing field required", spec: with("tags", "[]string | required=true"), want: []string{"v1alpha1: spec.tags: would become required"}},
		{name: "bound tightened", spec: with("replicas", "integer | default=2 minimum=1 maximum=10"),
			want: []string{"v1alpha1: spec.replicas: minimum 0 would become 1", "v1alpha1: spec.replicas: maximum 20 would become 10"}},
		{name: "enum value removed", spec: with("tier", `string | enum="small" default=small`), want: []string{`v1alpha1: spec.tier: enum value "large" would be removed`}},
		{name: "nested field removed", spec: with("ingress", map[string]any{"port": "integer"}),
			want: []string{"v1alpha1: spec.ingress.host: would be removed"}},
		{name: "list items of another type", spec: with("tags", "[]integer"), want: []string{"v1alpha1: spec.tags[*]: type string would become integer"}},
		{name: "pattern added", spec: with("name", `string | required=true pattern="^[a-z]+$"`), want: []string{`v1alpha1: spec.name: pattern "^[a-z]+$" would be added`}},
		{name: "list becomes a set", spec: with("tags", "[]string | uniqueItems=true"), want: []string{"v1alpha1: spec.tags: list type atomic would become set"}},
		{name: "listType=set written out", spec: with("tags", "[]string | listType=set"), want: []string{"v1alpha1: spec.tags: list type atomic would become set"}},
		{name: "validation rule added", spec: with("name", `string | required=true validation="self.size() > 1"`)},
		{name: "scope changed", spec: base, scope: extv1.ClusterScoped, want: []string{"spec.scope: Namespaced would become Cluster: the objects stored are namespaced"}},
		{name: "version replaced", spec: base, version: "v1", want: []string{"spec.versions: v1alpha1 would be removed"}},
	}
	stored := crdOf(t, base, "", "v1alpha1")
	stored.Status.StoredVersions = []string{"v1alpha1"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version := tt.version
			if version == "" {
				version = "v1alpha1"
			}
			got := BreakingChanges(stored, crdOf(t, tt.spec, tt.scope, version))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestListMapKeysChanged: a list merged by other keys is a breaking change.
func TestListMapKeysChanged(t *testing.T) {
	mapList := "map"
	list := func(keys ...string) *extv1.JSONSchemaProps {
		return &extv1.JSONSchemaProps{Type: "array", XListType: &mapList, XListMapKeys: keys,
			Items: &extv1.JSONSchemaPropsOrArray{Schema: &extv1.JSONSchemaProps{Type: "object"}}}
	}
	if got := schemaChanges("spec.ports.", list("name"), list("name")); len(got) != 0 {
		t.Errorf("unchanged: %v", got)
	}
	want := []string{"spec.ports: list map keys name would become name,protocol"}
	if diff := cmp.Diff(want, schemaChanges("spec.ports.", list("name"), list("name", "protocol"))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
