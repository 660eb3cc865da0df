package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/resyncd/resyncd/actual"
)

// pageReader reads what a pass needs of the cluster, page by page
// (actual.Reader); a planning test gives it pages from memory.
type pageReader interface {
	// Parents calls fn for every object of gvr in scope and returns what
	// the LIST said of itself: their kind, and whether the server applied
	// the scope's shard selector.
	Parents(ctx context.Context, gvr schema.GroupVersionResource, scope actual.Scope, fn func(*unstructured.Unstructured) error) (actual.Listed, error)
	// Children calls fn for every object of gvr in scope that selector
	// selects.
	Children(ctx context.Context, gvr schema.GroupVersionResource, scope actual.Scope, selector string, fn func(*unstructured.Unstructured) error) (actual.Listed, error)
	// Kind returns the kind of gvr's objects.
	Kind(gvr schema.GroupVersionResource) (string, error)
}

// objectWriter makes a pass's writes, and the reads a write needs (applier).
type objectWriter interface {
	apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, opts applyOptions) (*unstructured.Unstructured, error)
	delete(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, uid types.UID) error
	get(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string) (*unstructured.Unstructured, error)
	patch(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, ops []jsonPatchOp) error
}
