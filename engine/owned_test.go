package engine

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/desired"
)

// TestOwnedMatchesApplied: what tier 1 extracts from an object resyncd
// applied equals what it applied, for every child kind, and a change by
// another manager shows.
func TestOwnedMatchesApplied(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "owned"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resyncd.io/v1alpha1", "kind": "HttpService",
		"metadata": map[string]any{"name": "web", "namespace": "owned", "uid": "5f0e6b1c-0000-4000-8000-000000000001"},
		"spec": map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2),
			"env":         []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "EMPTY"}},
			"resources":   map[string]any{"requests": map[string]any{"cpu": "0.1", "memory": "64Mi"}},
			"healthCheck": map[string]any{"path": "/healthz"},
			"autoscaling": map[string]any{"maxReplicas": int64(4)}},
	}}
	g, err := desired.HTTPService{}.Render(parent)
	if err != nil {
		t.Fatal(err)
	}
	dc := dynamic.NewForConfigOrDie(env.Config)
	o := newOwner("resyncd-test")
	for i, child := range g.Children {
		ct := desired.HTTPService{}.ChildTypes()[i]
		body, err := json.Marshal(child.Object)
		if err != nil {
			t.Fatal(err)
		}
		force := true
		live, err := dc.Resource(ct.GVR).Namespace("owned").Patch(ctx, child.GetName(), types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: "resyncd-test", Force: &force})
		if err != nil {
			t.Fatalf("%s: apply: %v", ct.Kind, err)
		}
		want, err := o.normalize(child)
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := o.owned(live)
		if err != nil || !ok {
			t.Fatalf("%s: owned: %v, %v", ct.Kind, ok, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: owned fields differ from the applied ones (-applied +owned):\n%s", ct.Kind, diff)
		}
	}

	// Another manager takes the image: tier 1 must see it.
	patch := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:evil"}]}}}}`)
	force := true
	live, err := dc.Resource(desired.HTTPService{}.ChildTypes()[0].GVR).Namespace("owned").Patch(ctx, "web", types.ApplyPatchType, patch,
		metav1.PatchOptions{FieldManager: "intruder", Force: &force})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := o.normalize(g.Children[0])
	got, _, err := o.owned(live)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(want, got) {
		t.Error("an image changed by another manager was not seen")
	}
}
