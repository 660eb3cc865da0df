package engine

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestBlockedBy: a child is blocked by a taken one it declares it needs,
// or that it names by kind and name (and group, where it gives an
// apiVersion) anywhere in its content; not by one in another namespace or
// group, nor by nothing.
func TestBlockedBy(t *testing.T) {
	dep := childKey{Group: "apps", Kind: "Deployment", Namespace: "x", Name: "payments"}
	hpa := func(ns, apiVersion string) *unstructured.Unstructured {
		ref := map[string]any{"kind": "Deployment", "name": "payments"}
		if apiVersion != "" {
			ref["apiVersion"] = apiVersion
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
			"metadata": map[string]any{"name": "other", "namespace": ns},
			"spec":     map[string]any{"scaleTargetRef": ref},
		}}
	}
	plain := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "payments", "namespace": "x"}, "data": map[string]any{"name": "payments"}}}
	for _, tc := range []struct {
		name    string
		d       *unstructured.Unstructured
		needs   []childKey
		blocked map[childKey]bool
		want    bool
	}{
		{"needs it", plain, []childKey{dep}, map[childKey]bool{dep: true}, true},
		{"names it", hpa("x", "apps/v1"), nil, map[childKey]bool{dep: true}, true},
		{"names it without apiVersion", hpa("x", ""), nil, map[childKey]bool{dep: true}, true},
		{"names another group's", hpa("x", "example.com/v1"), nil, map[childKey]bool{dep: true}, false},
		{"another namespace", hpa("y", "apps/v1"), nil, map[childKey]bool{dep: true}, false},
		{"nothing taken", hpa("x", "apps/v1"), []childKey{dep}, nil, false},
		{"the same name, no reference", plain, nil, map[childKey]bool{dep: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := blockedBy(tc.d, tc.needs, tc.blocked) != nil; got != tc.want {
				t.Errorf("blockedBy = %v, want %v", got, tc.want)
			}
		})
	}
}
