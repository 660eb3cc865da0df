package daemon

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/resyncd/resyncd/actual"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
)

// CheckGraph is the check config.Load makes of the graph file of r with
// no cluster: syntax, references, order and the shape of the file, and,
// when the graph's spec.schema or r's crd file gives the parent kind's
// CRD, every expression's types as far as the parent decides them and its
// estimated cost. It returns that parent kind.
func CheckGraph(r config.Resource, c config.CEL) (*config.ParentKind, error) {
	opts, pk, err := OfflineOptions(r, c)
	if err != nil {
		// Loaded untyped, the graph reports every other problem too.
		_, lerr := graph.Load(r.GraphPath(), GraphOptions(c))
		return nil, joinLines(lerr, err)
	}
	_, err = graph.Load(r.GraphPath(), opts)
	return pk, err // the kind also when the graph has problems: they are the graph's
}

// OfflineOptions are the options the graph of r compiles with without a
// cluster, and the parent kind it declares (nil when none): the parent
// typed and defaulted by its CRD when the graph's spec.schema or r's crd
// file gives one, the children dynamic.
func OfflineOptions(r config.Resource, c config.CEL) (graph.Options, *config.ParentKind, error) {
	opts := GraphOptions(c)
	p, err := graph.ReadParentCRD(r.GraphPath(), r.CRDPath())
	if err != nil || p == nil {
		return opts, nil, err
	}
	gvr, ok := p.GroupVersionResource(r.Version)
	if !ok {
		gvr, _ = p.GroupVersionResource("") // the configuration reports the version
	}
	pk := &config.ParentKind{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource,
		Versions: p.Versions(), Where: p.Where, FromSchema: p.FromSchema}
	if opts, err = p.Options(gvr.Version, opts); err != nil {
		return opts, nil, err
	}
	return opts, pk, nil
}

// joinLines joins the lines of errs, each once, in order.
func joinLines(errs ...error) error {
	var lines []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		for _, l := range strings.Split(err.Error(), "\n") {
			if !slices.Contains(lines, l) {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return errors.New(strings.Join(lines, "\n"))
}

// GraphOptions are the options every graph compiles with: the CEL bounds
// of the configuration.
func GraphOptions(c config.CEL) graph.Options {
	return graph.Options{MaxEstimatedCost: uint64(c.MaxEstimatedCost), CostBudget: uint64(c.CostBudget)}
}

// renderers returns the built-in renderers and one for each graph file of
// cfg, compiled against the schemas the API server publishes: every
// expression type-checked and its cost estimated. Every problem of every
// graph is reported.
func renderers(cfg *config.Config, resources []config.Resource, disc discovery.DiscoveryInterface) (desired.Registry, error) {
	reg := desired.DefaultRegistry()
	env := newGraphEnv(disc)
	var errs []error
	for _, r := range resources {
		if r.Graph == "" {
			continue
		}
		g, err := env.compile(cfg, r, r.GraphPath(), func(opts graph.Options) (*graph.Renderer, error) { return graph.Load(r.GraphPath(), opts) })
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reg[r.RendererKey()] = g
	}
	return reg, errors.Join(errs...)
}

// graphEnv is what graphs compile against in one cluster: the kinds it
// serves and the schemas it publishes, each asked once.
type graphEnv struct {
	mapper  meta.RESTMapper
	schemas *actual.Schemas
}

func newGraphEnv(disc discovery.DiscoveryInterface) *graphEnv {
	return &graphEnv{mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), schemas: actual.NewSchemas(disc)}
}

// compile compiles the graph of r, which load reads with the options it
// is given, against env, waiting up to schemaWait while the parent kind's
// schema is not published yet, and checks where its templates place their
// children (path names the graph in those messages).
func (env *graphEnv) compile(cfg *config.Config, r config.Resource, path string, load func(graph.Options) (*graph.Renderer, error)) (*graph.Renderer, error) {
	mapper := env.mapper
	gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	key := r.Key()
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: the kind of %s: %w", cfg.Where(key), key, r.Name(), err)
	}
	if pk := desired.ParentKind(gvk.GroupKind()); len(pk) > validation.LabelValueMaxLength {
		return nil, fmt.Errorf("%s: %s: %s cannot be a parent kind: its children's label %s=%s would have %d characters, a label value at most %d",
			cfg.Where(key), key, r.Name(), desired.LabelParentKind, pk, len(pk), validation.LabelValueMaxLength)
	}
	opts := GraphOptions(cfg.CEL)
	opts.Schemas, opts.Parent = env.schemas, gvk
	opts.Resource = func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return schema.GroupVersionResource{}, fmt.Errorf("not served by the API server: %w", err)
		}
		return m.Resource, nil
	}
	opts.External = func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return schema.GroupVersionResource{}, false, fmt.Errorf("not served by the API server: %w", err)
		}
		return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
	}
	opts.ClusterScoped = func(gvk schema.GroupVersionKind) bool {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil && m.Scope.Name() == meta.RESTScopeNameRoot
	}
	g, err := loadWhenPublished(func() (*graph.Renderer, error) { return load(opts) })
	if err != nil {
		return nil, err
	}
	if _, err := placements(r, g, path); err != nil {
		return nil, err
	}
	return g, nil
}

// schemaWait is how long a start waits for the API server to publish the
// schema of a kind whose CustomResourceDefinition was just installed (a
// Helm release that installs the CRD and resyncd together).
const schemaWait = 30 * time.Second

// loadWhenPublished loads a graph, waiting up to schemaWait while the
// parent kind's schema is not published yet.
func loadWhenPublished(load func() (*graph.Renderer, error)) (*graph.Renderer, error) {
	deadline := time.Now().Add(schemaWait)
	for {
		g, err := load()
		if !errors.Is(err, resolver.ErrSchemaNotFound) || time.Now().After(deadline) {
			return g, err
		}
		time.Sleep(time.Second)
	}
}
