package daemon

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
	"github.com/resyncd/resyncd/engine"
)

var (
	// rgdGVR is kro's ResourceGraphDefinition.
	rgdGVR = schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "resourcegraphdefinitions"}
	crdGVR = extv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
)

// rgdCRD is kro's ResourceGraphDefinition CRD, at the version tools/kro
// pins (deploy's tests check that the chart ships the same one).
//
//go:embed crds/kro.run_resourcegraphdefinitions.yaml
var rgdCRD []byte

// ensureRGDCRD creates kro's ResourceGraphDefinition CRD when the cluster
// has none, and waits for it to be served; one there already (kro's
// chart's, or resyncd's) is left as it is.
func ensureRGDCRD(ctx context.Context, dyn dynamic.Interface, fieldManager string, log *zap.Logger) error {
	crds := dyn.Resource(crdGVR)
	name := rgdGVR.GroupResource().String()
	switch _, err := crds.Get(ctx, name, metav1.GetOptions{}); {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get CustomResourceDefinition %s: %w", name, err)
	}
	body, err := yaml.YAMLToJSON(rgdCRD)
	if err != nil {
		return err
	}
	force := false
	if _, err := crds.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
		return fmt.Errorf("apply CustomResourceDefinition %s: %w", name, err)
	}
	log.Info("CRD applied", zap.String("crd", name), zap.Bool("created", true))
	return awaitEstablished(ctx, dyn, name)
}

// rgds serves the ResourceGraphDefinitions of one cluster: every
// interval it LISTs them, and runs the passes of each valid one's
// instances in the cluster's engine, from the pass after it was applied
// or changed, until it is deleted. It writes each one's status as kro
// does.
type rgds struct {
	cfg  *config.Config
	eng  *engine.Engine
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	log  *zap.Logger
	// static are the resources of the configuration file watched in the
	// cluster: an RGD cannot take their kinds.
	static []config.Resource
	// done, when not nil, is called after each pass over an RGD's
	// instances.
	done func(rgd string, rep engine.ResourceReport, err error)

	wg      sync.WaitGroup
	serving map[string]*served
}

// served is one ResourceGraphDefinition: its instances' passes, or, when
// it cannot be served (stop nil), why not.
type served struct {
	uid        types.UID
	generation int64
	gvr        schema.GroupVersionResource
	// status is what resyncd says of the RGD, its conditions without
	// lastTransitionTime.
	status map[string]any
	// refused is why it is not served; "" when it is.
	refused string
	stop    chan struct{}
	ended   chan struct{}
}

