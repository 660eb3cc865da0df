package engine

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/desired"
)

// release lets go of o's child, which carries resyncd.io/prune: disabled,
// instead of deleting it: it removes the labels that make it resyncd's
// (and desired.AnnotationCreated), its controller ownerReference to the
// parent (so the garbage collector does not delete it either), and
// resyncd's field ownership, leaving every value in place. The object is
// read first, and the patch carries the resourceVersion read, so that
// nothing written since is undone.
func (e *Engine) release(ctx context.Context, o *op) error {
	return e.paced(ctx, isTransient, func() error {
		u, err := e.writer.get(ctx, o.gvr, o.key.Kind, o.key.Namespace, o.key.Name)
		if err != nil {
			return err
		}
		if u.GetUID() != o.live.uid {
			return apierrors.NewNotFound(o.gvr.GroupResource(), o.key.Name) // re-created: not the object planned
		}
		return e.writer.patch(ctx, o.gvr, o.key.Kind, o.key.Namespace, o.key.Name, releasePatch(u, e.cfg.FieldManager, o.live))
	})
}

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitzero"`
}

// releasePatch is the JSON patch that makes u no longer resyncd's. Setting
// managedFields to the other managers' entries (or to one empty entry
// when there are none, which clears them) drops resyncd's ownership
// without removing the values it set.
func releasePatch(u *unstructured.Unstructured, manager string, live *liveChild) []jsonPatchOp {
	ops := []jsonPatchOp{{Op: "replace", Path: "/metadata/resourceVersion", Value: u.GetResourceVersion()}}
	for _, l := range []string{desired.LabelManagedBy, desired.LabelParent, desired.LabelParentKind, desired.LabelParentNamespace} {
		if _, ok := u.GetLabels()[l]; ok {
			ops = append(ops, jsonPatchOp{Op: "remove", Path: "/metadata/labels/" + escapePointer(l)})
		}
	}
	if _, ok := u.GetAnnotations()[desired.AnnotationCreated]; ok {
		ops = append(ops, jsonPatchOp{Op: "remove", Path: "/metadata/annotations/" + escapePointer(desired.AnnotationCreated)})
	}
	refs := []metav1.OwnerReference{}
	for _, ref := range u.GetOwnerReferences() {
		if ref.UID != live.controller {
			refs = append(refs, ref)
		}
	}
	if len(refs) != len(u.GetOwnerReferences()) {
		ops = append(ops, jsonPatchOp{Op: "replace", Path: "/metadata/ownerReferences", Value: refs})
	}
	var kept []metav1.ManagedFieldsEntry
	for _, mf := range u.GetManagedFields() {
		if mf.Manager != manager {
			kept = append(kept, mf)
		}
	}
	var mfs any = kept
	if len(kept) == 0 {
		mfs = []map[string]any{{}}
	}
	return append(ops, jsonPatchOp{Op: "replace", Path: "/metadata/managedFields", Value: mfs})
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
