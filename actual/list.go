package actual

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"
)

// Each LISTs gvr in namespace ("" for all namespaces) in pages of pageSize,
// following the continue token, and calls fn for every object as its page
// arrives. One page is fetched ahead while fn works through the current one,
// so at most two pages are held at a time.
func Each(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, namespace string,
	opts metav1.ListOptions, pageSize int64, fn func(*unstructured.Unstructured) error) error {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.Resource(gvr).Namespace(namespace).List(ctx, opts)
	})
	p.PageSize = pageSize
	p.PageBufferSize = 1
	err := p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list %s: unexpected item type %T", gvr, obj)
		}
		return fn(u)
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", gvr, err)
	}
	return nil
}
