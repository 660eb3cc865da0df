package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/resyncd/resyncd/actual"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/shard"
)

// Engine runs passes over the watched resources of a configuration.
type Engine struct {
	cfg       Settings
	writer    objectWriter
	reader    pageReader
	renderers desired.Registry
	owner     *owner
	metrics   *Metrics
	log       *zap.Logger
	limiter   flowcontrol.RateLimiter
	now       func() time.Time
	events    events.EventRecorder
	readOnly  bool
	// passTimeout is Options.PassTimeout.
	passTimeout time.Duration
	// shard is Options.Shard.
	shard Shard
	// sched makes the writes of every resource's passes.
	sched *scheduler
	// keepFields keeps the owned fields of live children for Report.Drifts.
	keepFields bool
	resources  []*resourceState
	// addedMu guards added, the resources RunResource runs.
	addedMu sync.Mutex
	added   map[*resourceState]bool
	// probe asks the API server whether it answers at all, for a resource
	// whose passes fail; nil: never asked.
	probe func(context.Context) error
	// ready asks the API server whether it is ready (/readyz): while it is
	// not, its authorizer may still be loading RBAC and refuse what it
	// will allow seconds later. nil: taken as ready.
	ready func(context.Context) error
	// failingMu guards failing, the resources whose last pass failed.
	failingMu sync.Mutex
	failing   map[*resourceState]bool
}

// resourceState is what the engine remembers of one watched resource
// between passes.
type resourceState struct {
	cfg      config.Resource
	cluster  string // the cluster's name, for metrics
	name     string // resource.version.group, as kubectl spells it, for metrics and logs
	gvr      schema.GroupVersionResource
	renderer desired.Renderer
	selector labels.Selector
	// mem is what the last pass learnt, and next what this one learns;
	// next replaces mem when the pass ends. Only the planner and fold
	// write next; the workers keep their lessons in their jobs.
	mem, next *memory
	// drift is what the last pass saw of each drifted child.
	drift map[childKey]driftRecord
	// now holds a request to start the next pass early; see PassNow.
	now chan struct{}
	// parentGVK is the kind of the parents, learnt from the first parent
	// LISTed, or from the LIST's kind when there is none.
	parentGVK schema.GroupVersionKind
	// part is the namespaces the pass in flight works on: shard.Whole()
	// unless replicas share the work.
	part shard.Part
	// keepers keep what the renderer reads of the children of each kind.
	keepers map[schema.GroupVersionResource]*keeper
	// externals reads the renderer's external references, nil when it
	// reads none.
	externals *externals
	// kindOrder is the index of each kind of child in the renderer's
	// ChildTypes, its apply order; prunes go the other way where a child's
	// own position is not known.
	kindOrder map[schema.GroupVersionResource]int
	// whole: the passes read all namespaces as one, since the API server
	// once listed a namespace out of its storage order (window.go).
	whole bool
}

// driftRecord is how long a child has been found drifted, pass after pass.
type driftRecord struct {
	since  time.Time // first pass of the run that found it drifted
	passes int       // passes in a row that found it drifted
	fights int       // of those, passes in a row that found it drifted right after resyncd's repair
}

// memoKey is one version of one object, whose content cannot differ: a
// 128-bit hash of its UID and resourceVersion (versionOf), so that what
// one pass leaves the next holds no strings.
type memoKey struct{ a, b uint64 }

// versionSeeds seed the two halves of every memoKey of the process.
var versionSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// versionOf is the memoKey of the object uid at resourceVersion rv.
func versionOf(uid types.UID, rv string) memoKey {
	var k [2]uint64
	for i, seed := range versionSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		_, _ = h.WriteString(string(uid))
		_ = h.WriteByte(0)
		_, _ = h.WriteString(rv)
		k[i] = h.Sum64()
	}
	return memoKey{k[0], k[1]}
}

// syncedChild is a child a pass found in sync: the version it compared and
// the fingerprint of what it desired.
type syncedChild struct {
	key             childKey
	resourceVersion string
	desired         fingerprint
}

