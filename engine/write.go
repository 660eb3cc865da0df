package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unique"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/resyncd/resyncd/desired"
)

// run is the state of one pass's execution: its contexts, its share of
// the scheduler's budget, its report, and what the scheduler keeps of it.
type run struct {
	e  *Engine
	rs *resourceState
	// ctx ends when the pass stops: no new batch of its jobs starts;
	// inFlight, the context of the writes, ends only at its deadline, so
	// that the batch in flight finishes.
	ctx, inFlight context.Context
	budget        *atomic.Int64
	rep           *ResourceReport
	logged        atomic.Int32
	// started is the batch of the pass's last job taken; waiting counts
	// its jobs queued or running; dropped are those never started. The
	// scheduler's lock guards the three.
	started, waiting int
	dropped          []*job
	// cameBack says the resource's last pass failed: the API server may
	// have just come back. warm caches, once a pass, whether a 403 may be
	// the server's warm-up rather than a refusal (warmingUp).
	cameBack bool
	warm     warmth
}

// execute makes the pass's writes through the engine's scheduler, with
// those of other passes running at the same time. The jobs form batches
// of about apply.batchSize writes: once ctx ends, no new batch starts, and
// the batch in flight finishes, so no parent is left half-written.
func (e *Engine) execute(ctx context.Context, rs *resourceState, jobs []*job, rep *ResourceReport) error {
	r := &run{e: e, rs: rs, rep: rep, ctx: ctx, cameBack: e.lastPassFailed(rs)}
	// The batch in flight outlives a stop, not the pass's deadline.
	r.inFlight = context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		r.inFlight, cancel = context.WithDeadline(r.inFlight, deadline)
		defer cancel()
	}
	batch := make([]int, len(jobs))
	for i, writes := 0, 0; i < len(jobs); i++ {
		if i > 0 {
			batch[i] = batch[i-1]
			if writes >= e.cfg.Apply.BatchSize {
				batch[i]++
				writes = 0
			}
		}
		writes += len(jobs[i].ops) + len(jobs[i].prunes) + 1
	}
	for _, j := range e.sched.execute(r, jobs, batch) {
		rep.Deferred += len(j.ops) + len(j.prunes)
	}
	return ctx.Err()
}

// runJob makes one parent's writes in order: child writes, status, prunes.
// It lets go of all but what fold reads when it is done (release).
func (e *Engine) runJob(ctx context.Context, r *run, j *job) {
	defer j.release()
	if err := j.unpack(); err != nil {
		// Not expected: the JSON is the job's own. Nothing of the
		// parent's is written, not even its status; the next pass reads
		// it again.
		e.log.Error("Parent unreadable", zap.String("parent", j.id), zap.Error(err))
		for _, o := range slices.Concat(j.ops, j.prunes) {
			j.book(outcome{key: o.key, verb: o.kind, result: resultBlocked})
			j.pending++
		}
		return
	}
	if err := e.materialize(r.rs, j); err != nil && j.failure == nil {
		j.failure = &desired.Failure{Reason: "RenderFailed", Message: err.Error()}
	}
	if x := j.rare(); len(x.metadata) > 0 {
		e.writeMetadata(ctx, r, j)
		if x.releasing {
			return
		}
	}
	// taken are the children found someone else's as they were created,
	// and those not written because they refer to one.
	taken := map[childKey]blockage{}
	// written are the children this job has written, each at most once.
	written := map[childKey]bool{}
	for i := 0; i < len(j.ops); i++ {
		o := j.ops[i]
		if b := blockedBy(o.desired, o.needs, taken); b != nil {
			taken[o.key] = blockage{reason: ReasonNameTaken, dependent: true}
			j.more().taken = append(j.rare().taken, refersToBlocked(o.key, *b, taken[*b]))
			continue
		}
		if !e.admit(r, j, o) {
			continue
		}
		written[o.key] = true
		changed, err := e.write(ctx, r, j, o)
		if errors.Is(err, errTaken) {
			taken[o.key] = blockage{reason: ReasonNameTaken}
			continue
		}
		if changed && r.rs.keepers[o.gvr] != nil && (o.feeds || len(j.rare().waiting) > 0) {
			// What the server returned may be what another child waits
			// for, or reads: render the parent again and write what it
			// needs now, in this pass.
			e.replan(r, j, i, written, taken)
		}
	}
	if j.parent != nil {
		e.writeStatus(ctx, r, j)
		e.recordFights(j)
	}
	for _, o := range j.prunes {
		if o.unrendered && len(taken) > 0 {
			// A name found taken as it was created holds the pruning of
			// what the parent no longer renders, as one found in the plan
			// does; the next pass plans it again.
			continue
		}
		if !e.admit(r, j, o) {
			continue
		}
		_, _ = e.write(ctx, r, j, o) // booked by settle; a prune blocks nothing after it
	}
}