// run serves the RGDs until ctx ends; then the passes of each end as the
// engine's do.
func (s *rgds) run(ctx context.Context) {
	defer s.wg.Wait()
	interval := s.cfg.ResourceGraphDefinitions.Interval
	for failures := 0; ; {
		start := time.Now()
		if err := s.sync(ctx); err != nil && ctx.Err() == nil {
			failures++
			s.log.Warn("ResourceGraphDefinitions not read", zap.Error(err), zap.Int("attempt", failures))
		} else {
			failures = 0
		}
		t := time.NewTimer(time.Until(start.Add(engine.Backoff(interval, failures))))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// sync LISTs the RGDs and brings the passes and each one's status in line
// with them.
func (s *rgds) sync(ctx context.Context) error {
	items, err := s.list(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range items {
		u := &items[i]
		name := u.GetName()
		seen[name] = true
		if u.GetDeletionTimestamp() != nil {
			s.stop(name, "deleted")
			if err := s.release(ctx, u); err != nil {
				s.log.Warn("ResourceGraphDefinition finalizer not removed", zap.String("rgd", name), zap.Error(err))
			}
			continue
		}
		// One not served is compiled again each interval: a kind it reads
		// may be served since (another RGD's, say).
		sv := s.serving[name]
		if sv == nil || sv.uid != u.GetUID() || sv.generation != u.GetGeneration() || sv.stop == nil {
			sv = s.serve(ctx, u, sv)
		}
		if err := s.writeStatus(ctx, u, sv.status); err != nil {
			s.log.Warn("ResourceGraphDefinition status not written", zap.String("rgd", name), zap.Error(err))
		}
	}
	for name := range s.serving {
		if !seen[name] {
			s.stop(name, "gone")
		}
	}
	return nil
}

// list is every RGD of the cluster, oldest first: of two that declare
// one kind, the older keeps it.
func (s *rgds) list(ctx context.Context) ([]unstructured.Unstructured, error) {
	var items []unstructured.Unstructured
	opts := metav1.ListOptions{Limit: s.cfg.PageSize}
	for {
		l, err := s.dyn.Resource(rgdGVR).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", rgdGVR.GroupResource(), err)
		}
		items = append(items, l.Items...)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			break
		}
	}
	slices.SortStableFunc(items, func(a, b unstructured.Unstructured) int {
		if c := a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return items, nil
}

// serve makes the RGD u, new or changed, served: its CRD applied, its
// graph compiled against the cluster, and the passes of its instances
// started in place of those of its earlier generation. An RGD that cannot
// be served has none: its status says why, and nothing else is written;
// the reason is logged when it is not that of before, the RGD as it was
// last served or refused.
func (s *rgds) serve(ctx context.Context, u *unstructured.Unstructured, before *served) *served {
	name := u.GetName()
	s.stop(name, "changed")
	sv := &served{uid: u.GetUID(), generation: u.GetGeneration()}
	s.serving[name] = sv
	r, g, st := s.compile(ctx, u)
	sv.status, sv.refused = st.object(u.GetGeneration()), st.message()
	if g == nil {
		if before == nil || before.refused != sv.refused || before.generation != sv.generation || before.uid != sv.uid {
			s.log.Warn("ResourceGraphDefinition not served", zap.String("rgd", name), zap.String("reason", sv.refused))
		}
		return sv
	}
	if err := s.hold(ctx, u); err != nil {
		s.log.Warn("ResourceGraphDefinition finalizer not added", zap.String("rgd", name), zap.Error(err))
	}
	sv.gvr = schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	sv.stop, sv.ended = make(chan struct{}), make(chan struct{})
	s.wg.Go(func() {
		defer close(sv.ended)
		var done func(engine.ResourceReport, error)
		if s.done != nil {
			done = func(rep engine.ResourceReport, err error) { s.done(name, rep, err) }
		}
		if err := s.eng.RunResource(ctx, sv.stop, r, g, done); err != nil {
			s.log.Error("ResourceGraphDefinition not served", zap.String("rgd", name), zap.Error(err))
		}
	})
	s.log.Info("ResourceGraphDefinition served", zap.String("rgd", name), zap.Int64("generation", sv.generation), zap.String("resource", r.Name()))
	return sv
}

// stop ends the passes of the RGD named name, if it has any, once the one
// in flight is done.
func (s *rgds) stop(name, why string) {
	sv := s.serving[name]
	if sv == nil {
		return
	}
	delete(s.serving, name)
	if sv.stop == nil {
		return
	}
	close(sv.stop)
	<-sv.ended
	s.log.Info("ResourceGraphDefinition passes stopped", zap.String("rgd", name), zap.String("reason", why))
}

// lineOf matches the "file:line: " that graph messages start with: the
// line is of the YAML resyncd made of the RGD, which no one sees.
var lineOf = regexp.MustCompile(`^(ResourceGraphDefinition [^:]+):\d+: `)

// compile turns the RGD u into a watched resource and its graph, compiled
// against the cluster's schemas, its CRD applied; the status says how far
// it got, and the graph is nil when not all the way.
func (s *rgds) compile(ctx context.Context, u *unstructured.Unstructured) (config.Resource, *graph.Renderer, *rgdStatus) {
	name := u.GetName()
	path := "ResourceGraphDefinition " + name
	st := &rgdStatus{}
	data, err := yaml.Marshal(map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": name}, "spec": u.Object["spec"]})
	if err != nil {
		return config.Resource{}, nil, st.invalid(err)
	}
	p, err := graph.SchemaCRD(path, data)
	switch {
	case err != nil:
		return config.Resource{}, nil, st.invalid(err)
	case p == nil:
		return config.Resource{}, nil, st.invalid(errors.New("spec.schema declares no kind: an RGD from the cluster declares its instances' kind there"))
	}
	gvr, _ := p.GroupVersionResource("")
	r := s.cfg.ResourceGraphDefinitions.Resource(name, gvr.Group, gvr.Version, gvr.Resource)
	kind := p.CRD.Spec.Names.Kind
	// Checked with the cluster's kinds before anything is written: the
	// expressions against the parent kind's schema and the children's
	// published ones, the children's placement against the guards.
	env := newGraphEnv(s.disc)
	opts, err := p.OptionsBeside(gvr.Version, GraphOptions(s.cfg.CEL), env.schemas)
	if err != nil {
		return r, nil, st.invalid(err)
	}
	opts.ClusterScoped = func(gvk schema.GroupVersionKind) bool {
		m, err := env.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil && m.Scope.Name() == meta.RESTScopeNameRoot
	}
	offline, err := graph.Parse(path, data, opts)
	if err != nil {
		return r, nil, st.invalid(err)
	}
	if _, err := placements(r, offline, path); err != nil {
		return r, nil, st.invalid(err)
	}
	st.order(offline.Picture())
	if other := s.kindTaken(name, gvr); other != "" {
		return r, nil, st.kindFailed(fmt.Errorf("%s is served by %s already; an RGD cannot take it", r.Name(), other))
	}
	if s.cfg.ResourceGraphDefinitions.AdoptFromKro && s.kroMadeCRD(ctx, p.CRD.Name, name) {
		// Taken over from kro: its CRD serves the instances as they are
		// stored, and is kept as kro made it.
		s.log.Info("CRD kept as kro made it", zap.String("crd", p.CRD.Name), zap.String("rgd", name))
	} else if err := applyCRD(ctx, s.dyn, s.cfg.FieldManager, p, s.log); err != nil {
		return r, nil, st.kindFailed(err)
	}
	st.kindReady(kind)
	// Again against the schemas the server publishes for the CRD just
	// applied.
	g, err := newGraphEnv(s.disc).compile(s.cfg, r, path, func(opts graph.Options) (*graph.Renderer, error) { return graph.Parse(path, data, opts) })
	if err != nil {
		return r, nil, st.invalid(err)
	}
	g.ServeAsKro(name, u.GetUID())
	st.running(r.Interval)
	return r, g, st
}

// kindTaken names what serves gvr already, other than the RGD named name:
// a resource of the configuration file, or another RGD; "" when nothing.
func (s *rgds) kindTaken(name string, gvr schema.GroupVersionResource) string {
	for _, r := range s.static {
		if r.Group == gvr.Group && r.Resource == gvr.Resource {
			return r.Key() + " of the configuration"
		}
	}
	for other, sv := range s.serving {
		if other != name && sv.gvr.Group == gvr.Group && sv.gvr.Resource == gvr.Resource {
			return "ResourceGraphDefinition " + other
		}
	}
	return ""
}

// hold puts kro's finalizer on u when it does not have it: resyncd puts
// on the RGDs it serves the one kro puts, so that a deletion is seen and
// the RGD's passes stop before it is gone.
func (s *rgds) hold(ctx context.Context, u *unstructured.Unstructured) error {
	if slices.Contains(u.GetFinalizers(), desired.KroFinalizer) {
		return nil
	}
	body := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"finalizers":[%q]}}`, u.GetAPIVersion(), u.GetKind(), u.GetName(), desired.KroFinalizer)
	force := false
	_, err := s.dyn.Resource(rgdGVR).Patch(ctx, u.GetName(), types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: s.cfg.FieldManager, Force: &force})
	return err
}

// release removes desired.KroFinalizer from u, being deleted, once its passes
// stopped: whoever put it there (kro before resyncd took over), it stands
// for the RGD's instance passes, which are resyncd's now.
func (s *rgds) release(ctx context.Context, u *unstructured.Unstructured) error {
	i := slices.Index(u.GetFinalizers(), desired.KroFinalizer)
	if i < 0 {
		return nil
	}
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`, i, desired.KroFinalizer, i)
	_, err := s.dyn.Resource(rgdGVR).Patch(ctx, u.GetName(), types.JSONPatchType, []byte(patch), metav1.PatchOptions{FieldManager: s.cfg.FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// kroMadeCRD says whether the CRD named crd exists and kro made it for
// the RGD named rgd (its labels kro.run/owned and
// kro.run/resource-graph-definition-name say so).
func (s *rgds) kroMadeCRD(ctx context.Context, crd, rgd string) bool {
	u, err := s.dyn.Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{})
	if err != nil {
		return false
	}
	l := u.GetLabels()
	return l[desired.KroOwned] == "true" && l[desired.KroRGDName] == rgd
}
