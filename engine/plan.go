package engine

import (
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
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
		// fight it, and the status is of no more use. An instance of
		// kro's has kro's finalizer taken off.
		pl.planRelease(p)
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
	if labels, finalizer, ok := kroOf(rs); ok {
		if ops := manageOps(p, labels, finalizer); ops != nil {
			j.more().metadata = ops
		}
	}
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

func sortedKeys(m map[childKey]*liveChild) []childKey {
	keys := make([]childKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a].less(keys[b]) })
	return keys
}