// admit says whether o may be written now: not withheld, within budget.
func (e *Engine) admit(r *run, j *job, o *op) bool {
	var held result
	switch {
	case j.withheld != "":
		held = resultWithheld
	case j.failure != nil && o.kind != OpDelete:
		held = resultBlocked
	case r.budget.Add(-1) < 0:
		held = resultDeferred
	default:
		return true
	}
	j.book(outcome{key: o.key, verb: o.kind, result: held})
	j.pending++
	return false
}

// mayLog says whether another write error may be logged in this pass.
func (r *run) mayLog() bool { return r.logged.Add(1) <= maxLoggedErrors }

// write makes one child write, retrying transient errors, and returns
// whether it changed the object and its error: errTaken when a create
// found the name someone else's.
func (e *Engine) write(ctx context.Context, r *run, j *job, o *op) (bool, error) {
	start := e.now()
	var result *unstructured.Unstructured
	var err error
	switch o.kind {
	case OpCreate:
		if result, err = e.create(ctx, r, j, o); errors.Is(err, errTaken) {
			return false, err
		}
	case OpRelease:
		err = e.release(ctx, o)
	case OpDelete:
		// A conflict is the UID precondition failing: the object is not the
		// one planned, and no retry makes it so.
		err = e.paced(ctx, func(err error) bool { return isTransient(err) && !apierrors.IsConflict(err) }, func() error {
			return e.writer.delete(ctx, o.gvr, o.key.Kind, o.key.Namespace, o.key.Name, o.live.uid)
		})
	default:
		result, err = e.applyOwned(ctx, o)
	}
	outcome := e.settle(r, j, o, result, err)
	if m := e.metrics; m != nil {
		m.applies.WithLabelValues(r.rs.cluster, r.rs.name, o.key.Kind, string(o.kind), outcome).Inc()
		m.applyDuration.WithLabelValues(r.rs.cluster, string(o.kind)).Observe(e.now().Sub(start).Seconds())
	}
	return outcome == "success", err
}

