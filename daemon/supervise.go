package daemon

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/resyncd/resyncd/cluster"
	"github.com/resyncd/resyncd/engine"
	"github.com/resyncd/resyncd/serve"
)

// passes runs a pass over each resource of each cluster on its own
// interval until ctx ends. Every cluster has its own engine: its own
// clients, limiter, write budget and workers. The clusters are those of
// the configuration and of the Secrets it selects, read again on every
// tick of the shortest interval; a supervisor starts and stops them.
func (d *daemon) passes(ctx context.Context) error {
	select {
	case <-d.passNow: // sent while following: the first pass is now anyway
	default:
	}
	var changed <-chan struct{}
	var kick chan struct{}
	if d.ring != nil {
		changed, kick = d.ring.Changed(), make(chan struct{}, 1)
		d.rebalance = kick
	}
	s := newSupervisor(d)
	view := &ringView{}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
				// The clusters to run may have changed, and work taken
				// over where one runs is repaired now, not an interval
				// later.
				s.passNowIn(d.updateRing(view))
				select {
				case kick <- struct{}{}:
				default:
				}
			case <-d.passNow:
				d.log.Info("Pass requested", zap.String("signal", "SIGUSR1"))
				s.passNow()
			}
		}
	}()
	s.run(ctx)
	return ctx.Err()
}

// supervisor runs the passes of the clusters: those of the configuration
// and those of the Secrets it selects. On every tick of the shortest
// interval (and when one of its clusters stops by itself, or the daemon's
// rebalance fires) it reads the Secrets again and reconciles the clusters
// that run with those that should: it starts a new one, stops a removed
// one (its batch in flight is written first) and forgets its metrics and
// its /statusz entry, and restarts one whose Secret changed, with clients
// of the new credentials, once the old passes have stopped. A cluster
// runs only while the daemon wants it.
type supervisor struct {
	d       *daemon
	tick    time.Duration
	secrets *cluster.SecretReader // nil without clusterSecrets
	// exited is sent to, without waiting, when a cluster's passes stop.
	exited chan struct{}

	mu   sync.Mutex
	runs map[string]*clusterRun
}

// clusterRun is one cluster's passes, running or stopping.
type clusterRun struct {
	t      *target
	cancel context.CancelFunc
	// stopping is set once the supervisor has cancelled the run: wanted
	// again before it stopped, it is started anew once it has.
	stopping bool
	// stopped is closed when the passes have stopped, done once the
	// cluster is disconnected too (which waits for a check of its
	// readiness left behind, at most a request's timeout): a shutdown
	// waits for stopped, a restart for done.
	stopped, done chan struct{}
	// engine is set once the passes started; guarded by the supervisor.
	engine *engine.Engine
}

func newSupervisor(d *daemon) *supervisor {
	s := &supervisor{d: d, tick: time.Minute, exited: make(chan struct{}, 1), runs: map[string]*clusterRun{}}
	for i, r := range d.cfg.Resources {
		if i == 0 || r.Interval < s.tick {
			s.tick = r.Interval
		}
	}
	if len(d.cfg.ClusterSecrets) > 0 {
		s.secrets = d.catalog.Secrets(d.home.Kube, d.log)
	}
	return s
}

// run reconciles the clusters until ctx ends, then waits for every
// cluster's passes to stop.
func (s *supervisor) run(ctx context.Context) {
	ticker := time.NewTicker(s.tick)
	defer ticker.Stop()
	// The clusters of the configuration first: a LIST of the Secrets that
	// the API server is slow to answer holds up none of them.
	s.reconcile(ctx, false)
	for {
		s.reconcile(ctx, true)
		select {
		case <-ctx.Done():
			s.mu.Lock()
			runs := make([]*clusterRun, 0, len(s.runs))
			for _, r := range s.runs {
				runs = append(runs, r)
			}
			s.mu.Unlock()
			for _, r := range runs {
				<-r.stopped
			}
			return
		case <-ticker.C:
		case <-s.d.rebalance:
		case <-s.exited:
		}
	}
}

