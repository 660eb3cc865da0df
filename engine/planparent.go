package engine

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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
	if len(j.ops)+len(j.prunes)+len(j.rare().checks)+len(j.rare().fights)+len(j.rare().metadata) > 0 || j.failure != nil || j.pending > 0 {
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
		j.more().unresolved = true
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
