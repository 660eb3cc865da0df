package main

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/resyncd/resyncd/cluster"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/daemon"
)

// version is stamped by the Makefile (-ldflags -X main.version=...).
var version = "dev"

// DefaultConfigPath is where the Helm chart mounts the configuration.
const DefaultConfigPath = "/etc/resyncd/config.yaml"

// globals are the flags every command takes.
type globals struct {
	configPath string
	kubeconfig string
	context    string
	logLevel   string
	logFormat  string
	// requestTimeout bounds every request to the API server.
	requestTimeout time.Duration
	// timeout bounds the whole of once and diff.
	timeout time.Duration
	// passTimeout bounds each pass of run.
	passTimeout time.Duration
	stdout      io.Writer
	profiles    profiles
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

// loadConfig reads the configuration with the environment and the
// command-line overrides; checkKubeconfigs also reads the clusters'
// kubeconfig files and reports their problems.
func (g *globals) loadConfig(checkKubeconfigs bool) (*config.Config, error) {
	overrides := map[string]string{}
	if g.logLevel != "" {
		overrides["log.level"] = g.logLevel
	}
	if g.logFormat != "" {
		overrides["log.format"] = g.logFormat
	}
	return daemon.LoadConfig(g.configPath, overrides, checkKubeconfigs)
}

// options loads the configuration and builds the logger it asks for, and
// returns them with the daemon's options of the flags.
func (g *globals) options() (*config.Config, daemon.Options, error) {
	cfg, err := g.loadConfig(false)
	if err != nil {
		return nil, daemon.Options{}, err
	}
	log, err := daemon.NewLogger(cfg.Log)
	if err != nil {
		return nil, daemon.Options{}, err
	}
	return cfg, daemon.Options{
		Log:     log,
		Dialer:  cluster.Dialer{Kubeconfig: g.kubeconfig, Context: g.context, RequestTimeout: g.requestTimeout, UserAgent: "resyncd/" + version},
		Version: version, PassTimeout: g.passTimeout, Timeout: g.timeout,
	}, nil
}

// prepared is what a command that runs one pass starts with.
type prepared struct {
	*daemon.Prepared
	cfg *config.Config
	log *zap.Logger
}

// prepare is options, then daemon.Prepare; installCRDs applies the CRDs
// of the resources that set installCRD.
func (g *globals) prepare(installCRDs bool) (*prepared, error) {
	cfg, opts, err := g.options()
	if err != nil {
		return nil, err
	}
	opts.InstallCRDs = installCRDs
	p, err := daemon.Prepare(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &prepared{Prepared: p, cfg: cfg, log: opts.Log}, nil
}

// timeoutFlag adds --timeout, the bound of a command that runs one pass.
func timeoutFlag(cmd *cobra.Command, g *globals) {
	cmd.Flags().DurationVar(&g.timeout, "timeout", 15*time.Minute,
		"give up, with exit code 2, when the command has not finished after this long; 0: no bound")
}

// bounded is ctx bounded by --timeout.
func (g *globals) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, g.timeout)
}

// exitCodeOf is 2 for a server that did not answer in time, else code.
func exitCodeOf(err error, code int) int {
	if errors.Is(err, daemon.ErrNoAnswer) {
		return 2
	}
	return code
}

// exitError carries the exit code a command wants.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// errSilent marks an error whose story the command has already told.
var errSilent = errors.New("")

func exitWith(code int, err error) error { return &exitError{code: code, err: err} }
