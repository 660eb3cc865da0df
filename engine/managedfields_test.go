package engine

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/desired"
)

// TestOwnedMatchesApplied: what tier 1 extracts from an object resyncd
// applied equals what it applied, for every child kind, and a change by
// another manager shows.
func TestOwnedMatchesApplied(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
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
	g, err := desired.HTTPService{}.Render(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	dc := dynamic.NewForConfigOrDie(env(t).Config)
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

// TestReduceChildMemo: a child read again at the same resourceVersion takes
// its fingerprints from the last pass's memo; at another version they are
// computed afresh; either way the result is kept for the next pass, and
// only it.
func TestReduceChildMemo(t *testing.T) {
	t.Parallel()
	o := newOwner("resyncd")
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "namespace": "memo", "uid": "u-1", "resourceVersion": "7"},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80), "protocol": "TCP"}}},
	}}
	services := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	remembered := memoEntry{owned: true, fingerprint: fingerprint{1}}
	v7, v8 := versionOf("u-1", "7"), versionOf("u-1", "8")
	if v7 == v8 {
		t.Fatal("two versions of one object have one memo key")
	}
	mem := newMemory(nil)
	mem.memo.set(v7, remembered)
	mem.wholes[v7] = fingerprint{2}

	next := newMemory(mem)
	c, err := o.reduceChild(svc, services, false, true, mem, next)
	if err != nil {
		t.Fatal(err)
	}
	if w := c.whole(); !c.owned || c.fingerprint != remembered.fingerprint || w != (fingerprint{2}) {
		t.Errorf("same version: got owned=%v %x %x, want the memo's entry", c.owned, c.fingerprint[:2], w[:2])
	}
	next.sweep()
	if got, _ := next.memo.get(v7); got.fingerprint != remembered.fingerprint || !got.owned || got.pass != next.pass || next.wholes[v7] != (fingerprint{2}) {
		t.Errorf("next pass's memo = %v %v, want the entry carried over", next.memo, next.wholes)
	}

	svc.SetResourceVersion("8")
	mem = next
	next = newMemory(mem)
	c, err = o.reduceChild(svc, services, false, true, mem, next)
	if err != nil {
		t.Fatal(err)
	}
	want, err := wholeFingerprint(svc)
	if err != nil {
		t.Fatal(err)
	}
	if c.owned || c.whole() != want {
		t.Errorf("new version: owned=%v (no managedFields: want false), whole fingerprint from the memo: %v", c.owned, c.whole() != want)
	}
	next.sweep()
	if _, ok := next.memo.get(v8); !ok || next.memo.len() != 1 || len(next.wholes) != 1 || next.wholes[v8] != want {
		t.Errorf("next pass's memo = %v %v, want only version 8", next.memo, next.wholes)
	}
}
