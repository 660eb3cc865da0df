package engine

import (
	"context"
	"encoding/json"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// createOnly is the resourceVersion a create-only apply carries. No stored
// object has it (etcd revisions are int64), so the API server refuses the
// apply with a conflict if an object of the name exists, and creates the
// object otherwise (a create ignores the resourceVersion it is given).
const createOnly = "18446744073709551615"

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
