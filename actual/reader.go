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

// Parents calls fn for every object of gvr in namespaces (none: all), and
// returns the kind of the objects, which the API server names even when
// there are none.
func (r *Reader) Parents(ctx context.Context, gvr schema.GroupVersionResource, namespaces []string, fn func(*unstructured.Unstructured) error) (string, error) {
	return r.each(ctx, gvr, namespaces, metav1.ListOptions{}, fn)
}

// Children calls fn for every object of gvr in namespaces (none: all) that
// selector selects: the children of one watched resource.
func (r *Reader) Children(ctx context.Context, gvr schema.GroupVersionResource, namespaces []string, selector string,
	fn func(*unstructured.Unstructured) error) error {
	_, err := r.each(ctx, gvr, namespaces, metav1.ListOptions{LabelSelector: selector}, fn)
	return err
}

func (r *Reader) each(ctx context.Context, gvr schema.GroupVersionResource, namespaces []string, opts metav1.ListOptions, fn func(*unstructured.Unstructured) error) (string, error) {
	if len(namespaces) == 0 {
		return r.lister.Each(ctx, gvr, metav1.NamespaceAll, opts, r.pageSize, fn)
	}
	var kind string
	for _, ns := range namespaces {
		k, err := r.lister.Each(ctx, gvr, ns, opts, r.pageSize, fn)
		if err != nil {
			return "", err
		}
		kind = k
	}
	return kind, nil
}
