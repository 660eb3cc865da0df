package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/resyncd/resyncd/cluster"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/engine"
	"github.com/resyncd/resyncd/serve"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
)

// Run is `resyncd run`: it serves /metrics, /healthz, /readyz and
// /statusz, takes part in leader election or the ring when the
// configuration asks for it, and runs the passes of every cluster on each
// resource's interval until ctx ends; then the batch of writes in flight
// is written, a Lease held is released, and Run returns nil. SIGUSR1
// starts a pass of every resource now. The CRDs of the resources that set
// installCRD are applied as each cluster is made ready.
func Run(ctx context.Context, cfg *config.Config, opts Options) error {
	engine.ParseSchemas()
	opts.InstallCRDs = true
	p, err := Prepare(cfg, opts)
	if err != nil {
		return err
	}
	log := p.log
	reg, metrics := newRegistry()
	d := &daemon{Prepared: p, reg: reg, metrics: metrics, status: serve.NewStatus(cfg), passNow: make(chan os.Signal, 1)}
	// Caught from the start: SIGUSR1's default action would kill a
	// follower, or a leader not yet running its passes.
	signal.Notify(d.passNow, syscall.SIGUSR1)
	defer signal.Stop(d.passNow)

	server := ""
	if p.home != nil {
		server = p.home.REST.Host
	}
	log.Info("Starting", zap.String("version", opts.Version), zap.String("server", server), zap.Int("clusters", len(p.targets)),
		zap.Int("resources", len(cfg.Resources)), zap.Bool("leaderElection", cfg.LeaderElection.Enabled))
	var kube kubernetes.Interface
	if p.home != nil {
		kube = p.home.Kube
	}
	metricsHandler, metricsTLS, err := serve.Metrics(reg, cfg.Metrics, kube)
	if err != nil {
		return fmt.Errorf("%s: metrics: %w", cfg.Where("metrics.certFile"), err)
	}
	eg, ctx := errgroup.WithContext(ctx)
	eg.Go(func() error { return serve.Run(ctx, log, "metrics", cfg.Metrics.Address, metricsHandler, metricsTLS) })
	eg.Go(func() error { return serve.Run(ctx, log, "health", cfg.Health.Address, d.status.Handler(), nil) })
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
	cluster.RegisterClientMetrics(reg)
	return reg, engine.NewMetrics(reg)
}