// settle books the outcome of a write in its job and returns the result
// label of resyncd_applies_total.
func (e *Engine) settle(r *run, j *job, o *op, result *unstructured.Unstructured, err error) string {
	out := outcome{key: o.key, verb: o.kind, err: err}
	if result != nil {
		out.resourceVersion = result.GetResourceVersion()
	}
	switch {
	case o.kind == OpRelease && apierrors.IsNotFound(err):
		out.result = resultNoop // gone, or re-created: nothing of the plan's to release
	case err == nil && o.kind == OpRelease:
		out.result = resultSuccess
		j.applied = true
		e.log.Info("Released", zap.String("object", o.key.String()))
	case err == nil && o.kind == OpDelete, o.kind == OpDelete && apierrors.IsNotFound(err): // gone already
		out.result = resultSuccess
		j.applied = err == nil
	case o.kind == OpDelete && apierrors.IsConflict(err):
		// Re-created with another UID since it was read: the precondition
		// kept a stale plan from deleting the new object, which the next
		// pass judges afresh.
		out.result = resultSuperseded
		e.log.Info("Not deleted: re-created since it was read", zap.String("object", o.key.String()), zap.String("uid", string(o.live.uid)))
	case err == nil && o.kind == OpUpdate && result.GetResourceVersion() == o.live.resourceVersion:
		out.result = resultNoop
		e.refresh(r.rs, j, o, result)
		j.learnt.noops = append(j.learnt.noops, noopKey{string(o.live.uid), o.live.resourceVersion, o.fp})
		if e.metrics != nil {
			e.metrics.falsePositives.WithLabelValues(r.rs.cluster, r.rs.name, o.key.Kind).Inc()
		}
	case err == nil:
		out.result = resultSuccess
		e.refresh(r.rs, j, o, result)
		j.applied = true
		if o.kind == OpUpdate {
			j.learnt.repaired = append(j.learnt.repaired, o.key)
		}
		e.log.Info("Applied", zap.String("object", o.key.String()), zap.String("operation", string(o.kind)))
	default:
		out.result, out.transient = resultFailed, r.transient(err)
		j.pending++
		if !out.transient && j.parent != nil && j.failure == nil {
			j.failure = &desired.Failure{Reason: failureReason(err), Message: fmt.Sprintf("%s %s: %s", o.kind, o.key, apiMessage(err))}
		}
		if r.mayLog() {
			e.log.Warn("Write failed", zap.String("object", o.key.String()), zap.String("operation", string(o.kind)),
				zap.Bool("transient", out.transient), zap.Error(err))
		}
	}
	j.book(out)
	return out.result.label()
}

// refresh replaces what the job knows of a child with the write's result.
func (e *Engine) refresh(rs *resourceState, j *job, o *op, result *unstructured.Unstructured) {
	c := &liveChild{key: o.key, gvr: unique.Make(o.gvr), uid: result.GetUID(), resourceVersion: result.GetResourceVersion(), generation: result.GetGeneration()}
	c.keep(rs.keepers[o.gvr], result)
	if st, ok := result.Object["status"].(map[string]any); ok {
		c.status = st
	}
	for i, old := range j.children {
		if old.key == o.key {
			j.children[i] = c
			return
		}
	}
	j.children = append(j.children, c)
}

// writeStatus computes the parent's status and applies it to /status when
// it differs from what the parent shows.
func (e *Engine) writeStatus(ctx context.Context, r *run, j *job) {
	obs := e.observe(j)
	j.stalled = obs.Failure != nil
	st, err := status(r.rs, j.parent, obs)
	if err != nil {
		e.log.Warn("Status failed", zap.String("parent", objectID(j.parent)), zap.Error(err))
		return
	}
	old, _ := j.parent.Object["status"].(map[string]any)
	if sameOn(st, old, j.statusFields) {
		return
	}
	if r.budget.Add(-1) < 0 {
		j.book(outcome{verb: OpStatus, result: resultDeferred})
		return
	}
	status := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": j.parent.GetAPIVersion(), "kind": j.parent.GetKind(),
		"metadata": map[string]any{"name": j.parent.GetName(), "namespace": j.parent.GetNamespace()},
		"status":   st,
	}}
	start := e.now()
	err = e.paced(ctx, isTransient, func() error {
		_, err := e.writer.apply(ctx, r.rs.gvr, status, applyOptions{subresource: "status"})
		return err
	})
	out := outcome{verb: OpStatus, result: resultSuccess, err: err}
	switch {
	case err == nil:
		e.recordTransitions(r.rs, j.parent, old, st)
	case apierrors.IsNotFound(err): // deleted during the pass
		out.result = resultNoop
	default:
		out.result, out.transient = resultFailed, r.transient(err)
		if r.mayLog() {
			e.log.Warn("Status write failed", zap.String("parent", objectID(j.parent)), zap.Error(err))
		}
		if !out.transient {
			e.announceStalled(r.rs, j, obs.Failure)
		}
	}
	j.book(out)
	if m := e.metrics; m != nil {
		m.applies.WithLabelValues(r.rs.cluster, r.rs.name, j.parent.GetKind(), string(OpStatus), out.result.label()).Inc()
		m.applyDuration.WithLabelValues(r.rs.cluster, string(OpStatus)).Observe(e.now().Sub(start).Seconds())
	}
}

