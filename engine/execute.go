package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/resyncd/resyncd/desired"
)

// maxLoggedErrors bounds the write errors logged per pass; the rest are
// counted in the pass line and the metrics.
const maxLoggedErrors = 5

// transientBackoff retries a write that failed for a passing reason within
// the pass: about 3 s in all, then the write waits for the next pass.
var transientBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 5, Cap: 2 * time.Second}

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

// warmth caches, for one pass, whether the API server may still be
// warming up: asked once, at the first 403.
type warmth struct {
	once    sync.Once
	warming bool
}

// warmingUp says whether the API server may still be warming up: the
// pass before failed (cameBack: the server was away, or restarting), or
// the server says it is not ready. Until the RBAC authorizer has loaded
// the roles and bindings, it refuses requests it allows moments later;
// such a 403 is transient, not a reason to stall a parent.
func (w *warmth) warmingUp(ctx context.Context, e *Engine, cameBack bool) bool {
	w.once.Do(func() {
		if cameBack {
			w.warming = true
			return
		}
		if e.ready != nil {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			// Where /readyz itself is refused (a cluster without the
			// default public-info-viewer binding), readiness is unknown and
			// a 403 counts as it always does.
			err := e.ready(ctx)
			w.warming = err != nil && !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err)
		}
	})
	return w.warming
}

// warmingUp is warmth.warmingUp for the pass's writes.
func (r *run) warmingUp() bool { return r.warm.warmingUp(r.inFlight, r.e, r.cameBack) }

// transient says whether err, met by a write of this pass, may pass: as
// isTransient says, or a 403 while the server warms up.
func (r *run) transient(err error) bool {
	return isTransient(err) || (apierrors.IsForbidden(err) && r.warmingUp())
}

// lastPassFailed says whether the last pass over rs failed: the API
// server may have just come back.
func (e *Engine) lastPassFailed(rs *resourceState) bool {
	e.failingMu.Lock()
	defer e.failingMu.Unlock()
	return e.failing[rs]
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
// It lets go of the rendered children and the parent when it is done.
func (e *Engine) runJob(ctx context.Context, r *run, j *job) {
	if err := e.materialize(r.rs, j); err != nil && j.failure == nil {
		j.failure = &desired.Failure{Reason: "RenderFailed", Message: err.Error()}
	}
	defer func() {
		for _, o := range j.ops {
			o.desired = nil
		}
		j.parent = nil
	}()
	// taken are the children found someone else's as they were created,
	// and those not written because they refer to one.
	taken := map[childKey]blockage{}
	// written are the children this job has written, each at most once.
	written := map[childKey]bool{}
	for i := 0; i < len(j.ops); i++ {
		o := j.ops[i]
		if b := blockedBy(o.desired, o.needs, taken); b != nil {
			taken[o.key] = blockage{reason: ReasonNameTaken, dependent: true}
			j.taken = append(j.taken, refersToBlocked(o.key, *b, taken[*b]))
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
		if changed && r.rs.keepers[o.gvr] != nil && (o.feeds || len(j.waiting) > 0) {
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

// paced makes one write: each try waits for the write limiter, and the
// errors retriable says may pass are retried with capped backoff.
func (e *Engine) paced(ctx context.Context, retriable func(error) bool, write func() error) error {
	return retry.OnError(transientBackoff, retriable, func() error {
		if err := e.limiter.Wait(ctx); err != nil {
			return err
		}
		return write()
	})
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
	c := &liveChild{key: o.key, gvr: o.gvr, uid: result.GetUID(), resourceVersion: result.GetResourceVersion(), generation: result.GetGeneration()}
	c.keeper = rs.keepers[o.gvr]
	c.kept = c.keeper.pick(result.Object)
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

// isNoop says whether the last pass found that applying fp to live
// changes nothing, and the memory's key of that finding, which whoever
// relies on it carries on to the next pass.
func (rs *resourceState) isNoop(live *liveChild, fp fingerprint) (noopKey, bool) {
	k := noopKey{string(live.uid), live.resourceVersion, fp}
	return k, rs.mem.noops[k]
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

// status is the whole status p should show: the renderer's fields and
// readiness, composed with the conditions the engine owns.
func status(rs *resourceState, p *unstructured.Unstructured, obs Observation) (map[string]any, error) {
	st, err := rs.renderer.Status(p, obs.Observation)
	if err != nil {
		return nil, err
	}
	return Compose(p, obs, st)
}

// observe is what the status of j's parent is computed from.
func (e *Engine) observe(j *job) Observation {
	obs := Observation{Observation: desired.Observation{Now: e.now(), Failure: j.failure, Applied: j.applied, Waiting: j.waiting,
		External: j.external}, Pending: j.pending, Withheld: j.withheld, Held: j.held}
	switch {
	case obs.Failure != nil:
	case len(j.refused) > 0:
		msgs := make([]string, 0, len(j.refused)+len(j.taken))
		for _, r := range j.refused {
			msgs = append(msgs, r.Message)
		}
		obs.Failure = &desired.Failure{Reason: j.refused[0].Reason, Message: strings.Join(append(msgs, j.taken...), "; ")}
	case len(j.taken) > 0:
		obs.Failure = &desired.Failure{Reason: ReasonNameTaken, Message: strings.Join(j.taken, "; ")}
	}
	for _, c := range j.children {
		obs.Children = append(obs.Children, c.summary())
	}
	return obs
}

// sameOn reports whether old holds every field of st with the same value,
// and none of the fields resyncd owns (owned) that st no longer has. Fields
// of old that other managers own are theirs, and not compared.
func sameOn(st, old map[string]any, owned []string) bool {
	for k, v := range st {
		if !reflect.DeepEqual(v, old[k]) {
			return false
		}
	}
	for _, k := range owned {
		if _, present := st[k]; !present {
			if _, ok := old[k]; ok {
				return false
			}
		}
	}
	return true
}

// isTransient says whether err may pass if the write is tried again.
func isTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if tooLarge(err) {
			return false
		}
		return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
			apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err) ||
			apierrors.IsUnexpectedServerError(err) || status.Status().Code >= 500
	}
	// Not an answer from the server: the connection was refused, reset or
	// cut, or timed out. The server may be back on the next try.
	return true
}

// tooLarge says whether the server refused a write because the object is
// too large to store: etcd's "request is too large", which the API server
// returns as a 500, or the API server's own 413. Trying again cannot help.
func tooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) ||
		(apierrors.IsInternalError(err) && strings.Contains(apiMessage(err), "request is too large"))
}

func failureReason(err error) string {
	if tooLarge(err) {
		return "RequestTooLarge"
	}
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return string(r)
	}
	return "WriteFailed"
}

func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
