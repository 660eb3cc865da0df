package engine

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// patch applies an RFC 6902 JSON patch to an object: how a child is
// released, and a parent's own metadata written (OpMetadata).
func (a *applier) patch(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, ops []jsonPatchOp) error {
	body, err := json.Marshal(ops)
	if err == nil {
		_, err = a.client.Resource(gvr).Namespace(ns).Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: a.manager})
	}
	return a.fail("patch", gvr, kind, ns, name, err)
}
