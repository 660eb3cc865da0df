package engine

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A list that is a map keyed by some of its items' fields (a Service's
// ports, a container's ports or env, volume mounts) merges, on a
// server-side apply, resyncd's items with those another manager holds.
// When another client replaced the list (a merge patch does), the merge
// can be invalid: two ports of one name, an env var with both value and
// valueFrom. The API server refuses the apply with 422 Invalid on every
// pass, and nothing but a person deleting the object would end it. On a
// child resyncd owns, those items are resyncd's to take back: the other
// managers' ownership of the items of the lists the error names moves to
// resyncd, and the apply that follows removes what resyncd does not apply.

// listIndex finds the last list index of a field path as the API server
// writes it: "spec.ports[1].name" has the list "spec.ports".
var listIndex = regexp.MustCompile(`\[[0-9]+\]`)

// invalidLists returns, for a 422 Invalid answer, the lists its causes
// name, each as the path of field names that leads to it in managedFields,
// "" standing for any item of an enclosing list. A cause outside any list
// names none: it is not for resyncd to take back.
func invalidLists(err error) [][]string {
	if !apierrors.IsInvalid(err) {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var lists [][]string
	seen := map[string]bool{}
	for _, c := range status.Status().Details.Causes {
		locs := listIndex.FindAllStringIndex(c.Field, -1)
		if len(locs) == 0 {
			continue
		}
		list := c.Field[:locs[len(locs)-1][0]]
		if seen[list] {
			continue
		}
		seen[list] = true
		var path []string
		for seg := range strings.SplitSeq(list, ".") {
			name, indexed, _ := strings.Cut(seg, "[")
			path = append(path, name)
			if indexed != "" {
				path = append(path, "")
			}
		}
		lists = append(lists, path)
	}
	return lists
}

// takeBackPatch is the JSON patch that moves to manager's apply entry the
// other managers' ownership of the items of lists, or nil when no other
// manager owns one. Only the items of an
// enclosing list (a container) that manager applies are looked into, so
// that another manager's own containers are left alone. The patch carries
// the resourceVersion read, so that nothing written since is undone.
func takeBackPatch(u *unstructured.Unstructured, manager string, lists [][]string) ([]jsonPatchOp, error) {
	mfs := u.GetManagedFields()
	mine := -1
	for i, mf := range mfs {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" && mf.FieldsV1 != nil {
			mine = i
		}
	}
	if mine < 0 {
		// Adopted, and never applied to yet: resyncd's entry starts empty.
		mfs = append(mfs, metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: u.GetAPIVersion(), FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1("{}")})
		mine = len(mfs) - 1
	}
	var own map[string]any
	if err := json.Unmarshal(mfs[mine].FieldsV1.GetRawBytes(), &own); err != nil {
		return nil, err
	}
	moved := false
	for i, mf := range mfs {
		if i == mine || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		var theirs map[string]any
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &theirs); err != nil {
			return nil, err
		}
		took := false
		for _, path := range lists {
			if takeItems(theirs, own, own, path) {
				took = true
			}
		}
		if !took {
			continue
		}
		moved = true
		raw, err := json.Marshal(theirs)
		if err != nil {
			return nil, err
		}
		mfs[i].FieldsV1 = metav1.NewFieldsV1(string(raw))
	}
	if !moved {
		return nil, nil
	}
	raw, err := json.Marshal(own)
	if err != nil {
		return nil, err
	}
	mfs[mine].FieldsV1 = metav1.NewFieldsV1(string(raw))
	kept := mfs[:0]
	for _, mf := range mfs {
		// An entry left owning nothing is dropped, as the API server drops
		// one itself.
		if mf.FieldsV1 == nil || mf.FieldsV1.GetRawString() != "{}" {
			kept = append(kept, mf)
		}
	}
	return []jsonPatchOp{
		{Op: "replace", Path: "/metadata/resourceVersion", Value: u.GetResourceVersion()},
		{Op: "replace", Path: "/metadata/managedFields", Value: kept},
	}, nil
}

// takeItems moves the list items at path from theirs into own, where
// applied is what manager itself owned at this depth before anything was
// moved; it says whether any item moved.
func takeItems(theirs, own, applied map[string]any, path []string) bool {
	if len(path) == 0 {
		// theirs is the list: each of its keys is an item (k:, v: or i:).
		took := false
		for item, fields := range theirs {
			if item == "." {
				continue
			}
			merge(own, item, fields)
			delete(theirs, item)
			took = true
		}
		return took
	}
	took := false
	if path[0] == "" {
		for item, fields := range theirs {
			sub, ok := fields.(map[string]any)
			mineAt, applies := applied[item].(map[string]any)
			if !ok || !applies {
				continue
			}
			if takeItems(sub, child(own, item), mineAt, path[1:]) {
				took = true
			}
			prune(theirs, item)
		}
		return took
	}
	key := "f:" + path[0]
	sub, ok := theirs[key].(map[string]any)
	if !ok {
		return false
	}
	mineAt, _ := applied[key].(map[string]any)
	took = takeItems(sub, child(own, key), mineAt, path[1:])
	prune(theirs, key)
	return took
}

// child returns m[key] as a map, made if missing.
func child(m map[string]any, key string) map[string]any {
	sub, ok := m[key].(map[string]any)
	if !ok {
		sub = map[string]any{}
		m[key] = sub
	}
	return sub
}

// merge adds fields to m[key], keeping what m[key] already holds.
func merge(m map[string]any, key string, fields any) {
	src, ok := fields.(map[string]any)
	if !ok {
		m[key] = fields
		return
	}
	dst := child(m, key)
	for k, v := range src {
		merge(dst, k, v)
	}
}

// prune removes m[key] when it is a map left empty.
func prune(m map[string]any, key string) {
	if sub, ok := m[key].(map[string]any); ok && len(sub) == 0 {
		delete(m, key)
	}
}

// takeBack moves to resyncd the other managers' ownership of the list
// items that made the apply of o's child invalid (err), and says whether
// it did: then an apply again may succeed. It reads the object first, and
// takes nothing back on one that is not the object planned.
func (e *Engine) takeBack(ctx context.Context, o *op, err error) bool {
	lists := invalidLists(err)
	if len(lists) == 0 || o.live == nil {
		return false
	}
	u, gerr := e.writer.get(ctx, o.gvr, o.key.Kind, o.key.Namespace, o.key.Name)
	if gerr != nil || u.GetUID() != o.live.uid {
		return false
	}
	ops, perr := takeBackPatch(u, e.cfg.FieldManager, lists)
	if perr != nil || ops == nil {
		return false
	}
	if perr = e.paced(ctx, isTransient, func() error {
		return e.writer.patch(ctx, o.gvr, o.key.Kind, o.key.Namespace, o.key.Name, ops)
	}); perr != nil {
		return false
	}
	return true
}

// applyOwned applies o's child, which is resyncd's (created by it, or
// handed to it): list items another manager holds that make the apply
// invalid are taken back, and the apply is tried once more.
func (e *Engine) applyOwned(ctx context.Context, o *op) (*unstructured.Unstructured, error) {
	var result *unstructured.Unstructured
	apply := func() error {
		var err error
		result, err = e.writer.apply(ctx, o.gvr, o.desired, applyOptions{})
		return err
	}
	err := e.paced(ctx, isTransient, apply)
	if apierrors.IsInvalid(err) && e.takeBack(ctx, o, err) {
		e.log.Info("Took back list items", zap.String("object", o.key.String()))
		err = e.paced(ctx, isTransient, apply)
	}
	return result, err
}
