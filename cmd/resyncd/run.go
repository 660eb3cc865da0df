package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/engine"
	"github.com/resyncd/resyncd/shard"
)

// shutdownTimeout bounds how long the HTTP servers drain on exit.
const shutdownTimeout = 5 * time.Second

func newRunCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run passes on each resource's interval until SIGINT, SIGTERM or SIGHUP",
		Long: "run serves /metrics, /healthz and /readyz, takes part in leader election when it is\n" +
			"enabled, and runs a pass over each watched resource every interval. SIGUSR1 starts a pass\n" +
			"of every resource now (the leader's; a follower ignores it). SIGTERM, SIGINT or SIGHUP\n" +
			"lets the batch of writes in flight finish, releases the Lease if it leads, and exits 0;\n" +
			"a second signal exits at once.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDaemon(cmd.Context(), g) },
	}
	cmd.Flags().DurationVar(&g.passTimeout, "pass-timeout", 10*time.Minute,
		"fail a pass that has not finished after this long (no new batch starts, requests in flight are cancelled); the next starts on schedule")
	return cmd
}

// daemon holds what `resyncd run` wires together.
type daemon struct {
	g       *globals
	cfg     *config.Config
	log     *zap.Logger
	home    *clients
	targets []*target
	reg     *prometheus.Registry
	metrics *engine.Metrics
	health  *health
	// passNow receives SIGUSR1: start a pass of every resource now.
	passNow chan os.Signal
	// passTimeout bounds each pass.
	passTimeout time.Duration
	// ring is this replica's place among those that share the work; nil
	// unless sharding is enabled.
	ring *shard.Ring
	// connected holds the kubernetes.Interface of each cluster, by name,
	// while its passes run.
	connected sync.Map
	// claims holds the API servers the clusters reach.
	claims *serverClaims
	// want says whether this replica runs the passes of a cluster; nil:
	// every cluster. Asked again on every tick of the shortest interval,
	// and whenever rebalance fires (nil: never).
	want      func(cluster string) bool
	rebalance <-chan struct{}
}

func runDaemon(ctx context.Context, g *globals) error {
	engine.ParseSchemas()
	g.installCRDs = true
	p, err := g.prepare()
	if err != nil {
		return exitWith(1, err)
	}
	cfg, log := p.cfg, p.log
	defer func() { _ = log.Sync() }()
	reg, metrics := newRegistry()
	d := &daemon{g: g, cfg: cfg, log: log, home: p.home, targets: p.targets, reg: reg, metrics: metrics, health: newHealth(cfg),
		passNow: make(chan os.Signal, 1), passTimeout: g.passTimeout, claims: p.claims}
	// Caught from the start: SIGUSR1's default action would kill a
	// follower, or a leader not yet running its passes.
	signal.Notify(d.passNow, syscall.SIGUSR1)
	defer signal.Stop(d.passNow)

	server := ""
	if p.home != nil {
		server = p.home.rest.Host
	}
	log.Info("Starting", zap.String("version", version), zap.String("server", server), zap.Int("clusters", len(p.targets)),
		zap.Int("resources", len(cfg.Resources)), zap.Bool("leaderElection", cfg.LeaderElection.Enabled))
	metricsHandler := http.Handler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	var metricsTLSConfig *tls.Config
	if cfg.Metrics.Secure {
		if metricsTLSConfig, err = metricsTLS(cfg.Metrics); err != nil {
			return exitWith(1, fmt.Errorf("%s: metrics: %w", cfg.Where("metrics.certFile"), err))
		}
		metricsHandler = newMetricsGuard(p.home.kube, metricsHandler)
	}
	eg, ctx := errgroup.WithContext(ctx)
	eg.Go(func() error { return serve(ctx, log, "metrics", cfg.Metrics.Address, metricsHandler, metricsTLSConfig) })
	eg.Go(func() error { return serve(ctx, log, "health", cfg.Health.Address, d.health.handler(), nil) })
	eg.Go(func() error { return d.lead(ctx) })
	err = eg.Wait()
	log.Info("Stopped")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// newRegistry returns the registry /metrics serves: resyncd's metrics,
// client-go's request metrics, and the Go and process collectors.
func newRegistry() (*prometheus.Registry, *engine.Metrics) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerClientMetrics(reg)
	return reg, engine.NewMetrics(reg)
}

