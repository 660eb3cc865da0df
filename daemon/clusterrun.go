package daemon

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/dynamic"

	"github.com/resyncd/resyncd/engine"
	"github.com/resyncd/resyncd/serve"
)

// syncCluster makes cluster t ready, retrying on the shortest interval of
// its resources with backoff while it does not answer, then runs its
// passes until ctx ends; started receives its engine. When the kubeconfig
// file of the cluster names another server, the passes stop and all of it
// starts again with clients for that server.
func (d *daemon) syncCluster(ctx context.Context, t *target, started func(*engine.Engine)) {
	log := t.Log
	rgd := d.cfg.ResourceGraphDefinitions
	if len(t.Resources) == 0 && !rgd.Enabled {
		log.Info("No watched resource in the cluster")
		return
	}
	interval := rgd.Interval
	if !rgd.Enabled {
		interval = t.Resources[0].Interval
	}
	for _, r := range t.Resources {
		interval = min(interval, r.Interval)
	}
	d.metrics.SetClusterUp(t.Config.Name, t.ready())
	c := t.Config.Name
	for d.awaitReady(ctx, t, interval) {
		if !d.runCluster(ctx, t, started) {
			return
		}
		log.Info("Reconnecting", zap.String("server", t.Server()))
		t.disconnect()
		d.metrics.SetClusterUp(t.Config.Name, false)
		d.status.Disconnected(c, "its kubeconfig file names another server: reconnecting")
	}
}

// awaitReady makes cluster t ready, retrying with backoff; false when ctx
// ended first.
func (d *daemon) awaitReady(ctx context.Context, t *target, interval time.Duration) bool {
	for failures := 1; !t.ready(); failures++ {
		// Discovery and the schemas are asked with no context: a cluster
		// that hangs must not hold up a shutdown, so the answer is awaited
		// here, and left behind when ctx ends.
		ready, checked := make(chan error, 1), make(chan struct{})
		t.checking = checked
		go func() {
			defer close(checked)
			ready <- d.readyTarget(t)
		}()
		var err error
		select {
		case <-ctx.Done():
			return false
		case err = <-ready:
		}
		if err == nil {
			break
		}
		d.metrics.SetClusterUp(t.Config.Name, false)
		d.status.Unreachable(t.Config.Name, err)
		wait := engine.Backoff(interval, failures)
		t.Log.Warn("Cluster not ready", zap.Error(err), zap.Int("attempt", failures), zap.Duration("retryIn", wait))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-timer.C:
		}
	}
	return ctx.Err() == nil
}

// runCluster runs the passes of cluster t, made ready, until ctx ends, or
// until its kubeconfig file names another server: then it returns true.
// The cluster resyncd runs in is not followed to another server, as its
// Lease is where it is: its requests fail until resyncd restarts.
func (d *daemon) runCluster(ctx context.Context, t *target, started func(*engine.Engine)) bool {
	c := t.Config.Name
	d.status.Reached(c, t.Server())
	for i, why := range t.down {
		d.status.Down(c, i, why)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if moved := t.Clients.Moved(); !t.Config.Home() && moved != nil {
		// moved is read here: t is disconnected once the passes stopped,
		// maybe before this goroutine ran.
		go func() {
			select {
			case <-moved:
				cancel()
			case <-runCtx.Done():
			}
		}()
	}
	rec, stop := newRecorder(runCtx, t.Clients.Kube)
	defer stop()
	settings, index := t.settings(d.cfg)
	var part engine.Shard
	if d.ring != nil {
		part = d.ring
	}
	d.connected.Store(t.Config.Name, t.Clients.Kube)
	defer d.connected.Delete(t.Config.Name)
	eng, err := engine.New(settings, engine.Options{
		REST: t.Clients.REST, Renderers: t.renderers, Metrics: d.metrics,
		Log: d.log, Events: rec, PassTimeout: d.opts.PassTimeout, Shard: part,
	})
	if err != nil {
		d.status.Unreachable(c, err)
		t.Log.Error("Cluster not synced", zap.Error(err))
		return false
	}
	started(eng)
	var wg sync.WaitGroup
	if d.cfg.ResourceGraphDefinitions.Enabled {
		dyn, err := dynamic.NewForConfig(t.Clients.REST)
		if err != nil {
			d.status.Unreachable(c, err)
			return false
		}
		src := &rgds{cfg: d.cfg, eng: eng, dyn: dyn, disc: t.Clients.Kube.Discovery(), log: t.Log, static: t.Resources, serving: map[string]*served{}}
		wg.Go(func() { src.run(runCtx) })
	}
	eng.Run(runCtx, func(i int, rep engine.ResourceReport, err error) { d.status.Record(c, index[i], passOf(rep), err) })
	wg.Wait()
	return ctx.Err() == nil && t.Clients.MovedAway()
}

// passOf is what /statusz and /readyz keep of a pass's report.
func passOf(rep engine.ResourceReport) serve.Pass {
	return serve.Pass{
		Parents: rep.Parents, Foreign: rep.Foreign, Drifted: rep.Drifted + rep.Missing + rep.Orphaned,
		Written: rep.Created + rep.Updated + rep.Deleted + rep.Released + rep.Statuses + rep.Metadata,
		Failed:  rep.Failed, Stalled: rep.Stalled, Deferred: rep.Deferred, Transient: rep.Transient, Sharded: rep.Sharded,
	}
}
