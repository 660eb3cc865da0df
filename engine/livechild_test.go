package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resyncd/resyncd/desired"
)

// TestKeeper: a child keeps the values at the paths its renderer reads,
// and gives them back as an object with its identity; paths it lacks are
// left out, and "" keeps the whole object without its managedFields.
func TestKeeper(t *testing.T) {
	t.Parallel()
	live := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "generation": int64(3),
			"labels": map[string]any{"a": "b"}, "managedFields": []any{"x"}},
		"spec":   map[string]any{"replicas": int64(2), "template": map[string]any{"big": "yes"}},
		"status": map[string]any{"readyReplicas": int64(1)},
	}
	key := childKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	ct := desired.ChildType{GVR: deployments, Kind: "Deployment", Keep: []string{"metadata.generation", "spec.replicas", "spec.strategy", "status"}}
	k := newKeeper(ct)
	want := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "generation": int64(3)},
		"spec":     map[string]any{"replicas": int64(2)},
		"status":   map[string]any{"readyReplicas": int64(1)},
	}
	if diff := cmp.Diff(want, k.object(key, k.pick(live))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	whole := newKeeper(desired.ChildType{GVR: deployments, Kind: "Deployment", Keep: []string{""}})
	got := whole.object(key, whole.pick(live))
	if _, ok := got["metadata"].(map[string]any)["managedFields"]; ok || got["spec"] == nil {
		t.Errorf("whole object: %v", got)
	}
	if _, ok := live["metadata"].(map[string]any)["managedFields"]; !ok {
		t.Error("the live object lost its managedFields")
	}
	if newKeeper(desired.ChildType{GVR: deployments, Kind: "Deployment"}).object(key, nil) != nil {
		t.Error("a kind nothing reads has an object")
	}
}
