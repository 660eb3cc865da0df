package engine

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/resyncd/resyncd/config"
)

// SyncResource runs one pass over the i-th watched resource.
func (e *Engine) SyncResource(ctx context.Context, i int) (ResourceReport, error) {
	return e.syncState(ctx, e.resources[i])
}

// syncState runs one pass over the resource rs.
func (e *Engine) syncState(ctx context.Context, rs *resourceState) (ResourceReport, error) {
	start := e.now()
	rep := ResourceReport{Resource: rs.name}
	if rs.cfg.Mode == config.ModeOff {
		e.sched.arrive()
		return rep, nil
	}
	err := e.pass(ctx, rs, &rep)
	rep.Duration = e.now().Sub(start)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// Stopped (SIGTERM, or the lease lost), not failed.
		e.log.Info("Pass stopped", zap.String("resource", rs.name), zap.Duration("duration", rep.Duration))
		return rep, err
	}
	e.record(rs, &rep, err)
	return rep, err
}

func (e *Engine) pass(ctx context.Context, rs *resourceState, rep *ResourceReport) error {
	defer e.acquire(rs)()
	rs.begin()
	defer rs.end()
	if _, any := e.parentScope(rs); !any {
		// Another replica's work, all of it: nothing is read or written,
		// and nothing kept of what the pass before held.
		e.sched.arrive()
		return nil
	}
	jobs, err := e.planPass(ctx, rs, rep)
	if err != nil || e.readOnly {
		e.sched.arrive()
		return err
	}
	err = e.execute(ctx, rs, jobs, rep)
	fold(rs.next, rep, jobs)
	return err
}

// begin readies what a pass learns for the next one.
func (rs *resourceState) begin() {
	rs.next = newMemory(rs.mem)
	if rs.externals != nil {
		rs.externals.begin()
	}
}

// end keeps what the pass learnt, and only that, for the next one.
func (rs *resourceState) end() {
	rs.next.sweep()
	rs.mem, rs.next = rs.next, nil
	rs.externals.end()
}

// record publishes a pass's numbers and its one Info line.
func (e *Engine) record(rs *resourceState, rep *ResourceReport, err error) {
	e.failingMu.Lock()
	if err != nil {
		e.failing[rs] = true
	} else {
		delete(e.failing, rs)
	}
	up := len(e.failing) == 0
	e.failingMu.Unlock()
	if m := e.metrics; m != nil {
		m.SetClusterUp(rs.cluster, up)
		if err == nil {
			m.clusterSuccess.WithLabelValues(rs.cluster).Set(float64(e.now().Unix()))
		}
		result := "success"
		if err != nil {
			result = "error"
		} else {
			m.lastSuccess.WithLabelValues(rs.cluster, rs.name).Set(float64(e.now().Unix()))
		}
		m.passes.WithLabelValues(rs.cluster, rs.name, result).Inc()
		m.passDuration.WithLabelValues(rs.cluster, rs.name).Observe(rep.Duration.Seconds())
		m.deferred.WithLabelValues(rs.cluster, rs.name).Set(float64(rep.Deferred))
		if err == nil {
			// Kinds and states that vanished must not keep their last value.
			m.managed.DeletePartialMatch(prometheus.Labels{"cluster": rs.cluster, "resource": rs.name})
			for ks, n := range rep.objects {
				m.managed.WithLabelValues(rs.cluster, rs.name, ks.kind, ks.state).Set(float64(n))
			}
		}
	}
	fields := []zap.Field{
		zap.String("resource", rs.name), zap.Int("parents", rep.Parents),
		zap.Int("inSync", rep.InSync), zap.Int("drifted", rep.Drifted), zap.Int("missing", rep.Missing), zap.Int("orphaned", rep.Orphaned), zap.Int("taken", rep.Taken),
		zap.Int("created", rep.Created), zap.Int("updated", rep.Updated), zap.Int("deleted", rep.Deleted), zap.Int("released", rep.Released), zap.Int("statuses", rep.Statuses), zap.Int("metadata", rep.Metadata),
		zap.Int("noops", rep.NoOps), zap.Int("superseded", rep.Superseded), zap.Int("deferred", rep.Deferred), zap.Int("withheld", rep.Withheld), zap.Int("blocked", rep.Blocked),
		zap.Int("failed", rep.Failed), zap.Int("transient", rep.Transient), zap.Int("stalled", rep.Stalled), zap.Duration("duration", rep.Duration),
	}
	if err != nil {
		e.log.Warn("Pass failed", append(fields, zap.Error(err))...)
		return
	}
	e.log.Info("Pass finished", fields...)
}

// SyncOnce runs one pass over every watched resource and returns what
// each did, in the configuration's order. The passes run at once, and
// their writes wait until every pass is planned, so that the scheduler
// orders all of them by priority. An error of one resource does not stop
// the others.
func (e *Engine) SyncOnce(ctx context.Context) (Report, error) {
	rep := Report{Resources: make([]ResourceReport, len(e.resources))}
	errs := make([]error, len(e.resources))
	e.sched.hold(len(e.resources))
	var wg sync.WaitGroup
	for i := range e.resources {
		wg.Go(func() { rep.Resources[i], errs[i] = e.SyncResource(ctx, i) })
	}
	wg.Wait()
	return rep, errors.Join(errs...)
}

// planPass reads the children and the parents and returns the pass's
// jobs, in the order they run. It writes nothing; only driftCheck server,
// and tier-1 mismatches that no write will settle, make dry-runs.
func (e *Engine) planPass(ctx context.Context, rs *resourceState, rep *ResourceReport) ([]*job, error) {
	jobs, err := e.plan(ctx, rs, rep)
	if err != nil || !hasChecks(jobs) {
		return jobs, err
	}
	if err := e.checkOnServer(ctx, rs, jobs, rep); err != nil {
		return nil, err
	}
	fold(rs.next, rep, jobs) // before the jobs of parents found idle are dropped
	// Parents whose every child the server found in sync.
	jobs = slices.DeleteFunc(jobs, func(j *job) bool { return j.parent != nil && e.idle(rs, j) })
	sortJobs(jobs)
	return jobs, nil
}
