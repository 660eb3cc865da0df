package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// applyDir server-side applies every object of the YAML files in dir, in
// file name order, as field manager devcluster, and returns how many.
func applyDir(ctx context.Context, cfg *rest.Config, dir string) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return 0, err
	}
	sort.Strings(files)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return n, err
		}
		for _, obj := range objs {
			if err := applyObject(ctx, client, mapper, obj); err != nil {
				return n, fmt.Errorf("%s: %w", f, err)
			}
			n++
		}
	}
	return n, nil
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

func applyObject(ctx context.Context, client dynamic.Interface, mapper *restmapper.DeferredDiscoveryRESTMapper, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = client.Resource(mapping.Resource)
	if ns := obj.GetNamespace(); ns != "" {
		ri = client.Resource(mapping.Resource).Namespace(ns)
	}
	force := true
	_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "devcluster", Force: &force})
	if err != nil {
		return fmt.Errorf("%s %s/%s: apply: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
