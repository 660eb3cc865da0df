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
	t.Parallel()
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

// TestOrphanDeletion: a parent deleted with propagationPolicy Orphan
// leaves its children, the garbage collector removes their owner
// references, and resyncd's next pass finds them no longer desired. They
// carry no ownerReference of resyncd's any more, so they are released, not
// deleted, as whoever orphaned them asked: the Deployment (annotated
// resyncd.io/prune: disabled as well) and the Service lose resyncd's
// labels and field ownership, and the Deployment keeps running.
func TestOrphanDeletion(t *testing.T) {
	t.Parallel()
	d := newDrill(t, "orphan")
	d.createParent("web", map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2)})
	d.until("Ready", 500*time.Millisecond, 60*time.Second, func() bool {
		return conditionOf(d.parent("web"), "Ready") == "True/Available"
	})
	patch := []byte(`{"metadata":{"annotations":{"resyncd.io/prune":"disabled"}}}`)
	if _, err := d.cs.AppsV1().Deployments("orphan").Patch(t.Context(), "web", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "sre"}); err != nil {
		t.Fatal(err)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := d.dyn.Resource(httpServices).Namespace("orphan").Delete(t.Context(), "web", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	// The collector removes the owner references, then the parent.
	d.until("parent gone", 200*time.Millisecond, 60*time.Second, func() bool {
		_, err := d.dyn.Resource(httpServices).Namespace("orphan").Get(t.Context(), "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	d.until("Service released", 200*time.Millisecond, 30*time.Second, func() bool {
		svc, err := d.cs.CoreV1().Services("orphan").Get(t.Context(), "web", metav1.GetOptions{})
		return err == nil && svc.Labels["app.kubernetes.io/managed-by"] == "" && len(svc.OwnerReferences) == 0
	})
	dep, err := d.cs.AppsV1().Deployments("orphan").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("released Deployment: %v", err)
	}
	if _, ok := dep.Labels["app.kubernetes.io/managed-by"]; ok || len(dep.OwnerReferences) > 0 {
		t.Errorf("Deployment not released: labels %v, owners %v", dep.Labels, dep.OwnerReferences)
	}
	for _, mf := range dep.ManagedFields {
		if mf.Manager == "resyncd" {
			t.Errorf("resyncd still manages fields of the released Deployment")
		}
	}
	if dep.Status.AvailableReplicas != 2 {
		t.Errorf("released Deployment has %d available replicas, want 2", dep.Status.AvailableReplicas)
	}
	if w := d.warnings(); len(w) > 0 {
		t.Errorf("resyncd logged warnings: %v", w)
	}
}
