package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
)

// maxBackoff bounds the wait after passes that failed in a row.
const maxBackoff = 5 * time.Minute

// Backoff is the time from the start of a pass to the start of the next
// after failures passes in a row failed: the interval, doubled for each
// failure after the first, up to 8 intervals or maxBackoff, whichever is
// shorter, but never less than the interval.
func Backoff(interval time.Duration, failures int) time.Duration {
	if failures <= 1 {
		return interval
	}
	return max(interval, min(interval<<min(failures-1, 3), maxBackoff))
}

// every calls f now and then every interval, measured from the start of
// each call (a slow pass does not push the next one back), until ctx ends.
// A call that overruns the interval is followed by the next at once. A
// receive from now starts the next call early; nil never does.
//
// After calls that failed in a row the next waits longer (backoff); while
// it waits, probe, when not nil, is called once an interval, and the next
// call starts as soon as it succeeds: a cluster that answers again is
// synced at once, and one that does not costs one small request an
// interval instead of a whole pass.
func every(ctx context.Context, interval time.Duration, now <-chan struct{}, probe func(context.Context) error, f func(context.Context) error) {
	failures := 0
	for {
		start := time.Now()
		if err := f(ctx); err != nil {
			failures++
		} else {
			failures = 0
		}
		if ctx.Err() != nil {
			return
		}
		due := start.Add(Backoff(interval, failures))
		for step := start.Add(interval); ; step = step.Add(interval) {
			if step.After(due) {
				step = due
			}
			t := time.NewTimer(time.Until(step))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-now:
				t.Stop()
				step = due
			case <-t.C:
			}
			if !step.Before(due) || (probe != nil && probe(ctx) == nil) {
				break
			}
		}
	}
}

// Run runs a pass over each watched resource on the resource's own
// interval until ctx ends, each bounded by Options.PassTimeout; after each pass it calls done, when not nil,
// with the resource's index, the pass's report and its error.
func (e *Engine) Run(ctx context.Context, done func(i int, rep ResourceReport, err error)) {
	var wg sync.WaitGroup
	for i, rs := range e.resources {
		if rs.cfg.Mode == config.ModeOff {
			continue
		}
		wg.Go(func() {
			e.loop(ctx, ctx, rs, func(rep ResourceReport, err error) {
				if done != nil {
					done(i, rep, err)
				}
			})
		})
	}
	wg.Wait()
}

// RunResource runs passes over r, a resource the engine's settings do not
// list (one a ResourceGraphDefinition of the cluster declares), rendered
// by rd, on r's interval as Run does, until stop is closed or ctx ends. A
// pass in flight when stop closes is finished first; one in flight when
// ctx ends stops as Run's do. done, when not nil, is called after each
// pass. Its writes share the cluster's write limiter, budget and workers
// with every other resource's. When it returns, the resource's series are
// gone from the metrics.
func (e *Engine) RunResource(ctx context.Context, stop <-chan struct{}, r config.Resource, rd desired.Renderer, done func(ResourceReport, error)) error {
	rs, err := e.newResourceState(r, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Key(), err)
	}
	e.addedMu.Lock()
	e.added[rs] = true
	e.addedMu.Unlock()
	defer func() {
		e.addedMu.Lock()
		delete(e.added, rs)
		e.addedMu.Unlock()
		e.failingMu.Lock()
		delete(e.failing, rs)
		e.failingMu.Unlock()
		e.metrics.forgetResource(rs.cluster, rs.name)
	}()
	loopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-loopCtx.Done():
		}
	}()
	e.loop(loopCtx, ctx, rs, done)
	return nil
}

// loop runs the passes of rs until loopCtx ends, each with a context of
// passCtx.
func (e *Engine) loop(loopCtx, passCtx context.Context, rs *resourceState, done func(ResourceReport, error)) {
	every(loopCtx, rs.cfg.Interval, rs.now, e.probe, func(context.Context) error {
		ctx := passCtx
		if e.passTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, e.passTimeout)
			defer cancel()
		}
		rep, err := e.syncState(ctx, rs)
		if done != nil {
			done(rep, err)
		}
		return err
	})
}

// PassNow makes every resource's loop start its next pass at once, or, if
// a pass is running, as soon as it ends, instead of waiting for the
// interval. Calls while a pass is already due count once.
func (e *Engine) PassNow() {
	e.addedMu.Lock()
	defer e.addedMu.Unlock()
	for _, rs := range e.resources {
		rs.passNow()
	}
	for rs := range e.added {
		rs.passNow()
	}
}

func (rs *resourceState) passNow() {
	select {
	case rs.now <- struct{}{}:
	default:
	}
}
