package engine

import (
	"fmt"
	"time"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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