// lead runs the passes: of the replica's share of the work when sharding
// is enabled, under leader election when that is, else of everything.
func (d *daemon) lead(ctx context.Context) error {
	le := d.cfg.LeaderElection
	if d.cfg.Sharding.Enabled {
		return d.share(ctx)
	}
	if !le.Enabled {
		d.metrics.SetLeader(true)
		d.health.setLeading(true)
		return d.passes(ctx)
	}
	d.metrics.SetLeader(false)
	if err := d.checkLease(ctx, le.LeaseName); err != nil {
		return exitWith(1, err)
	}
	host, _ := os.Hostname()
	id := host + "_" + string(uuid.NewUUID())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaName(le.Namespace, le.LeaseName),
		Client:     d.home.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	t := newTerm(ctx)
	defer func() { t.stop(); t.end() }()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: le.LeaseDuration,
		RenewDeadline: le.RenewDeadline,
		RetryPeriod:   le.RetryPeriod,
		// The elector releases the Lease when its context ends, which the
		// term ends only once the passes have returned: the batch in
		// flight is written before another replica may take the Lease.
		ReleaseOnCancel: true,
		Name:            le.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				t.lead(leading, func(ctx context.Context) error {
					d.log.Info("Leading", zap.String("identity", id))
					d.metrics.SetLeader(true)
					d.health.setLeading(true)
					return d.passes(ctx)
				})
			},
			OnStoppedLeading: func() {
				d.metrics.SetLeader(false)
				d.health.setLeading(false)
			},
			OnNewLeader: func(leader string) {
				if leader != id {
					d.log.Info("Following", zap.String("leader", leader))
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leaderElection: %w", err)
	}
	elector.Run(t.ctx)
	return t.result()
}

// errLeaseLost is lead's error when the Lease was lost while this
// replica led: another replica may be writing already.
var errLeaseLost = errors.New("lost the leader lease")

// term is one replica's time in leader election: the elector runs under
// ctx, which ends when shutdown comes while the replica follows, and
// otherwise only once the passes it led have returned.
type term struct {
	shutdown context.Context
	ctx      context.Context
	end      context.CancelFunc
	stop     func() bool

	mu      sync.Mutex
	started bool          // the passes have started
	over    bool          // the elector has returned: lead no more
	done    chan struct{} // closed once the passes have returned
	err     error         // what the passes returned, once done
}

// newTerm returns the term of a replica that shuts down when shutdown
// ends.
func newTerm(shutdown context.Context) *term {
	// Not a child of shutdown: the elector's context must outlive it while
	// the batch in flight is written.
	ctx, end := context.WithCancel(context.WithoutCancel(shutdown))
	t := &term{shutdown: shutdown, ctx: ctx, end: end, done: make(chan struct{})}
	t.stop = context.AfterFunc(shutdown, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.started {
			t.end()
		}
	})
	return t
}

// lead runs passes while this replica leads: until shutdown, or until
// leading ends, which it does when the Lease is lost. Then it ends the
// term, which releases the Lease.
func (t *term) lead(leading context.Context, passes func(context.Context) error) {
	t.mu.Lock()
	if t.over || t.shutdown.Err() != nil {
		t.mu.Unlock()
		t.end()
		return
	}
	t.started = true
	t.mu.Unlock()
	ctx, cancel := context.WithCancel(leading)
	defer cancel()
	stop := context.AfterFunc(t.shutdown, cancel)
	defer stop()
	err := passes(ctx)
	// Passes that return early (no resource to watch) keep the Lease, so
	// that the replicas do not pass it round.
	<-ctx.Done()
	t.mu.Lock()
	t.err = err
	t.mu.Unlock()
	close(t.done)
	t.end()
}

// result is lead's answer once the elector has returned, which it does
// when the term ends (on shutdown) or when the Lease is lost. A lost
// Lease, also one lost while the passes finish after a shutdown, is
// errLeaseLost at once: another replica may be writing already, so the
// process exits and the kubelet restarts it as a follower. Otherwise it
// is what the passes returned.
func (t *term) result() error {
	t.stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.over = true
	if t.shutdown.Err() == nil {
		return errLeaseLost
	}
	if !t.started {
		return t.shutdown.Err()
	}
	select {
	case <-t.done:
		return t.err
	default:
		return errLeaseLost
	}
}

// checkLease makes sure, with a dry-run create, that the Lease name can be
// made where the configuration says: a missing namespace or a missing
// permission would otherwise show only as retries, forever. Other errors
// are left to the elector or the ring, which retry them.
func (d *daemon) checkLease(ctx context.Context, name string) error {
	le := d.cfg.LeaderElection
	lease := &coordinationv1.Lease{ObjectMeta: metaName(le.Namespace, name)}
	_, err := d.home.kube.CoordinationV1().Leases(le.Namespace).Create(ctx, lease, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	where := d.cfg.Where("leaderElection.namespace")
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: leaderElection.namespace: namespace %q does not exist; create it, or name the namespace resyncd runs in", where, le.Namespace)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: leaderElection: resyncd may not create the Lease %s/%s: %w", where, le.Namespace, name, err)
	}
	return nil
}

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