// passNow starts a pass of every resource of every cluster running.
func (s *supervisor) passNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runs {
		if r.engine != nil {
			r.engine.PassNow()
		}
	}
}

// passNowIn starts a pass of every resource of the clusters named.
func (s *supervisor) passNowIn(clusters []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range clusters {
		if r := s.runs[c]; r != nil && r.engine != nil {
			r.engine.PassNow()
		}
	}
}

// reconcile makes the clusters that run those that should; without
// readSecrets, those of the configuration only, which is right only
// while none of the Secrets' runs.
func (s *supervisor) reconcile(ctx context.Context, readSecrets bool) {
	if ctx.Err() != nil {
		return
	}
	wanted := s.wanted(ctx, readSecrets)
	byName := make(map[string]*target, len(wanted))
	for _, w := range wanted {
		byName[w.Config.Name] = w
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, r := range s.runs {
		w, ok := byName[name]
		if ok && w.Sum == r.t.Sum && !r.stopping {
			continue // the same, or stopped by itself: started again only when its Secret changes
		}
		r.cancel()
		r.stopping = true
		select {
		case <-r.done:
		default:
			continue // writing its batch in flight: started again, or forgotten, once it stopped
		}
		delete(s.runs, name)
		if !ok {
			s.d.metrics.ForgetCluster(name)
			s.d.status.Remove(name)
			r.t.Log.Info("Cluster removed", zap.String("secret", r.t.Config.Secret))
		}
	}
	for _, w := range wanted {
		if _, running := s.runs[w.Config.Name]; !running {
			s.start(ctx, w)
		}
	}
}

// start starts the passes of cluster t.
func (s *supervisor) start(ctx context.Context, t *target) {
	if t.Config.Secret != "" {
		t.Log.Info("Cluster from Secret", zap.String("secret", t.Config.Secret), zap.String("server", t.SecretServer()))
	}
	s.d.status.Add(t.Config, t.Resources)
	runCtx, cancel := context.WithCancel(ctx)
	r := &clusterRun{t: t, cancel: cancel, stopped: make(chan struct{}), done: make(chan struct{})}
	s.runs[t.Config.Name] = r
	go func() {
		s.d.syncCluster(runCtx, t, func(e *engine.Engine) {
			s.mu.Lock()
			r.engine = e
			s.mu.Unlock()
		})
		close(r.stopped)
		t.settle()
		// Its claims released before another run of the name may start.
		t.disconnect()
		close(r.done)
		select {
		case s.exited <- struct{}{}:
		default:
		}
	}()
}

// wanted returns the clusters that should run, in order: those of the
// configuration, then, with readSecrets, those of the Secrets. A Secret
// that is refused, or whose cluster's name another cluster has, is listed
// in /statusz with the reason instead.
func (s *supervisor) wanted(ctx context.Context, readSecrets bool) []*target {
	var out []*target
	names := make([]string, 0, len(s.d.targets))
	for _, t := range s.d.targets {
		names = append(names, t.Config.Name)
		if s.d.wants(t.Config.Name) {
			out = append(out, t)
		}
	}
	if s.secrets == nil {
		s.d.shareClusters(names)
	}
	if s.secrets == nil || !readSecrets {
		return out
	}
	accepted, refused := s.secrets.Read(ctx)
	for _, t := range accepted {
		names = append(names, t.Config.Name)
		if s.d.wants(t.Config.Name) {
			out = append(out, &target{Target: t})
		}
	}
	s.d.shareClusters(names)
	listed := make([]serve.Refused, 0, len(refused))
	for _, r := range refused {
		listed = append(listed, serve.Refused{Name: r.Name, Secret: r.Secret, Why: r.Err.Error()})
	}
	s.d.status.SetRefused(listed)
	return out
}
