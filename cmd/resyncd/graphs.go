package main

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/resyncd/resyncd/actual"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
)

// checkGraph is the check config.Load makes of each graph file with no
// cluster: syntax, references, order and the shape of the file.
func checkGraph(path string, c config.CEL) error {
	_, err := graph.Load(path, celOptions(c))
	return err
}

func celOptions(c config.CEL) graph.Options {
	return graph.Options{MaxEstimatedCost: uint64(c.MaxEstimatedCost), CostBudget: uint64(c.CostBudget)}
}

// renderers returns the built-in renderers and one for each graph file of
// cfg, compiled against the schemas the API server publishes: every
// expression type-checked and its cost estimated. Every problem of every
// graph is reported.
func renderers(cfg *config.Config, disc discovery.DiscoveryInterface) (desired.Registry, error) {
	reg := desired.DefaultRegistry()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	schemas := actual.NewSchemas(disc)
	var errs []error
	for i, r := range cfg.Resources {
		if r.Graph == "" {
			continue
		}
		gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
		gvk, err := mapper.KindFor(gvr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: resources[%d]: the kind of %s: %w", cfg.Where(fmt.Sprintf("resources[%d]", i)), i, r.Name(), err))
			continue
		}
		opts := celOptions(cfg.CEL)
		opts.Schemas, opts.Parent = schemas, gvk
		opts.Resource = func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return schema.GroupVersionResource{}, fmt.Errorf("not served by the API server: %w", err)
			}
			return m.Resource, nil
		}
		g, err := graph.Load(r.GraphPath(), opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reg[r.RendererKey()] = g
	}
	return reg, errors.Join(errs...)
}
