package actual

import (
	"context"
	"fmt"
	"strings"

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
	_, err := each(ctx, client, gvr, namespace, opts, pageSize, fn)
	return err
}

// each is Each, and also returns the kind of the items as the list names
// it ("HttpServiceList" lists HttpService), known even when there are none.
func each(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, namespace string,
	opts metav1.ListOptions, pageSize int64, fn func(*unstructured.Unstructured) error) (string, error) {
	var listKind string
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		l, err := client.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err == nil {
			listKind = l.GetKind()
		}
		return l, err
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
		return "", fmt.Errorf("list %s: %w", gvr, err)
	}
	return strings.TrimSuffix(listKind, "List"), nil
}