// errTaken says a create found the name taken; create has booked it.
var errTaken = errors.New("name taken")

// create makes o's missing child without ever writing over an object that
// is not the parent's: the apply carries createOnly, so if an object of
// the name exists the API server refuses it, and the object is read to
// see whose it is. If it is the parent's (its own child, made since the
// LIST, or one handed over with resyncd.io/adopt), it is applied as
// usual; otherwise the name is booked as taken, and nothing is written.
// When an earlier pass found the name taken, the object is read first,
// so that a taken name costs one read a pass and no refused write. A
// child outside the parent's namespace is created with
// desired.AnnotationCreated, which an existing object keeps only if it
// has it already.
func (e *Engine) create(ctx context.Context, r *run, j *job, o *op) (*unstructured.Unstructured, error) {
	createOnlyRetriable := func(err error) bool { return isTransient(err) && !apierrors.IsConflict(err) }
	markCreated(o.desired, desired.Outside(o.desired, j.parent))
	for try := 0; ; try++ {
		if !o.lookFirst || try > 0 {
			var result *unstructured.Unstructured
			err := e.paced(ctx, createOnlyRetriable, func() error {
				var err error
				result, err = e.writer.apply(ctx, o.gvr, o.desired, applyOptions{createOnly: true})
				return err
			})
			if !apierrors.IsConflict(err) || try > 0 {
				return result, err // a second conflict is a race: settled as transient
			}
		}
		u, err := e.writer.get(ctx, o.gvr, o.key.Kind, o.key.Namespace, o.key.Name)
		if apierrors.IsNotFound(err) {
			continue // freed since: create it
		}
		if err != nil {
			return nil, err
		}
		c := &liveChild{key: o.key, rare: &liveRare{managers: fieldManagers(u)}}
		c.identify(u)
		gk := j.parent.GroupVersionKind().GroupKind()
		claim := c.claimBy(j.parent, gk)
		fromKro := claim != claimMine && r.rs.cfg.AdoptsFromKro() && c.madeByKroFor(j.parent)
		if claim != claimMine && !fromKro {
			e.bookTaken(r, j, c, gk)
			return nil, errTaken
		}
		switch {
		case fromKro:
			e.log.Info("Adopting from kro", zap.String("object", o.key.String()), zap.String("parent", objectID(j.parent)))
		case !c.labelled:
			e.log.Info("Adopting", zap.String("object", o.key.String()), zap.String("parent", objectID(j.parent)))
		}
		if c.unowned() && !fromKro {
			withoutOwnerReference(o.desired, j.parent)
		}
		fields, _, err := e.owner.owned(u)
		if err != nil {
			return nil, err
		}
		c.created = createdIn(fields)
		markCreated(o.desired, c.created)
		// The parent's own child that the LIST did not select (made by a
		// release before the parent-kind label, or since the LIST), or one
		// handed over: an update of the object as it is now.
		c.uid, c.resourceVersion = u.GetUID(), u.GetResourceVersion()
		o.kind, o.live = OpUpdate, c
		result, err := e.applyOwned(ctx, o)
		if fromKro && err == nil {
			return e.dropKroManagers(ctx, o, result)
		}
		return result, err
	}
}

// bookTaken records that c's name, which j's parent renders, is taken.
func (e *Engine) bookTaken(r *run, j *job, c *liveChild, gk schema.GroupKind) {
	j.more().taken = append(j.rare().taken, takenMessage(c, j.parent, gk))
	j.learnt.taken = append(j.learnt.taken, c.key)
	j.book(outcome{key: c.key, verb: OpCreate, result: resultTaken})
}
