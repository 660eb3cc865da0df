package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
)

// loadConfig reads the configuration with the environment and the
// command-line overrides.
func (g *globals) loadConfig() (*config.Config, error) {
	overrides := map[string]string{}
	if g.logLevel != "" {
		overrides["log.level"] = g.logLevel
	}
	if g.logFormat != "" {
		overrides["log.format"] = g.logFormat
	}
	return config.Load(g.configPath, config.Options{
		LookupEnv:  os.LookupEnv,
		Overrides:  overrides,
		Renderers:  desired.DefaultRegistry().Names(),
		CheckGraph: checkGraph,
	})
}

// newLogger builds the logger the configuration asks for.
func newLogger(c config.Log) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	zc := zap.NewProductionConfig()
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	zc.EncoderConfig.EncodeDuration = zapcore.StringDurationEncoder
	if c.Format == "console" {
		zc = zap.NewDevelopmentConfig()
		zc.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		zc.EncoderConfig.EncodeDuration = zapcore.StringDurationEncoder
		zc.DisableStacktrace = true
	}
	zc.Level = zap.NewAtomicLevelAt(level)
	zc.Sampling = nil // one line per pass: nothing to sample, and nothing may be lost
	log, err := zc.Build()
	if err != nil {
		return nil, err
	}
	// client-go logs through klog (leader election, the event broadcaster):
	// send it to the same logger, in the same format.
	// No stack traces: client-go logs refusals it copes with (an Event in
	// a namespace being deleted) at error level, and one line says it.
	klog.SetLogger(zapr.NewLogger(log.Named("client-go").WithOptions(zap.AddStacktrace(zapcore.FatalLevel))))
	return log, nil
}

// clients are the connections to the API server.
type clients struct {
	rest *rest.Config
	kube kubernetes.Interface
}

func (g *globals) clients(cfg *config.Config) (*clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	load := func() (*rest.Config, error) {
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: g.context}).ClientConfig()
	}
	rc, err := load()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	if files := kubeconfigFiles(rules); len(files) > 0 {
		// The credentials are the files', re-read when they change; the
		// server's address is the one read now.
		rt, err := newReloader(files, load)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig: %w", err)
		}
		rc = &rest.Config{Host: rc.Host, APIPath: rc.APIPath, Transport: rt}
	}
	rc.UserAgent = "resyncd/" + version
	// A server that accepts connections and never answers (hung, or a
	// black-holing proxy) must fail the request, not hold it forever.
	rc.Timeout = g.requestTimeout
	// resyncd paces its writes itself (apply.qps); client-go's own limiter
	// must not throttle the LISTs of a pass below that.
	rc.QPS = max(float32(cfg.Apply.QPS)*2, 50)
	rc.Burst = max(cfg.Apply.Burst*2, 100)
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &clients{rest: rc, kube: kc}, nil
}

// checkServed asks discovery whether the API server serves each watched
// resource, and reports every one it does not, with the configuration's
// file and line, before any pass.
func checkServed(disc discovery.DiscoveryInterface, cfg *config.Config) error {
	// A 404 from something that is not an API server (a wrong port, a web
	// server behind the address) must not read as a missing CRD.
	if _, err := disc.ServerVersion(); err != nil {
		var ne net.Error
		var status apierrors.APIStatus
		if !apierrors.IsNotFound(err) && (errors.As(err, &ne) || errors.As(err, &status)) {
			return err // no answer, or refused credentials: the error says so
		}
		return fmt.Errorf("the server does not answer like a Kubernetes API server (GET /version: %w); check --kubeconfig and --context", err)
	}
	var problems []string
	for i, r := range cfg.Resources {
		key := fmt.Sprintf("resources[%d]", i)
		gv := r.Version
		if r.Group != "" {
			gv = r.Group + "/" + r.Version
		}
		list, err := disc.ServerResourcesForGroupVersion(gv)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("ask the API server which resources it serves: %w", err)
		default:
			found := false
			for _, res := range list.APIResources {
				found = found || res.Name == r.Resource
			}
			if found {
				continue
			}
		}
		problems = append(problems, fmt.Sprintf("%s: %s: %s is not served by the API server; install its CustomResourceDefinition "+
			"(for HttpService: kubectl apply --server-side -f deploy/crds/)", cfg.Where(key), key, strings.TrimPrefix(r.Resource+"."+gv, ".")))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// prepared is what every command that talks to a cluster starts with.
type prepared struct {
	cfg *config.Config
	log *zap.Logger
	cl  *clients
	// renderers hold the built-in renderers and the watched graphs,
	// type-checked against the API server's schemas.
	renderers desired.Registry
}

// prepare loads the configuration, builds the logger and the clients, and
// checks that the API server serves every watched resource.
func (g *globals) prepare() (*prepared, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	log, err := newLogger(cfg.Log)
	if err != nil {
		return nil, err
	}
	cl, err := g.clients(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkServed(cl.kube.Discovery(), cfg); err != nil {
		return nil, g.explain(cl, err)
	}
	reg, err := renderers(cfg, cl.kube.Discovery())
	if err != nil {
		return nil, g.explain(cl, err)
	}
	return &prepared{cfg: cfg, log: log, cl: cl, renderers: reg}, nil
}

// errNoAnswer marks an error of a server that did not answer in time.
var errNoAnswer = errors.New("no answer")

// explain says, of an error that is a request or command timing out, which
// server did not answer within which bound, and marks it errNoAnswer.
func (g *globals) explain(cl *clients, err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: the API server at %s did not answer within %s (--request-timeout): %w", errNoAnswer, cl.rest.Host, g.requestTimeout, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: gave up after %s (--timeout) waiting for the API server at %s: %w", errNoAnswer, g.timeout, cl.rest.Host, err)
	}
	return err
}
