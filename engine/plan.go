package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/resyncd/resyncd/actual"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Drift reasons, the values of the reason label of resyncd_drift_total.
const (
	reasonMissing  = "missing"
	reasonChanged  = "changed"
	reasonOrphaned = "orphaned"
)

// fightPasses is how many passes in a row must find a child changed before
// resyncd says, once, that another writer keeps changing it: the first
// finds the drift, and each of the fightPasses-1 after it finds the child
// changed again although resyncd's repair in the pass before succeeded. A
// repair the server refused proves no other writer.
const fightPasses = 3

// externalRead is what a pass found for one parent's external
// references, or the failure that blocks it.
type externalRead struct {
	found   []desired.External
	failure *desired.Failure
}

// passPlan is what plan holds while it reads one pass's parents and
// children: the pass-wide parts; each namespace's are its window.
type passPlan struct {
	e   *Engine
	rs  *resourceState
	rep *ResourceReport
	now time.Time
	// dict is what the pass's jobs pack their parents against (job.pack).
	dict *s2.Dict
	// held are the children held through the pass: those of wide kinds,
	// and any found in a namespace other than its parent's. heldClaimed
	// are those a parent claimed.
	held        *liveSet
	heldClaimed map[childKey]bool
	// deferred are the children whose controller was not among the
	// parents of their namespace: orphans, unless a parent elsewhere has
	// that UID.
	deferred []*liveChild
	// known and names are every parent's UID and namespace/name.
	known, names *parentSet
	seenDrift    map[childKey]driftRecord
	jobs         []*job
	orphans      *job
}

// reduce is reduceChild for the pass's memory, with the fields the
// renderer of its kind reads; nil for a child of another replica or
// another watched resource.
func (pl *passPlan) reduce(u *unstructured.Unstructured, ct desired.ChildType, wide bool) (*liveChild, error) {
	e, rs := pl.e, pl.rs
	if wide && !rs.watches(u) {
		return nil, nil // the child of a parent another entry watches
	}
	if !rs.owns(u) {
		return nil, nil // another replica's
	}
	c, err := e.owner.reduceChild(u, ct.GVR, e.keepFields, e.cfg.DriftCheck == config.DriftCheckServer, rs.mem, rs.next)
	if err != nil {
		return nil, err
	}
	c.keep(rs.keepers[ct.GVR], u)
	return c, nil
}

// openChildren reads the children of the wide kinds into held, and starts
// a stream of each other kind's.
func (pl *passPlan) openChildren(ctx context.Context) ([]*stream, []desired.ChildType, error) {
	e, rs := pl.e, pl.rs
	selector := desired.ChildSelector(rs.parentGVK.GroupKind())
	var streams []*stream
	var types []desired.ChildType
	for _, ct := range rs.renderer.ChildTypes() {
		namespaces, wide := childNamespaces(rs.cfg, ct)
		if wide && ct.ClusterScoped && !rs.cfg.ClusterScopedChildren {
			continue // never written, so there is nothing of it to read
		}
		scope := e.childScope(rs, namespaces, wide)
		if !wide {
			streams = append(streams, pull(ct.GVR.String(), rs.whole, func(fn func(*unstructured.Unstructured) error) (actual.Listed, error) {
				return e.reader.Children(ctx, ct.GVR, scope, selector, fn)
			}))
			types = append(types, ct)
			continue
		}
		_, err := e.reader.Children(ctx, ct.GVR, scope, selector, func(u *unstructured.Unstructured) error {
			c, err := pl.reduce(u, ct, true)
			if c != nil {
				pl.held.add(c)
			}
			return err
		})
		if err != nil {
			stopAll(streams)
			return nil, nil, err
		}
	}
	return streams, types, nil
}

func stopAll(streams []*stream) {
	for _, s := range streams {
		s.stop()
	}
}

