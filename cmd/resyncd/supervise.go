package main

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/resyncd/resyncd/engine"
)

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
	secrets *secretReader // nil without clusterSecrets
	// exited is sent to, without waiting, when a cluster's passes stop.
	exited chan struct{}

	mu   sync.Mutex
	runs map[string]*clusterRun
}

// clusterRun is one cluster's passes, running or stopping.
type clusterRun struct {
	t *target
	// sum is the sum of the cluster's Secret; zero for a cluster of the
	// configuration.
	sum    [sha256.Size]byte
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

// wantedCluster is a cluster that should run.
type wantedCluster struct {
	t   *target
	sum [sha256.Size]byte
}

func newSupervisor(d *daemon) *supervisor {
	s := &supervisor{d: d, tick: time.Minute, exited: make(chan struct{}, 1), runs: map[string]*clusterRun{}}
	for i, r := range d.cfg.Resources {
		if i == 0 || r.Interval < s.tick {
			s.tick = r.Interval
		}
	}
	if len(d.cfg.ClusterSecrets) > 0 {
		s.secrets = newSecretReader(d.home.kube, d.cfg.ClusterSecrets, d.log)
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
	byName := make(map[string]wantedCluster, len(wanted))
	for _, w := range wanted {
		byName[w.t.cfg.Name] = w
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, r := range s.runs {
		w, ok := byName[name]
		if ok && w.sum == r.sum && !r.stopping {
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
			s.d.health.remove(name)
			r.t.log.Info("Cluster removed", zap.String("secret", r.t.cfg.Secret))
		}
	}
	for _, w := range wanted {
		if _, running := s.runs[w.t.cfg.Name]; !running {
			s.start(ctx, w)
		}
	}
}

// start starts the passes of cluster w.
func (s *supervisor) start(ctx context.Context, w wantedCluster) {
	t := w.t
	if t.cfg.Secret != "" {
		t.log.Info("Cluster from Secret", zap.String("secret", t.cfg.Secret), zap.String("server", t.secret.Host))
	}
	s.d.health.add(t.cfg, t.resources)
	runCtx, cancel := context.WithCancel(ctx)
	r := &clusterRun{t: t, sum: w.sum, cancel: cancel, stopped: make(chan struct{}), done: make(chan struct{})}
	s.runs[t.cfg.Name] = r
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
// configuration, then, with readSecrets, those of the Secrets. A Secret that is refused, or
// whose cluster's name another cluster has, is listed in /statusz with
// the reason instead.
func (s *supervisor) wanted(ctx context.Context, readSecrets bool) []wantedCluster {
	var out []wantedCluster
	taken := takenNames(s.d.targets)
	names := make([]string, 0, len(s.d.targets))
	for _, t := range s.d.targets {
		names = append(names, t.cfg.Name)
		if s.d.wants(t.cfg.Name) {
			out = append(out, wantedCluster{t: t})
		}
	}
	if s.secrets == nil {
		s.d.shareClusters(names)
	}
	if s.secrets == nil || !readSecrets {
		return out
	}
	var refused []*clusterStatus
	for _, sc := range claimNames(taken, s.secrets.read(ctx)) {
		s.secrets.report(sc, sc.err)
		if sc.err != nil {
			refused = append(refused, &clusterStatus{Name: sc.Name, Secret: sc.secret, Error: "refused: " + sc.err.Error(), Resources: []*resourceStatus{}})
			continue
		}
		names = append(names, sc.Name)
		if s.d.wants(sc.Name) {
			out = append(out, wantedCluster{t: newSecretTarget(s.d.cfg, s.d.log, s.d.claims, sc), sum: sc.sum})
		}
	}
	s.d.shareClusters(names)
	s.d.health.setRefused(refused)
	return out
}

// wants reports whether this replica runs the cluster named cluster.
func (d *daemon) wants(cluster string) bool { return d.want == nil || d.want(cluster) }