// syncCluster makes cluster t ready, retrying on the shortest interval of
// its resources with backoff while it does not answer, then runs its
// passes until ctx ends; started receives its engine. When the kubeconfig
// file of the cluster names another server, the passes stop and all of it
// starts again with clients for that server.
func (d *daemon) syncCluster(ctx context.Context, t *target, started func(*engine.Engine)) {
	log := t.log
	if len(t.resources) == 0 {
		log.Info("No watched resource in the cluster")
		return
	}
	interval := t.resources[0].Interval
	for _, r := range t.resources {
		interval = min(interval, r.Interval)
	}
	d.metrics.SetClusterUp(t.cfg.Name, t.ready())
	c := t.cfg.Name
	for d.awaitReady(ctx, t, interval) {
		if !d.runCluster(ctx, t, started) {
			return
		}
		log.Info("Reconnecting", zap.String("server", t.server()))
		t.disconnect()
		d.metrics.SetClusterUp(t.cfg.Name, false)
		d.health.disconnected(c, "its kubeconfig file names another server: reconnecting")
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
			ready <- d.g.readyTarget(d.cfg, t)
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
		d.metrics.SetClusterUp(t.cfg.Name, false)
		d.health.unreachable(t.cfg.Name, err)
		wait := engine.Backoff(interval, failures)
		t.log.Warn("Cluster not ready", zap.Error(err), zap.Int("attempt", failures), zap.Duration("retryIn", wait))
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
	c := t.cfg.Name
	d.health.reached(c, t.server())
	for i, why := range t.down {
		d.health.down(c, i, why)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if moved := t.cl.moved; !t.cfg.Home() && moved != nil {
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
	rec, stop := newRecorder(runCtx, t.cl.kube)
	defer stop()
	settings, index := t.settings(d.cfg)
	var part engine.Shard
	if d.ring != nil {
		part = d.ring
	}
	d.connected.Store(t.cfg.Name, t.cl.kube)
	defer d.connected.Delete(t.cfg.Name)
	eng, err := engine.New(settings, engine.Options{
		REST: t.cl.rest, Renderers: t.renderers, Metrics: d.metrics,
		Log: d.log, Events: rec, PassTimeout: d.passTimeout, Shard: part,
	})
	if err != nil {
		d.health.unreachable(c, err)
		t.log.Error("Cluster not synced", zap.Error(err))
		return false
	}
	started(eng)
	eng.Run(runCtx, func(i int, rep engine.ResourceReport, err error) { d.health.record(c, index[i], rep, err) })
	return ctx.Err() == nil && t.cl.movedAway()
}

// eventFlushTimeout bounds how long stopping the recorder waits for the
// Events recorded to be written.
const eventFlushTimeout = 5 * time.Second

// newRecorder returns an Event recorder writing through events.k8s.io/v1,
// and the function that stops it once the Events recorded are written,
// or eventFlushTimeout has passed: the broadcaster writes on its own
// goroutine, and its Shutdown does not wait, so the last pass of `once`
// would otherwise lose its Events.
func newRecorder(ctx context.Context, kube kubernetes.Interface) (events.EventRecorder, func()) {
	sink := &countingSink{EventSink: &events.EventSinkImpl{Interface: kube.EventsV1()}}
	b := events.NewBroadcaster(sink)
	b.StartRecordingToSink(ctx.Done())
	rec := &countingRecorder{EventRecorder: b.NewRecorder(scheme.Scheme, "resyncd")}
	return rec, func() {
		deadline := time.Now().Add(eventFlushTimeout)
		for sink.handled.Load() < rec.recorded.Load() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		b.Shutdown()
	}
}

// countingRecorder counts the Events recorded.
type countingRecorder struct {
	events.EventRecorder
	recorded atomic.Int64
}

func (r *countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.recorded.Add(1)
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// countingSink counts the Events the API server answered for, written or
// refused. A repeat of an Event joins its series instead, and reaches the
// sink only later: stopping then waits out eventFlushTimeout.
type countingSink struct {
	events.EventSink
	handled atomic.Int64
}

func (s *countingSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	defer s.handled.Add(1)
	return s.EventSink.Create(ctx, e)
}

// serve runs an HTTP server on addr, over TLS when tlsConfig is set,
// until ctx ends, then drains it.
func serve(ctx context.Context, log *zap.Logger, name, addr string, h http.Handler, tlsConfig *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s server: %w", name, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("Serving", zap.String("server", name), zap.String("address", ln.Addr().String()), zap.Bool("tls", tlsConfig != nil))
	select {
	case err := <-errc:
		return fmt.Errorf("%s server: %w", name, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}
