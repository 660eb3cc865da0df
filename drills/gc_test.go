package drills

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestGarbageCollection: deleting a parent lets the garbage collector
// remove its children through their owner references, in the background
// and in the foreground; resyncd's passes meanwhile neither re-create them
// nor fail, and the other parents' children are not touched.
func TestGarbageCollection(t *testing.T) {
	d := newDrill(t, "gc")
	for i := range 3 {
		d.createParent(fmt.Sprintf("web-%d", i), map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2)})
	}
	d.until("all Ready", 500*time.Millisecond, 60*time.Second, func() bool {
		for i := range 3 {
			if conditionOf(d.parent(fmt.Sprintf("web-%d", i)), "Ready") != "True/Available" {
				return false
			}
		}
		return true
	})
	keep, err := d.cs.AppsV1().Deployments("gc").Get(t.Context(), "web-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	background, foreground := metav1.DeletePropagationBackground, metav1.DeletePropagationForeground
	for name, policy := range map[string]*metav1.DeletionPropagation{"web-0": &background, "web-1": &foreground} {
		if err := d.dyn.Resource(httpServices).Namespace("gc").Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: policy}); err != nil {
			t.Fatal(err)
		}
	}
	var created, failed int
	d.until("children of the deleted parents gone", 200*time.Millisecond, 60*time.Second, func() bool {
		rep := d.pass()
		created += rep.Created
		failed += rep.Failed
		for _, name := range []string{"web-0", "web-1"} {
			if _, err := d.cs.AppsV1().Deployments("gc").Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
			if _, err := d.cs.CoreV1().Services("gc").Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
			if _, err := d.dyn.Resource(httpServices).Namespace("gc").Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
	if created != 0 || failed != 0 {
		t.Errorf("while the collector worked resyncd created %d and failed %d writes; want 0, 0", created, failed)
	}
	got, err := d.cs.AppsV1().Deployments("gc").Get(t.Context(), "web-2", metav1.GetOptions{})
	if err != nil || got.UID != keep.UID || got.Generation != keep.Generation {
		t.Errorf("the remaining parent's Deployment changed: %v, uid %s→%s", err, keep.UID, uidOf(got))
	}
	if w := d.warnings(); len(w) > 0 {
		t.Errorf("resyncd logged warnings while the collector worked: %v", w)
	}
}

func uidOf(o interface{ GetUID() types.UID }) types.UID {
	if o == nil {
		return ""
	}
	return o.GetUID()
}
