package daemon

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/resyncd/resyncd/cluster"
	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// shared is the package's control plane, started by the first test that
// needs it.
var shared testenv.Shared

// env is the package's control plane; the test fails if it cannot start.
func env(t testing.TB) *testenv.Env { t.Helper(); return shared.Env(t) }

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

// files writes a kubeconfig for the test API server and a configuration
// watching namespace, and returns the flags that use them: --kubeconfig
// PATH --config PATH.
func files(t *testing.T, namespace string) []string {
	t.Helper()
	return fixture.Files(t, env(t).Kubeconfig(), namespace)
}

// run is Run with the configuration file at configPath, through
// kubeconfig, with each request bounded by requestTimeout, as `resyncd
// run` runs it.
func run(ctx context.Context, configPath, kubeconfig string, requestTimeout time.Duration) error {
	cfg, err := LoadConfig(configPath, nil, false)
	if err != nil {
		return err
	}
	log, err := NewLogger(cfg.Log)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	return Run(ctx, cfg, Options{Log: log, PassTimeout: 10 * time.Minute,
		Dialer: cluster.Dialer{Kubeconfig: kubeconfig, RequestTimeout: requestTimeout, UserAgent: "resyncd/test"}})
}

// startDaemon is fixture.StartDaemon running Run, each request bounded by
// five seconds.
func startDaemon(t *testing.T, dir, clusters, namespace string) *fixture.Daemon {
	t.Helper()
	return fixture.StartDaemon(t, dir, clusters, namespace, func(ctx context.Context, cfg string, _ io.Writer) error {
		return run(ctx, cfg, "", 5*time.Second)
	})
}
