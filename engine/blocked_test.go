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
	t.Parallel()
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
		blocked map[childKey]blockage
		want    bool
	}{
		{"needs it", plain, []childKey{dep}, map[childKey]blockage{dep: {reason: ReasonNameTaken}}, true},
		{"names it", hpa("x", "apps/v1"), nil, map[childKey]blockage{dep: {reason: ReasonNameTaken}}, true},
		{"names it without apiVersion", hpa("x", ""), nil, map[childKey]blockage{dep: {reason: ReasonNameTaken}}, true},
		{"names another group's", hpa("x", "example.com/v1"), nil, map[childKey]blockage{dep: {reason: ReasonNameTaken}}, false},
		{"another namespace", hpa("y", "apps/v1"), nil, map[childKey]blockage{dep: {reason: ReasonNameTaken}}, false},
		{"nothing taken", hpa("x", "apps/v1"), []childKey{dep}, nil, false},
		{"the same name, no reference", plain, nil, map[childKey]blockage{dep: {reason: ReasonNameTaken}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := blockedBy(tc.d, tc.needs, tc.blocked) != nil; got != tc.want {
				t.Errorf("blockedBy = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRefersToBlocked: a child held back because it refers to one that
// is not written says why that one is not: someone else's, refused for
// its namespace or for being cluster-scoped, or held back itself.
func TestRefersToBlocked(t *testing.T) {
	t.Parallel()
	hpa := childKey{Group: "autoscaling", Kind: "HorizontalPodAutoscaler", Namespace: "x", Name: "web"}
	dep := childKey{Group: "apps", Kind: "Deployment", Namespace: "y", Name: "web"}
	for _, tc := range []struct {
		why  blockage
		want string
	}{
		{blockage{reason: ReasonNameTaken}, "which is not resyncd's"},
		{blockage{reason: ReasonNamespaceNotAllowed}, "whose namespace this resource does not allow children in"},
		{blockage{reason: ReasonClusterScopedNotAllowed}, "which is cluster-scoped, and this resource does not allow cluster-scoped children"},
		{blockage{reason: ReasonNamespaceNotAllowed, dependent: true}, "which is not written either"},
	} {
		t.Run(tc.why.reason, func(t *testing.T) {
			want := "HorizontalPodAutoscaler/x/web is not written either: it refers to Deployment/y/web, " + tc.want
			if got := refersToBlocked(hpa, dep, tc.why); got != want {
				t.Errorf("refersToBlocked = %q, want %q", got, want)
			}
		})
	}
}