// childNamespaces is where the children of kind ct are LISTed: in the
// watched namespaces, or, wide, beyond them — every namespace (namespaces
// nil) for a cluster-scoped kind and for a kind that may be placed in
// other namespaces where the resource allows that with a glob; the
// watched namespaces and the ones named where childNamespaces lists names
// only, so that Roles in those namespaces are all resyncd needs.
func childNamespaces(r config.Resource, ct desired.ChildType) (namespaces []string, wide bool) {
	if ct.ClusterScoped || (ct.Anywhere && len(r.ChildNamespaces) > 0 && len(r.Namespaces) == 0) {
		return nil, true
	}
	if !ct.Anywhere || len(r.ChildNamespaces) == 0 {
		return r.Namespaces, false
	}
	namespaces = slices.Clone(r.Namespaces)
	for _, p := range r.ChildNamespaces {
		if strings.ContainsAny(p, `*?[\`) {
			return nil, true // a glob: any namespace may match
		}
		if !slices.Contains(namespaces, p) {
			namespaces = append(namespaces, p)
		}
	}
	return namespaces, true
}

// watches says whether u, read in every namespace, is the child of a
// parent in a namespace rs watches.
func (rs *resourceState) watches(u *unstructured.Unstructured) bool {
	if len(rs.cfg.Namespaces) == 0 {
		return true
	}
	return slices.Contains(rs.cfg.Namespaces, parentNamespace(u))
}

// plan LISTs the parents in scope and the children beside them, a
// namespace at a time (window.go), and plans each parent as it arrives:
// it compares desired and live children and keeps a job for each parent
// with something to write, in order: by the parent's spec.priority, then
// the kind of write most needed, then the age of the drift. A parent with
// nothing to write is dropped at once, and a namespace's children once
// its parents are planned, so that a steady pass holds no more than a
// namespace. Parents outside the label selector, or being deleted, are
// read too, so that their children are never taken for orphans, but get
// no work.
func (e *Engine) plan(ctx context.Context, rs *resourceState, rep *ResourceReport) ([]*job, error) {
	if err := e.learnParentKind(rs); err != nil {
		return nil, err
	}
	pl := &passPlan{e: e, rs: rs, rep: rep, now: e.now(), held: newLiveSet(), heldClaimed: map[childKey]bool{},
		known: newParentSet(), names: newParentSet(), seenDrift: map[childKey]driftRecord{}}
	pl.orphans = &job{since: pl.now}
	if rs.cfg.Mode == config.ModeWarn {
		pl.orphans.withheld = WithheldWarn
	}
	children, types, err := pl.openChildren(ctx)
	if err != nil {
		return nil, err
	}
	defer stopAll(children)
	scope, _ := e.parentScope(rs)
	parents := pull(rs.name, rs.whole, func(fn func(*unstructured.Unstructured) error) (actual.Listed, error) {
		return e.reader.Parents(ctx, rs.gvr, scope, fn)
	})
	defer parents.stop()
	err = pl.read(ctx, parents, children, types)
	if listed := parents.listed; listed.Kind != "" {
		// Children name their parent by kind, known from the LIST even
		// when no parent is left.
		rs.parentGVK = rs.gvr.GroupVersion().WithKind(listed.Kind)
	}
	// Lists of custom resources do not echo the selector (an
	// UnstructuredList has no shardInfo in Kubernetes 1.37): a server that
	// returned nothing of another replica's applied it as well.
	rep.Sharded = scope.ShardSelector != "" && (parents.listed.Sharded || rep.Foreign == 0)
	var unsorted *unsortedError
	if errors.As(err, &unsorted) {
		rs.whole = true
		return nil, err
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s is not served by the API server (its CustomResourceDefinition removed?): %w", rs.name, err)
	}
	if err != nil {
		return nil, err
	}
	// The children held through the pass whose parent is gone, and those
	// whose controller was not in their namespace.
	for _, k := range sortedKeys(pl.held.children) {
		c := pl.held.children[k]
		if !pl.heldClaimed[k] && pl.orphaned(c) {
			e.planPrune(rs, pl.orphans, c, pl.seenDrift, pl.now, rep)
		}
	}
	for _, c := range pl.deferred {
		if !pl.known.has(string(c.controller)) {
			e.planPrune(rs, pl.orphans, c, pl.seenDrift, pl.now, rep)
		}
	}
	rs.drift = pl.seenDrift
	for _, j := range pl.jobs {
		rs.pruneOrder(j.prunes)
	}
	rs.pruneOrder(pl.orphans.prunes)
	jobs := pl.jobs
	if len(pl.orphans.prunes) > 0 {
		jobs = append(jobs, pl.orphans)
	}
	sortJobs(jobs)
	return jobs, nil
}

// read reads parents and children namespace by namespace: each
// namespace's children, then its parents, then what of its children no
// parent claimed.
func (pl *passPlan) read(ctx context.Context, parents *stream, children []*stream, types []desired.ChildType) error {
	all := append([]*stream{parents}, children...)
	for _, s := range all {
		if err := s.advance(); err != nil {
			return err
		}
	}
	for {
		ns, ok := nextWindow(all)
		if !ok {
			return nil
		}
		w := newWindow(ns)
		for i, s := range children {
			for s.in(ns) {
				c, err := pl.reduce(s.head, types[i], false)
				if err != nil {
					return err
				}
				if c != nil {
					if pl.rs.whole || c.parentNS() == ns {
						w.live.add(c)
					} else {
						pl.held.add(c) // beside another namespace than its parent's
					}
				}
				if err := s.advance(); err != nil {
					return err
				}
			}
		}
		for parents.in(ns) {
			if err := pl.parent(ctx, parents.head, w); err != nil {
				return err
			}
			if err := parents.advance(); err != nil {
				return err
			}
		}
		pl.close(w)
	}
}

// parent plans p, a parent of window w.
func (pl *passPlan) parent(ctx context.Context, p *unstructured.Unstructured, w *window) error {
	e, rs, rep := pl.e, pl.rs, pl.rep
	if !rs.owns(p) {
		rep.Foreign++ // the server ignored the shard selector, or none was sent
		return nil
	}
	name := p.GetNamespace() + "/" + p.GetName()
	w.known[p.GetUID()], w.names[name] = true, true
	pl.known.add(string(p.GetUID()))
	pl.names.add(name)
	if rs.parentGVK.Kind == "" {
		rs.parentGVK = p.GroupVersionKind()
	}
	if p.GetDeletionTimestamp() != nil {
		// Being deleted: the garbage collector removes its children (in
		// the foreground, before the parent). Re-creating them would
		// fight it, and the status is of no more use.
		return nil
	}
	if !rs.selector.Matches(labels.Set(p.GetLabels())) {
		return nil
	}
	rep.Parents++
	mine := slices.Concat(w.live.mine(p.GetUID(), name), pl.held.mine(p.GetUID(), name))
	live := func(k childKey) *liveChild {
		if c := w.live.children[k]; c != nil {
			return c
		}
		return pl.held.children[k]
	}
	var ext externalRead
	if rs.externals != nil {
		var err error
		if ext.found, ext.failure, err = e.resolveExternals(ctx, rs, p, rep); err != nil {
			return err
		}
	}
	claimed := claimSet{window: w.claimed, held: pl.heldClaimed, isHeld: func(k childKey) bool { return pl.held.children[k] != nil }}
	if e.stillIdle(rs, p, live, mine, claimed, rep, ext) {
		return nil
	}
	statusFields := ownedStatusFields(p, e.cfg.FieldManager)
	p.SetManagedFields(nil) // not needed any more; the largest part of a small object
	sort.Slice(mine, func(a, b int) bool { return mine[a].key.less(mine[b].key) })
	j := e.planParent(rs, p, live, mine, claimed, pl.seenDrift, pl.now, rep, ext)
	j.statusFields = statusFields
	e.planUnrendered(rs, j, mine, claimed, pl.seenDrift, pl.now, rep)
	if !e.idle(rs, j) {
		j.synced = nil // read only to remember an idle parent (idleOf)
		if len(j.rare().checks) == 0 && !e.keepFields {
			// Nothing reads the parent again before its job runs, but
			// the dry-runs of checkOnServer.
			j.pack(&pl.dict)
		}
		pl.jobs = append(pl.jobs, j)
		return nil
	}
	j.fold(rs.next, rep) // the no-ops its plan relied on
	if x := j.rare(); e.cfg.DriftCheck != config.DriftCheckServer && !e.keepFields && len(x.taken)+len(x.held)+len(x.refused) == 0 {
		if idle, ok := idleOf(j.synced, mine); ok {
			key := versionOf(p.GetUID(), p.GetResourceVersion())
			rs.next.idle.set(key, idleParent{pass: rs.next.pass, children: idle})
			if rs.externals != nil {
				rs.next.idleExternal[key] = externalVersions(j.rare().external)
			}
		}
	}
	return nil
}

// close ends window w: its children no parent claimed and whose parent is
// gone are pruned. The children of a parent that failed to render, or is
// outside the label selector, are left alone.
func (pl *passPlan) close(w *window) {
	gk := pl.rs.parentGVK.GroupKind()
	for _, k := range sortedKeys(w.live.children) {
		c := w.live.children[k]
		switch {
		case w.claimed[k]:
		case c.controlledBy(pl.rs.parentGVK) && !w.known[c.controller]:
			pl.deferred = append(pl.deferred, c)
		case c.uncontrolledOrphan(gk, func(n string) bool { return w.names[n] }):
			pl.e.planPrune(pl.rs, pl.orphans, c, pl.seenDrift, pl.now, pl.rep)
		}
	}
}

// orphaned says whether c, a child held through the pass, has no parent.
func (pl *passPlan) orphaned(c *liveChild) bool {
	return (c.controlledBy(pl.rs.parentGVK) && !pl.known.has(string(c.controller))) ||
		c.uncontrolledOrphan(pl.rs.parentGVK.GroupKind(), pl.names.has)
}

// stillIdle says whether p is as the last pass left it with nothing to do:
// the same version of the parent, the same versions of the children it
// compared, and no other child of its own. Then rendering, comparing and
// the status would come out the same, and are skipped; the children are
// counted in sync and claimed, and what tier 2 learnt of them is kept.
func (e *Engine) stillIdle(rs *resourceState, p *unstructured.Unstructured, live func(childKey) *liveChild,
	mine []*liveChild, claimed claimSet, rep *ResourceReport, ext externalRead) bool {
	key := versionOf(p.GetUID(), p.GetResourceVersion())
	last, ok := rs.mem.idle.get(key)
	synced := last.children
	if !ok || len(synced) != len(mine) {
		return false
	}
	if rs.externals != nil {
		// The external objects it read must be the same versions too.
		v, ok := rs.mem.idleExternal[key]
		if !ok || ext.failure != nil || v != externalVersions(ext.found) {
			return false
		}
		defer func() { rs.next.idleExternal[key] = v }()
	}
	// The children compared are its own children, each once (idleOf):
	// as many, and each of those there are now at the version compared.
	desired := make([]fingerprint, len(mine))
	for i, c := range mine {
		h := c.key.hash()
		at := slices.IndexFunc(synced, func(s idleChild) bool { return s.key == h })
		if at < 0 || synced[at].version != versionOf(c.uid, c.resourceVersion) {
			return false
		}
		desired[i] = synced[at].desired
	}
	for i, c := range mine {
		claimed.set(c.key)
		rep.count(c.key.Kind, stateInSync)
		if k, noop := rs.isNoop(c, desired[i]); noop {
			rs.next.noops[k] = true // a remembered no-op carried on
		}
	}
	rs.next.idle.set(key, idleParent{pass: rs.next.pass, children: synced})
	return true
}

// idleOf is what the memory keeps of synced, the children an idle parent
// found in sync, when they are all among mine, its own children that
// stillIdle checks them against; false otherwise (a child handed over
// with resyncd.io/adopt is not found by its parent's UID or name): the
// parent is planned again each pass. It is kept also when mine has more
// (an orphan that prune: false leaves), but stillIdle then finds it not
// idle: that child is counted as the plan counts it.
func idleOf(synced []syncedChild, mine []*liveChild) ([]idleChild, bool) {
	out := make([]idleChild, len(synced))
	for i, s := range synced {
		at := slices.IndexFunc(mine, func(c *liveChild) bool { return c.key == s.key })
		if at < 0 {
			return nil, false
		}
		out[i] = idleChild{key: s.key.hash(), version: versionOf(mine[at].uid, s.resourceVersion), desired: s.desired}
	}
	return out, true
}

// planPrune adds to j the deletion of c, a child no parent wants, or its
// release if it carries resyncd.io/prune: disabled or resyncd did not
// create it. A held child, or any with prune off for the resource, is
// counted and left alone: no write is planned that will never be made.
func (e *Engine) planPrune(rs *resourceState, j *job, c *liveChild, seenDrift map[childKey]driftRecord, now time.Time, rep *ResourceReport) {
	rep.count(c.key.Kind, stateOrphaned)
	e.countDrift(rs, c.key.Kind, reasonOrphaned)
	e.noteDrift(rep, Drift{Object: c.key.String(), Reason: reasonOrphaned, Live: e.liveFields(c, nil)})
	if !rs.cfg.Prune {
		return
	}
	if c.hold {
		if j.parent != nil {
			j.more().held = append(j.rare().held, Held{Object: c.key.String(), Drifted: true})
		}
		return
	}
	seenDrift[c.key] = nextDrift(rs, c.key, now)
	kind := OpDelete
	if c.pruneOff || (c.unowned() && !c.madeOutside()) {
		kind = OpRelease
	}
	j.prunes = append(j.prunes, &op{kind: kind, key: c.key, gvr: c.gvr.Value(), live: c})
}

// planUnrendered prunes the children of j's parent that it no longer
// renders, for example the HorizontalPodAutoscaler after autoscaling is
// switched off; not one that may be a child waiting for another. While
// the parent fails, or has a child refused or a name taken, none is
// pruned: a typo in a tenant's spec deletes no more than an invalid spec
// would. Only a child held back because it refers to an object that is
// not resyncd's is pruned then, rather than left acting on it.
func (e *Engine) planUnrendered(rs *resourceState, j *job, mine []*liveChild, claimed claimSet,
	seenDrift map[childKey]driftRecord, now time.Time, rep *ResourceReport) {
	if j.failure != nil {
		return
	}
	held := len(j.rare().refused)+len(j.rare().taken) > 0
	for _, c := range mine {
		if claimed.has(c.key) || !c.controlledBy(rs.parentGVK) && !c.unowned() || j.waits(c.key) {
			continue
		}
		actsOnTaken := slices.Contains(j.rare().actsOnTaken, c.key)
		if held && !actsOnTaken {
			continue
		}
		n := len(j.prunes)
		e.planPrune(rs, j, c, seenDrift, now, rep)
		if len(j.prunes) > n && !actsOnTaken {
			j.prunes[n].unrendered = true
		}
	}
}

// idle says whether j has nothing to do: no write, no check, nothing
// pending or failed, and a status that would not change.
func (e *Engine) idle(rs *resourceState, j *job) bool {
	if len(j.ops)+len(j.prunes)+len(j.rare().checks)+len(j.rare().fights) > 0 || j.failure != nil || j.pending > 0 {
		return false
	}
	st, err := status(rs, j.parent, e.observe(j))
	if err != nil {
		return false // writeStatus reports it
	}
	old, _ := j.parent.Object["status"].(map[string]any)
	return sameOn(st, old, j.statusFields)
}

func (e *Engine) planParent(rs *resourceState, p *unstructured.Unstructured, live func(childKey) *liveChild, mine []*liveChild,
	claimed claimSet, seenDrift map[childKey]driftRecord, now time.Time, rep *ResourceReport, ext externalRead) *job {
	policy := rs.renderer.Policy(p)
	j := &job{parent: p, priority: policy.Priority, since: now}
	if policy.Paused {
		j.withheld = WithheldPaused
	} else if p.GetAnnotations()[desired.AnnotationReconcile] == desired.Disabled {
		j.withheld = WithheldDisabled
	} else if rs.cfg.Mode == config.ModeWarn {
		j.withheld = WithheldWarn
	}
	j.inputs = summaries(mine)
	if len(ext.found) > 0 {
		j.more().external = ext.found
	}
	if ext.failure != nil {
		j.failure = ext.failure
		return j
	}
	g, err := e.render(rs, p, j.inputs, j.rare().external)
	if err != nil {
		j.failure = renderFailure(err)
		return j
	}
	j.setWaiting(g.Waiting)
	cp := &childPlanner{e: e, rs: rs, j: j, claimed: claimed, seenDrift: seenDrift, now: now, rep: rep,
		blocked: map[childKey]blockage{}, live: live}
	keys, fed := cp.index(g)
	for i, d := range g.Children {
		if c := live(keys[i]); c != nil {
			rs.notePosition(c, i)
		}
		if !cp.plan(g, keys, fed, i, d) {
			return j
		}
	}
	if len(cp.blocked) > 0 {
		j.more().blocked = cp.blocked
	}
	if len(j.rare().waiting) > 0 {
		// The live children that wait for another: the job plans them
		// when what they wait for is written (replan).
		for _, c := range mine {
			if j.waits(c.key) {
				j.more().waitingLive = append(j.rare().waitingLive, c)
			}
		}
	}
	return j
}

// renderFailure is how a parent that cannot be rendered is Stalled.
func renderFailure(err error) *desired.Failure {
	var ie *desired.InvalidError
	if errors.As(err, &ie) {
		return &desired.Failure{Reason: cmp.Or(ie.Reason, "InvalidSpec"), Message: ie.Error()}
	}
	return &desired.Failure{Reason: "RenderFailed", Message: err.Error()}
}

// childPlanner decides what each rendered child of one parent needs: at
// plan time over the LISTed children, and again within the parent's job
// when a write's result lets children render that waited for it, or
// changes what they render (replan).
type childPlanner struct {
	e  *Engine
	rs *resourceState
	j  *job
	// live finds the live child of a key, nil when there is none.
	live    func(childKey) *liveChild
	claimed claimSet
	// seenDrift collects the drift records of the pass; nil within a job,
	// where the pass's records are already kept.
	seenDrift map[childKey]driftRecord
	// blocked are the children not written because their names are taken
	// or they are refused, and those that refer to one of them.
	blocked map[childKey]blockage
	now     time.Time
	rep     *ResourceReport
	// inJob: deciding within the job, where no dry-run is left to settle a
	// child; a mismatch is applied.
	inJob bool
}

// index returns the key of every child of g and whether another child
// refers to it: a write of such a child may change what that one renders.
func (cp *childPlanner) index(g desired.Graph) (keys []childKey, fed []bool) {
	keys = make([]childKey, len(g.Children))
	fed = make([]bool, len(g.Children))
	for i, d := range g.Children {
		keys[i] = keyOf(d)
		for _, ref := range g.RefersTo(i) {
			fed[ref] = true
		}
	}
	return keys, fed
}

// gvrOf is the resource of a rendered child's kind.
func (rs *resourceState) gvrOf(k childKey) schema.GroupVersionResource {
	for _, ct := range rs.renderer.ChildTypes() {
		if ct.GVR.Group == k.Group && ct.Kind == k.Kind {
			return ct.GVR
		}
	}
	return schema.GroupVersionResource{}
}

// plan decides the i-th child of g, d, and books it in the job and the
// report; false when the parent cannot go on (its child cannot be
// compared).
func (cp *childPlanner) plan(g desired.Graph, keys []childKey, fed []bool, i int, d *unstructured.Unstructured) bool {
	e, rs, j, p, rep := cp.e, cp.rs, cp.j, cp.j.parent, cp.rep
	k := keys[i]
	var needs []childKey
	for _, ref := range g.RefersTo(i) {
		needs = append(needs, keys[ref])
	}
	if desired.Outside(d, p) {
		if refusal := refuse(rs, k, p); refusal != nil {
			// Never written, as a taken name is not; what refers to it
			// is not written either.
			cp.blocked[k] = blockage{reason: refusal.Reason}
			rep.count(k.Kind, stateTaken)
			j.more().refused = append(j.rare().refused, *refusal)
			return true
		}
	}
	if b := blockedBy(d, needs, cp.blocked); b != nil {
		// Left unclaimed: a child of the parent's own of this name, made
		// before, is pruned rather than left acting on someone else's;
		// one that refers to a refused child is kept as it is.
		why := cp.blocked[*b]
		cp.blocked[k] = blockage{reason: why.reason, dependent: true}
		j.more().taken = append(j.rare().taken, refersToBlocked(k, *b, why))
		if why.reason == ReasonNameTaken {
			j.more().actsOnTaken = append(j.rare().actsOnTaken, k)
		}
		return true
	}
	cp.claimed.set(k)
	gvr := rs.gvrOf(k)
	live := cp.live(k)
	verdict := claimMine
	if live != nil {
		verdict = live.claimBy(p, rs.parentGVK.GroupKind())
	}
	unowned := live != nil && verdict == claimMine && live.unowned()
	if unowned {
		withoutOwnerReference(d, p)
	}
	created := live != nil && verdict == claimMine && live.created
	if created {
		markCreated(d, true)
	}
	norm, err := e.owner.normalize(d)
	var fp fingerprint
	if err == nil {
		fp, err = fingerprintOf(norm)
	}
	if err != nil {
		j.failure = &desired.Failure{Reason: "RenderFailed", Message: err.Error()}
		return false
	}
	// Tier 1: the fields resyncd applied differ, and the server has not
	// already found this very difference to change nothing.
	mismatch := live != nil && (!live.owned || live.fingerprint != fp)
	if mismatch {
		if k, noop := rs.isNoop(live, fp); noop {
			mismatch = false
			j.learnt.noops = append(j.learnt.noops, k) // carried on
		}
	}
	switch {
	case live == nil:
		rep.count(k.Kind, stateMissing)
		e.countDrift(rs, k.Kind, reasonMissing)
		e.noteDrift(rep, Drift{Object: k.String(), Reason: reasonMissing, Desired: norm})
		j.ops = append(j.ops, &op{kind: OpCreate, key: k, gvr: gvr, desired: cp.desired(d), fp: fp, lookFirst: rs.wasTaken(k), needs: needs, feeds: fed[i]})
	case verdict == claimTaken:
		cp.claimed.unset(k) // an orphan of a deleted parent is still pruned
		cp.blocked[k] = blockage{reason: ReasonNameTaken}
		rep.count(k.Kind, stateTaken)
		j.more().taken = append(j.rare().taken, takenMessage(live, p, rs.parentGVK.GroupKind()))
		return true
	case live.hold:
		e.planHeld(rs, j, k, live, d, norm, mismatch, rep)
		return true
	case verdict == claimPredecessor && !rs.cfg.Prune:
		// Left by an earlier parent of the same name, and resyncd may
		// not delete it: the parent cannot have its own until someone does.
		cp.claimed.unset(k)
		cp.blocked[k] = blockage{reason: ReasonNameTaken}
		rep.count(k.Kind, stateOrphaned)
		j.more().taken = append(j.rare().taken, fmt.Sprintf("%s was made for an earlier parent of this name; prune is off for this resource, so resyncd does not delete it: delete it to let this parent have its own", k))
		return true
	case verdict == claimPredecessor:
		// Left by an earlier parent of the same name: remove it first;
		// a later pass creates the new one.
		rep.count(k.Kind, stateOrphaned)
		e.countDrift(rs, k.Kind, reasonOrphaned)
		e.noteDrift(rep, Drift{Object: k.String(), Reason: reasonOrphaned, Live: e.liveFields(live, nil)})
		j.prunes = append(j.prunes, &op{kind: OpDelete, key: k, gvr: gvr, live: live})
		j.pending++
	case !cp.inJob && e.cfg.DriftCheck == config.DriftCheckServer, mismatch && (e.readOnly || j.withheld != ""):
		// Settled by a dry-run in checkOnServer, and counted there: in
		// server mode always; otherwise when no write may settle it.
		j.more().checks = append(j.rare().checks, &op{kind: OpUpdate, key: k, gvr: gvr, desired: e.kept(d), fp: fp, live: live, norm: e.keptNorm(norm), unowned: unowned, created: created})
		j.children = append(j.children, live)
		return true
	case mismatch:
		rep.count(k.Kind, stateDrifted)
		e.countDrift(rs, k.Kind, reasonChanged)
		e.noteDrift(rep, Drift{Object: k.String(), Reason: reasonChanged, Live: e.liveFields(live, d), Desired: norm})
		j.ops = append(j.ops, &op{kind: OpUpdate, key: k, gvr: gvr, desired: cp.desired(d), fp: fp, live: live, needs: needs, feeds: fed[i], unowned: unowned, created: created})
		j.children = append(j.children, live)
		if cp.seenDrift != nil && nextDrift(rs, k, cp.now).fights == fightPasses-1 {
			j.more().fights = append(j.rare().fights, k)
		}
	default:
		rep.count(k.Kind, stateInSync)
		j.children = append(j.children, live)
		j.synced = append(j.synced, syncedChild{key: k, resourceVersion: live.resourceVersion, desired: fp})
		return true
	}
	if cp.seenDrift != nil {
		rec := nextDrift(rs, k, cp.now)
		cp.seenDrift[k] = rec
		if rec.since.Before(j.since) {
			j.since = rec.since
		}
	}
	return true
}

// desired is what an op keeps of d: within a job, d itself, written next;
// at plan time what kept says.
func (cp *childPlanner) desired(d *unstructured.Unstructured) *unstructured.Unstructured {
	if cp.inJob {
		return d
	}
	return cp.e.kept(d)
}

// planHeld books live, a child with resyncd.io/reconcile: disabled: its
// drift is counted and shown in the parent's status, and nothing is
// written.
func (e *Engine) planHeld(rs *resourceState, j *job, k childKey, live *liveChild, d *unstructured.Unstructured,
	norm map[string]any, drifted bool, rep *ResourceReport) {
	j.children = append(j.children, live)
	j.more().held = append(j.rare().held, Held{Object: k.String(), Drifted: drifted})
	if !drifted {
		rep.count(k.Kind, stateInSync)
		return
	}
	rep.count(k.Kind, stateDrifted)
	e.countDrift(rs, k.Kind, reasonChanged)
	e.noteDrift(rep, Drift{Object: k.String(), Reason: reasonChanged, Live: e.liveFields(live, d), Desired: norm})
}

// kept is d if the engine keeps whole objects (`resyncd diff`); otherwise
// nil: a plan holds fingerprints, and materialize renders the parent again
// when its writes are made, so that a pass with thousands of writes ahead
// does not hold every rendered child at once.
func (e *Engine) kept(d *unstructured.Unstructured) *unstructured.Unstructured {
	if e.keepFields {
		return d
	}
	return nil
}

// keptNorm is kept for the normalized form the report shows.
func (e *Engine) keptNorm(m map[string]any) map[string]any {
	if e.keepFields {
		return m
	}
	return nil
}

// noteDrift keeps d in the report when the engine keeps whole objects (for
// `resyncd diff`); a daemon's passes keep only counts, so that a cold start
// over thousands of parents does not hold every rendered child at once.
func (e *Engine) noteDrift(rep *ResourceReport, d Drift) {
	if e.keepFields {
		rep.Drifts = append(rep.Drifts, d)
	}
}

// liveFields returns, for the report, what live holds at the fields that
// desired sets (all the fields resyncd owns when desired is nil); nil unless
// the engine keeps whole objects.
func (e *Engine) liveFields(live *liveChild, desired *unstructured.Unstructured) map[string]any {
	if live.object() == nil {
		return nil
	}
	var m map[string]any
	var err error
	if desired != nil {
		m, err = e.owner.project(live.object(), desired)
	} else {
		m, _, err = e.owner.owned(live.object())
	}
	if err != nil {
		e.log.Debug("Cannot show live fields", zap.String("object", live.key.String()), zap.Error(err))
	}
	return m
}

// nextDrift is the record of k after this pass found it drifted too.
func nextDrift(rs *resourceState, k childKey, now time.Time) driftRecord {
	rec, ok := rs.drift[k]
	if !ok {
		return driftRecord{since: now, passes: 1}
	}
	rec.passes++
	if rs.mem.repaired[k] {
		rec.fights++
	} else {
		rec.fights = 0
	}
	return rec
}

func sortedKeys(m map[childKey]*liveChild) []childKey {
	keys := make([]childKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a].less(keys[b]) })
	return keys
}

func (e *Engine) countDrift(rs *resourceState, kind, reason string) {
	if e.metrics != nil {
		e.metrics.drift.WithLabelValues(rs.cluster, rs.name, kind, reason).Inc()
	}
}

// pruneOrder sorts prunes into the reverse of the order the renderer
// applies them in, so that nothing is left referring to a deleted child:
// by where each child's parent last rendered it, when that is known of
// every one, else by its kind's place in the renderer's ChildTypes (the
// first template of the kind, for a graph); then by key. Sorting by one
// position keeps each parent's own order among the orphans of several.
func (rs *resourceState) pruneOrder(prunes []*op) {
	if len(prunes) < 2 {
		return
	}
	known := !slices.ContainsFunc(prunes, func(o *op) bool { return o.live.position == 0 })
	slices.SortFunc(prunes, func(a, b *op) int {
		c := cmp.Compare(rs.kindOrder[b.gvr], rs.kindOrder[a.gvr])
		if known {
			c = cmp.Compare(b.live.position, a.live.position)
		}
		if c != 0 {
			return c
		}
		if a.key.less(b.key) {
			return -1
		}
		if b.key.less(a.key) {
			return 1
		}
		return 0
	})
}

// notePosition keeps, for the passes after this one, that live's parent
// rendered it at index i: where to prune it once the parent no longer
// renders it. It rides on live's memo entry, so it costs no map of its own
// and is kept while live is unchanged.
func (rs *resourceState) notePosition(live *liveChild, i int) {
	key := versionOf(live.uid, live.resourceVersion)
	if m, ok := rs.next.memo.get(key); ok && m.position != int32(i+1) {
		m.position = int32(i + 1)
		rs.next.memo.set(key, m)
	}
}
