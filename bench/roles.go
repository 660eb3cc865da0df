package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"

	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/engine"
)

// dynamicClient reads kubeconfig, with no client-side rate limit: the
// contenders that use it bound themselves.
func dynamicClient(kubeconfig, agent string) (dynamic.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	cfg.UserAgent = agent
	return dynamic.NewForConfig(cfg)
}

// floorMain is the raw server-side-apply floor: one paged LIST of the
// parents, then, with resyncd's concurrency and no rate limit, exactly the
// applies resyncd makes on a cold start — every child, then the status —
// with no reading of children and no comparing. It prints "pass <seconds>".
func floorMain(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file")
	concurrency := fs.Int("concurrency", 8, "writes in flight")
	pageSize := fs.Int64("page-size", 500, "LIST page size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	client, err := dynamicClient(*kubeconfig, "bench-floor")
	if err != nil {
		return err
	}
	ctx := context.Background()
	start := time.Now()
	var parents []*unstructured.Unstructured
	err = pagedList(ctx, client, parentGVR, "", *pageSize, func(u *unstructured.Unstructured) error {
		parents = append(parents, u)
		return nil
	})
	if err != nil {
		return err
	}
	work := make(chan *unstructured.Unstructured)
	errs := make(chan error, *concurrency)
	var wg sync.WaitGroup
	for range *concurrency {
		wg.Go(func() {
			var first error
			for p := range work {
				if err := floorApply(ctx, client, p); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		})
	}
	for _, p := range parents {
		work <- p
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Printf("pass %.3f\n", time.Since(start).Seconds())
	return nil
}

func floorApply(ctx context.Context, client dynamic.Interface, parent *unstructured.Unstructured) error {
	r := desired.HTTPService{}
	g, err := r.Render(parent, nil)
	if err != nil {
		return err
	}
	desired.Stamp(g, parent) // what resyncd applies: content and identity
	force := true
	opts := metav1.PatchOptions{FieldManager: "resyncd", Force: &force}
	obs := engine.Observation{Observation: desired.Observation{Now: time.Now(), Applied: true}}
	for _, c := range g.Children {
		body, err := json.Marshal(c.Object)
		if err != nil {
			return err
		}
		gvr := childGVRs[c.GetKind()]
		res, err := client.Resource(gvr).Namespace(c.GetNamespace()).Patch(ctx, c.GetName(), types.ApplyPatchType, body, opts)
		if err != nil {
			return err
		}
		st, _ := res.Object["status"].(map[string]any)
		obs.Children = append(obs.Children, desired.Child{Kind: res.GetKind(), Name: res.GetName(), Generation: res.GetGeneration(), Status: st})
	}
	rst, err := r.Status(parent, obs.Observation)
	if err != nil {
		return err
	}
	st, err := engine.Compose(parent, obs, rst)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": parent.GetAPIVersion(), "kind": parent.GetKind(),
		"metadata": map[string]any{"name": parent.GetName(), "namespace": parent.GetNamespace()},
		"status":   st,
	})
	if err != nil {
		return err
	}
	_, err = client.Resource(parentGVR).Namespace(parent.GetNamespace()).Patch(ctx, parent.GetName(), types.ApplyPatchType, body, opts, "status")
	return err
}

// pagedList is a LIST as client-go's pager makes it, with its defaults
// but the page size.
func pagedList(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, selector string,
	pageSize int64, fn func(*unstructured.Unstructured) error) error {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.Resource(gvr).List(ctx, opts)
	})
	p.PageSize = pageSize
	return p.EachListItem(ctx, metav1.ListOptions{LabelSelector: selector}, func(o runtime.Object) error {
		return fn(o.(*unstructured.Unstructured))
	})
}

// listMain is the raw paged LIST: the parents and resyncd's children read
// through client-go's dynamic client and pager, and thrown away. It prints
// "pass <seconds>".
func listMain(args []string) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file")
	pageSize := fs.Int64("page-size", 500, "LIST page size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	client, err := dynamicClient(*kubeconfig, "bench-list")
	if err != nil {
		return err
	}
	ctx := context.Background()
	start := time.Now()
	n := 0
	count := func(*unstructured.Unstructured) error { n++; return nil }
	if err := pagedList(ctx, client, parentGVR, "", *pageSize, count); err != nil {
		return err
	}
	for _, ct := range (desired.HTTPService{}).ChildTypes() {
		if err := pagedList(ctx, client, ct.GVR, desired.ChildSelector(schema.GroupKind{Group: parentGVR.Group, Kind: "HttpService"}), *pageSize, count); err != nil {
			return err
		}
	}
	fmt.Printf("pass %.3f\n", time.Since(start).Seconds())
	fmt.Fprintf(os.Stderr, "listed %d objects\n", n)
	return nil
}
