package engine

import (
	"maps"
	"slices"

	"github.com/resyncd/resyncd/desired"
)

// replan renders j's parent again after the write of j.ops[at] changed a
// child that another refers to, or while children wait, with what the
// server returned of each child written so far: the response to a
// server-side apply is the object as the server stored it (its uid, the
// defaults and what admission set, a Service's clusterIP). The ops after
// at become what the new render needs: children that waited render and
// are planned, and children whose desired content depends on what was
// just written are planned anew, so that one job converges a chain of
// any depth whose references the API server fills at write time. A
// child is written at most once a job; the budget, the rate limit and
// the job's withholding apply to the new ops as to the others (admit). A
// render that fails now stalls the parent: the writes left are blocked.
func (e *Engine) replan(r *run, j *job, at int, written map[childKey]bool, taken map[childKey]blockage) {
	rs := r.rs
	j.inputs = writtenInputs(j.inputs, j.children, written)
	g, err := e.render(rs, j.parent, j.inputs, j.rare().external)
	if err != nil {
		j.failure = renderFailure(err)
		return
	}
	j.setWaiting(g.Waiting)
	var rep ResourceReport
	// The decisions not yet carried out are taken back, and made again
	// from the new render.
	rest := map[childKey]*op{}
	for _, o := range j.ops[at+1:] {
		rest[o.key] = o
		rep.uncount(o.key.Kind, stateOf(o.kind))
	}
	j.ops = j.ops[: at+1 : at+1]
	blocked := maps.Clone(j.rare().blocked)
	if blocked == nil {
		blocked = map[childKey]blockage{}
	}
	maps.Copy(blocked, taken)
	// The live children as the job knows them now, before the decisions
	// taken back drop them from j.children.
	lives := map[childKey]*liveChild{}
	for _, c := range slices.Concat(j.rare().waitingLive, j.children) {
		lives[c.key] = c
	}
	cp := &childPlanner{e: e, rs: rs, j: j, live: func(k childKey) *liveChild { return lives[k] }, claimed: claimSet{window: map[childKey]bool{}}, blocked: blocked,
		now: e.now(), rep: &rep, inJob: true}
	keys, fed := cp.index(g)
	for i, d := range g.Children {
		k := keys[i]
		if written[k] {
			continue
		}
		if rest[k] == nil {
			if j.settled(k, lives[k], blocked) {
				continue
			}
			if i := slices.IndexFunc(j.synced, func(s syncedChild) bool { return s.key == k }); i >= 0 {
				j.synced = slices.Delete(j.synced, i, i+1)
				rep.uncount(k.Kind, stateInSync)
			}
		}
		j.children = slices.DeleteFunc(j.children, func(c *liveChild) bool { return c.key == k })
		if !cp.plan(g, keys, fed, i, d) {
			break
		}
	}
	if j.recounted == nil {
		j.recounted = &ResourceReport{}
	}
	j.recounted.merge(&rep)
}

// stateOf is the state a child planned for the write kind is counted in.
func stateOf(k Operation) string {
	if k == OpCreate {
		return stateMissing
	}
	return stateDrifted
}

// writtenInputs are the live children a parent is rendered with once the
// children of written were written: each as the write returned it
// (refresh), the others as LISTed.
func writtenInputs(inputs []desired.Child, children []*liveChild, written map[childKey]bool) []desired.Child {
	out := slices.Clone(inputs)
	for _, c := range children {
		if !written[c.key] {
			continue
		}
		s := c.summary()
		i := slices.IndexFunc(out, func(in desired.Child) bool {
			return in.Kind == s.Kind && in.Namespace == s.Namespace && in.Name == s.Name
		})
		if i < 0 {
			out = append(out, s)
		} else {
			out[i] = s
		}
	}
	return out
}

// settled says whether the plan decided k for good, as nothing replan
// may decide again: taken, refused or referring to either (blocked),
// held (live, its live object, holds it), pruned as an earlier parent's,
// or left to a dry-run.
func (j *job) settled(k childKey, live *liveChild, blocked map[childKey]blockage) bool {
	if _, ok := blocked[k]; ok {
		return true
	}
	if live != nil && live.hold {
		return true
	}
	is := func(o *op) bool { return o.key == k }
	return slices.ContainsFunc(j.prunes, is) || slices.ContainsFunc(j.rare().checks, is)
}
