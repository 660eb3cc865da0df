package engine

import (
	"context"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/util/retry"

	"github.com/resyncd/resyncd/config"
)

// checkOnServer settles drift with a dry-run apply, compared with the
// object as LISTed: for every child under driftCheck server, and for tier-1
// mismatches that no write will settle (read-only passes, warn mode,
// spec.paused). apply.concurrency requests are in flight. A child the
// dry-run would change gets an update in its job.
func (e *Engine) checkOnServer(ctx context.Context, rs *resourceState, jobs []*job, rep *ResourceReport) error {
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.cfg.Apply.Concurrency)
	for _, j := range jobs {
		if len(j.rare().checks) == 0 {
			continue
		}
		g.Go(func() error {
			if err := e.materialize(rs, j); err != nil {
				return err
			}
			for _, o := range j.rare().checks {
				drifted, err := e.dryRun(gctx, o)
				if err != nil {
					if gctx.Err() != nil {
						return gctx.Err()
					}
					// The write itself will meet the error and report it.
					drifted = true
				}
				e.settleCheck(rs, j, o, drifted, &mu, rep)
			}
			j.more().checks = nil
			return nil
		})
	}
	return g.Wait()
}

// settleCheck books a dry-run's verdict: a drifted child gets an update in
// its job; for one in sync, a tier-1 mismatch was a false positive.
func (e *Engine) settleCheck(rs *resourceState, j *job, o *op, drifted bool, mu *sync.Mutex, rep *ResourceReport) {
	if drifted {
		j.ops = append(j.ops, o)
	} else {
		o.desired = e.kept(o.desired)
	}
	mu.Lock()
	defer mu.Unlock()
	if !drifted {
		if e.cfg.DriftCheck != config.DriftCheckServer {
			j.learnt.noops = append(j.learnt.noops, noopKey{string(o.live.uid), o.live.resourceVersion, o.fp}) // tier 1 was wrong: do not ask again
			if e.metrics != nil {
				e.metrics.falsePositives.WithLabelValues(rs.cluster, rs.name, o.key.Kind).Inc()
			}
		}
		rep.count(o.key.Kind, stateInSync)
		return
	}
	rep.count(o.key.Kind, stateDrifted)
	e.countDrift(rs, o.key.Kind, reasonChanged)
	e.noteDrift(rep, Drift{Object: o.key.String(), Reason: reasonChanged, Live: e.liveFields(o.live, o.desired), Desired: o.norm})
}

// dryRun reports whether applying o would change the live object.
func (e *Engine) dryRun(ctx context.Context, o *op) (bool, error) {
	var drifted bool
	err := retry.OnError(transientBackoff, isTransient, func() error {
		res, err := e.writer.apply(ctx, o.gvr, o.desired, applyOptions{dryRun: true})
		if err != nil {
			return err
		}
		fp, err := wholeFingerprint(res)
		drifted = fp != o.live.whole()
		return err
	})
	if err != nil {
		return false, err
	}
	return drifted, nil
}
