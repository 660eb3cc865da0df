package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// applier makes every request of resyncd's that writes, and the reads a
// write needs: server-side applies of children and of parents' status,
// with one field manager and force, dry-run applies, deletes with a UID
// precondition, and the JSON patch that releases a child. Its errors are
// *WriteError.
type applier struct {
	client  dynamic.Interface
	manager string
}

// applyOptions say how to apply.
type applyOptions struct {
	// createOnly makes the API server refuse the apply, with a conflict,
	// when an object of the name exists.
	createOnly bool
	// dryRun applies without storing: the answer is what would be stored.
	dryRun bool
	// subresource is "status" for a parent's status.
	subresource string
}

// createOnly is the resourceVersion a create-only apply carries. No stored
// object has it (etcd revisions are int64), so the API server refuses the
// apply with a conflict if an object of the name exists, and creates the
// object otherwise (a create ignores the resourceVersion it is given).
const createOnly = "18446744073709551615"

// WriteError is a request of the applier that failed; it names the verb
// and the object, and wraps the API server's error.
type WriteError struct {
	// Verb is apply, dry-run apply, status apply, delete, get or release.
	Verb string
	// Object is Kind/namespace/name.
	Object string
	// Err is the error of the request.
	Err error
}

func (e *WriteError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Object, e.Verb, e.Err) }

// Unwrap returns the API server's error.
func (e *WriteError) Unwrap() error { return e.Err }

func (a *applier) fail(verb string, gvr schema.GroupVersionResource, kind, ns, name string, err error) error {
	if err == nil {
		return nil
	}
	if kind == "" {
		kind = gvr.Resource
	}
	id := kind + "/" + name
	if ns != "" {
		id = kind + "/" + ns + "/" + name
	}
	return &WriteError{Verb: verb, Object: id, Err: err}
}

// apply server-side-applies obj to gvr and returns what the server holds
// (or, in a dry run, would hold).
func (a *applier) apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, opts applyOptions) (*unstructured.Unstructured, error) {
	content := obj.Object
	if opts.createOnly {
		md, _ := content["metadata"].(map[string]any)
		md = maps.Clone(md)
		md["resourceVersion"] = createOnly
		content = maps.Clone(content)
		content["metadata"] = md
	}
	verb := "apply"
	switch {
	case opts.dryRun:
		verb = "dry-run apply"
	case opts.subresource != "":
		verb = opts.subresource + " apply"
	}
	body, err := json.Marshal(content)
	if err != nil {
		return nil, a.fail(verb, gvr, obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	force := true
	po := metav1.PatchOptions{FieldManager: a.manager, Force: &force}
	if opts.dryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	var sub []string
	if opts.subresource != "" {
		sub = []string{opts.subresource}
	}
	res, err := a.client.Resource(gvr).Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.ApplyPatchType, body, po, sub...)
	return res, a.fail(verb, gvr, obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
}

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

// patch applies an RFC 6902 JSON patch to an object: how a child is
// released.
func (a *applier) patch(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, ops []jsonPatchOp) error {
	body, err := json.Marshal(ops)
	if err == nil {
		_, err = a.client.Resource(gvr).Namespace(ns).Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: a.manager})
	}
	return a.fail("release", gvr, kind, ns, name, err)
}