// idleChild is what the memory keeps of a child an idle parent compared:
// which child (a hash of its key), at which version, and the fingerprint
// of what the parent desired of it.
type idleChild struct {
	key     uint64
	version memoKey
	desired fingerprint
}

// keySeed seeds the hashes of child keys of the process.
var keySeed = maphash.MakeSeed()

// hash is k's hash for idleChild.
func (k childKey) hash() uint64 {
	var h maphash.Hash
	h.SetSeed(keySeed)
	for _, f := range [...]string{k.Group, k.Kind, k.Namespace, k.Name} {
		_, _ = h.WriteString(f)
		_ = h.WriteByte(0)
	}
	return h.Sum64()
}

// memoEntry is what reducing a child at one version found. It is one of
// the few things kept between passes for every child, so its fields are
// ordered to make it 24 bytes.
type memoEntry struct {
	fingerprint fingerprint
	// position is 1 + the child's index in what its parent last rendered
	// (its apply order); 0 when not known. Prunes go the other way.
	position int32
	owned    bool
	// created: resyncd's field manager set desired.AnnotationCreated.
	created bool
	// pass is memory.pass of the pass that read it last.
	pass uint8
}

type noopKey struct {
	uid, resourceVersion string
	desired              fingerprint
}

// Settings are what a pass uses of the configuration: the field manager,
// the page size, the drift check, the write limits and the watched
// resources. Leader election, the HTTP endpoints and logging are the
// command's; SettingsFrom takes these out of a config.Config.
type Settings struct {
	// Cluster names the cluster in metrics and logs; empty: "local".
	Cluster string
	// FieldManager is the server-side-apply field manager.
	FieldManager string
	// PageSize is the limit of each LIST page.
	PageSize int64
	// DriftCheck is local (tier 1, then the apply) or server (a dry-run
	// apply of every child).
	DriftCheck config.DriftCheck
	// Apply bounds the writes of a pass: the cluster's limiter, budget and
	// workers.
	Apply config.Apply
	// Resources are the watched resources.
	Resources []config.Resource
	// ServerSelector asks the API server to filter LISTs by the ranges
	// of Options.Shard (sharding.serverSelector auto).
	ServerSelector bool
}

// SettingsFrom is what a pass uses of c in its first cluster: the only
// one of a configuration that lists no cluster.
func SettingsFrom(c *config.Config) Settings {
	if len(c.Clusters) == 0 { // a Config built in code rather than loaded
		return SettingsFor(c, config.Cluster{Name: config.LocalCluster, Apply: c.Apply})
	}
	return SettingsFor(c, c.Clusters[0])
}

// SettingsFor is what a pass uses of c in the cluster cl: its apply
// bounds and the resources watched there.
func SettingsFor(c *config.Config, cl config.Cluster) Settings {
	return Settings{Cluster: cl.Name, FieldManager: c.FieldManager, PageSize: c.PageSize, DriftCheck: c.DriftCheck, Apply: cl.Apply,
		Resources: c.ResourcesIn(cl.Name), ServerSelector: c.Sharding.ServerSelector != config.ServerSelectorOff}
}

// Options are the dependencies of an Engine.
type Options struct {
	// REST reaches the API server: LISTs through actual.Lister, writes
	// through client-go's dynamic client.
	REST *rest.Config
	// Renderers are looked up by the configured renderer names.
	Renderers desired.Registry
	// Metrics receive the pass's numbers.
	Metrics *Metrics
	// Log receives one line per pass and the writes at Info.
	Log *zap.Logger
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// ReadOnly plans and reports, and writes nothing: no child, no status,
	// no Event. It is how `resyncd diff` runs.
	ReadOnly bool
	// Events records Events on the parents' transitions; nil records none.
	Events events.EventRecorder
	// KeepFields keeps the fields resyncd owns of every drifted child in
	// the report, for `resyncd diff`; passes hold only fingerprints otherwise.
	KeepFields bool
	// Shard limits the passes to the namespaces this replica owns when
	// replicas share the work; nil: every namespace.
	Shard Shard
	// PassTimeout bounds each pass Run starts: past it no new batch of
	// writes starts and the requests in flight are cancelled, the pass
	// fails, and the next starts on schedule. Zero: no bound.
	PassTimeout time.Duration
}

