package engine

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// delete deletes an object if it still has uid, and lets the garbage
// collector remove what it owns in the background.
func (a *applier) delete(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, uid types.UID) error {
	policy := metav1.DeletePropagationBackground
	err := a.client.Resource(gvr).Namespace(ns).Delete(ctx, name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy})
	return a.fail("delete", gvr, kind, ns, name, err)
}

// get reads one object: one whose name is taken, or one to release.
func (a *applier) get(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string) (*unstructured.Unstructured, error) {
	u, err := a.client.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	return u, a.fail("get", gvr, kind, ns, name, err)
}
