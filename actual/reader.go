package actual

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Reader LISTs parents and children, page by page, and asks discovery
// which kind a resource holds. It never GETs one object.
type Reader struct {
	lister    *Lister
	discovery discovery.DiscoveryInterface
	pageSize  int64
}

// NewReader returns a Reader that LISTs through lister in pages of
// pageSize and asks disc for kinds.
func NewReader(lister *Lister, disc discovery.DiscoveryInterface, pageSize int64) *Reader {
	return &Reader{lister: lister, discovery: disc, pageSize: pageSize}
}

// Kind returns the kind of the objects of gvr, as the API server's
// discovery says; an error when it does not serve gvr.
func (r *Reader) Kind(gvr schema.GroupVersionResource) (string, error) {
	list, err := r.discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return "", err
	}
	for _, res := range list.APIResources {
		if res.Name == gvr.Resource {
			return res.Kind, nil
		}
	}
	return "", fmt.Errorf("discovery lists no %s in %s", gvr.Resource, gvr.GroupVersion())
}

// Scope is where a LIST looks.
type Scope struct {
	// Namespaces are LISTed one by one; none: all namespaces at once.
	Namespaces []string
	// ShardSelector, when set, asks the API server for the objects of
	// some namespace hash ranges only (a server without sharded LISTs
	// ignores it: see Listed.Sharded).
	ShardSelector string
}

// Parents calls fn for every object of gvr in scope.
func (r *Reader) Parents(ctx context.Context, gvr schema.GroupVersionResource, scope Scope, fn func(*unstructured.Unstructured) error) (Listed, error) {
	return r.each(ctx, gvr, scope, metav1.ListOptions{ShardSelector: scope.ShardSelector}, fn)
}

// Children calls fn for every object of gvr in scope that selector
// selects: the children of one watched resource.
func (r *Reader) Children(ctx context.Context, gvr schema.GroupVersionResource, scope Scope, selector string,
	fn func(*unstructured.Unstructured) error) (Listed, error) {
	return r.each(ctx, gvr, scope, metav1.ListOptions{LabelSelector: selector, ShardSelector: scope.ShardSelector}, fn)
}

// each LISTs gvr in every namespace of scope; the kind is the last
// LIST's, and the result Sharded when every LIST was.
func (r *Reader) each(ctx context.Context, gvr schema.GroupVersionResource, scope Scope, opts metav1.ListOptions, fn func(*unstructured.Unstructured) error) (Listed, error) {
	if len(scope.Namespaces) == 0 {
		return r.lister.Each(ctx, gvr, metav1.NamespaceAll, opts, r.pageSize, fn)
	}
	out := Listed{Sharded: opts.ShardSelector != ""}
	for _, ns := range scope.Namespaces {
		l, err := r.lister.Each(ctx, gvr, ns, opts, r.pageSize, fn)
		if err != nil {
			return Listed{}, err
		}
		out.Kind, out.Sharded = l.Kind, out.Sharded && l.Sharded
	}
	return out, nil
}