// New returns an Engine for cfg that reads and writes through
// opts.REST.
func New(cfg Settings, opts Options) (*Engine, error) {
	if opts.REST == nil {
		return nil, errors.New("engine: no API server configuration")
	}
	client, err := dynamic.NewForConfig(opts.REST)
	if err != nil {
		return nil, err
	}
	lister, err := actual.NewLister(opts.REST)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(opts.REST)
	if err != nil {
		return nil, err
	}
	e, err := newEngine(cfg, actual.NewReader(lister, disc, cfg.PageSize), &applier{client: client, manager: cfg.FieldManager}, opts)
	if err != nil {
		return nil, err
	}
	e.probe = func(ctx context.Context) error { return disc.RESTClient().Get().AbsPath("/version").Do(ctx).Error() }
	e.ready = func(ctx context.Context) error { return disc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() }
	return e, nil
}

// newEngine returns an Engine for cfg that reads through reader and
// writes through writer; opts.REST is not used.
func newEngine(cfg Settings, reader pageReader, writer objectWriter, opts Options) (*Engine, error) {
	e := &Engine{
		cfg:         cfg,
		writer:      writer,
		reader:      reader,
		renderers:   opts.Renderers,
		owner:       newOwner(cfg.FieldManager),
		metrics:     opts.Metrics,
		log:         opts.Log,
		limiter:     flowcontrol.NewTokenBucketRateLimiter(float32(cfg.Apply.QPS), cfg.Apply.Burst),
		now:         opts.Now,
		keepFields:  opts.KeepFields,
		events:      opts.Events,
		readOnly:    opts.ReadOnly,
		passTimeout: opts.PassTimeout,
		shard:       opts.Shard,
		failing:     map[*resourceState]bool{},
		added:       map[*resourceState]bool{},
	}
	e.sched = newScheduler(cfg.Apply.Concurrency, cfg.Apply.MaxWritesPerPass, e.runJob)
	if e.cfg.Cluster == "" {
		e.cfg.Cluster = config.LocalCluster
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.log == nil {
		e.log = zap.NewNop()
	}
	e.log = e.log.With(zap.String("cluster", e.cfg.Cluster))
	for i, r := range cfg.Resources {
		rd, err := opts.Renderers.Get(r.RendererKey())
		if err != nil {
			return nil, fmt.Errorf("resources[%d]: %w", i, err)
		}
		rs, err := e.newResourceState(r, rd)
		if err != nil {
			return nil, fmt.Errorf("resources[%d]: %w", i, err)
		}
		e.resources = append(e.resources, rs)
	}
	return e, nil
}

// newResourceState is what the engine starts with of the watched resource
// r, rendered by rd.
func (e *Engine) newResourceState(r config.Resource, rd desired.Renderer) (*resourceState, error) {
	sel, err := labels.Parse(r.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("labelSelector: %w", err)
	}
	gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	rs := &resourceState{
		cfg: r, cluster: e.cfg.Cluster, name: r.Name(), gvr: gvr, renderer: rd, selector: sel,
		mem: newMemory(nil), drift: map[childKey]driftRecord{}, now: make(chan struct{}, 1), part: shard.Whole(),
		keepers: map[schema.GroupVersionResource]*keeper{}, kindOrder: map[schema.GroupVersionResource]int{},
	}
	for i, ct := range rd.ChildTypes() {
		rs.keepers[ct.GVR] = newKeeper(ct)
		rs.kindOrder[ct.GVR] = i
	}
	rs.externals = newExternals(rd)
	e.metrics.initialize(rs)
	return rs, nil
}
