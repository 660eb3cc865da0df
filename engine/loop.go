package engine

import (
	"context"
	"sync"
	"time"

	"github.com/resyncd/resyncd/config"
)

// every calls f now and then every interval, measured from the start of
// each call (a slow pass does not push the next one back), until ctx ends.
// A call that overruns the interval is followed by the next at once. A
// receive from now starts the next call early; nil never does.
func every(ctx context.Context, interval time.Duration, now <-chan struct{}, f func(context.Context)) {
	for {
		start := time.Now()
		f(ctx)
		wait := interval - time.Since(start)
		if wait <= 0 {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-now:
			t.Stop()
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
			every(ctx, rs.cfg.Interval, rs.now, func(ctx context.Context) {
				if e.passTimeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, e.passTimeout)
					defer cancel()
				}
				rep, err := e.SyncResource(ctx, i)
				if done != nil {
					done(i, rep, err)
				}
			})
		})
	}
	wg.Wait()
}

// PassNow makes every resource's loop start its next pass at once, or, if
// a pass is running, as soon as it ends, instead of waiting for the
// interval. Calls while a pass is already due count once.
func (e *Engine) PassNow() {
	for _, rs := range e.resources {
		select {
		case rs.now <- struct{}{}:
		default:
		}
	}
}
