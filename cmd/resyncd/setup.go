package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/engine"
)

// loadConfig reads the configuration with the environment and the
// command-line overrides. checkKubeconfigs also reads the clusters'
// kubeconfig files and reports their problems; without it, each cluster
// finds its own when it connects, and is down with the reason while the
// others run.
func (g *globals) loadConfig(checkKubeconfigs bool) (*config.Config, error) {
	overrides := map[string]string{}
	if g.logLevel != "" {
		overrides["log.level"] = g.logLevel
	}
	if g.logFormat != "" {
		overrides["log.format"] = g.logFormat
	}
	return config.Load(g.configPath, config.Options{
		LookupEnv:        os.LookupEnv,
		Overrides:        overrides,
		Renderers:        desired.DefaultRegistry().Names(),
		CheckGraph:       checkGraph,
		CheckKubeconfigs: checkKubeconfigs,
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

// clients are the connections to one API server.
type clients struct {
	rest *rest.Config
	kube kubernetes.Interface
	// moved is closed when the kubeconfig files the clients were made from
	// name another server; nil when they come from no file.
	moved <-chan struct{}
}

// movedAway reports whether the clients' kubeconfig files name another
// server than the one the clients were made for.
func (c *clients) movedAway() bool {
	select {
	case <-c.moved:
		return true
	default:
		return false
	}
}

// connect builds the clients of cluster c: through its kubeconfig file
// when it names one, else through --kubeconfig (or $KUBECONFIG,
// ~/.kube/config, the in-cluster configuration). Nothing is asked of the
// server yet. The credentials of a file are re-read when it changes, and
// sent only to the server it named at first.
func (g *globals) connect(log *zap.Logger, c config.Cluster) (*clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	context := g.context
	if c.Kubeconfig != "" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: c.KubeconfigPath()}
	}
	if c.Context != "" {
		context = c.Context
	}
	load := func() (*rest.Config, error) {
		if c.Home() {
			return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
				&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
		}
		// Checked and used from one read of the file: a credential plugin
		// refused is never started.
		raw, err := rules.Load()
		if err != nil {
			return nil, err
		}
		if err := c.CheckCredentials(raw); err != nil {
			return nil, err
		}
		return clientcmd.NewNonInteractiveClientConfig(*raw, context, &clientcmd.ConfigOverrides{}, rules).ClientConfig()
	}
	var rc *rest.Config
	var moved <-chan struct{}
	if files := kubeconfigFiles(rules); len(files) > 0 {
		r, loaded, err := newReloader(log, files, load, !c.Home())
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig: %w", err)
		}
		rc, moved = &rest.Config{Host: loaded.Host, APIPath: loaded.APIPath, Transport: r}, r.moved
	} else {
		var err error
		if rc, err = load(); err != nil {
			return nil, fmt.Errorf("load kubeconfig: %w", err)
		}
	}
	return g.newClients(rc, c, moved)
}

// newClients makes the clients of cluster c from rc, tuned as every
// cluster's are; moved is closed when rc's files name another server.
func (g *globals) newClients(rc *rest.Config, c config.Cluster, moved <-chan struct{}) (*clients, error) {
	rc.UserAgent = "resyncd/" + version
	// A server that accepts connections and never answers (hung, or a
	// black-holing proxy) must fail the request, not hold it forever.
	rc.Timeout = g.requestTimeout
	// resyncd paces its writes itself (apply.qps); client-go's own limiter
	// must not throttle the LISTs of a pass below that.
	rc.QPS = max(float32(c.Apply.QPS)*2, 50)
	rc.Burst = max(c.Apply.Burst*2, 100)
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &clients{rest: rc, kube: kc, moved: moved}, nil
}

// checkServed asks discovery whether the API server serves each watched
// resource, and reports every one it does not, with the configuration's
// file and line, before any pass.
func checkServed(disc discovery.DiscoveryInterface, cfg *config.Config, resources []config.Resource) error {
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
	for _, r := range resources {
		key := r.Key()
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
	// home is the connection resyncd runs with (--kubeconfig, or the
	// in-cluster configuration): leader election or the ring, the metrics
	// guard and the clusters that name no kubeconfig file. Nil when
	// nothing needs it.
	home *clients
	// targets are the clusters, in the configuration's order.
	targets []*target
	// claims holds the API servers the targets reach, those of clusters
	// from Secrets too.
	claims *serverClaims
}

// target is one cluster, as the commands see it.
type target struct {
	cfg       config.Cluster
	resources []config.Resource
	log       *zap.Logger
	// claims holds the API servers every cluster of the command reaches.
	claims *serverClaims
	// secret is the server and credentials of a cluster from a Secret,
	// which its clients are made from; nil for a cluster of the
	// configuration file.
	secret *rest.Config
	// cl and renderers are set once the cluster answered: it serves every
	// watched resource, and the graphs are type-checked against its schemas.
	cl        *clients
	renderers desired.Registry
	// down are the resources, by index in resources, whose CRD resyncd
	// refused to apply, and why: they have no pass while the others run.
	down map[int]string
	// checking is closed when the last check of the cluster's readiness
	// has returned; one left behind when the passes stopped still uses
	// the target. Set and awaited by the goroutine of the passes.
	checking <-chan struct{}
}

// settle waits for a check of t's readiness left behind to return.
func (t *target) settle() {
	if t.checking != nil {
		<-t.checking
	}
}

func (t *target) ready() bool { return t.renderers != nil }

// up are the resources of t that are not down.
func (t *target) up() []config.Resource {
	var out []config.Resource
	for i, r := range t.resources {
		if _, down := t.down[i]; !down {
			out = append(out, r)
		}
	}
	return out
}

// settings is what the engine of t runs: the resources that are not down;
// index maps the engine's resource to its index in t.resources.
func (t *target) settings(cfg *config.Config) (s engine.Settings, index []int) {
	s = engine.SettingsFor(cfg, t.cfg)
	s.Resources = t.up()
	for i := range t.resources {
		if _, down := t.down[i]; !down {
			index = append(index, i)
		}
	}
	return s, index
}

// server is the address of the cluster's API server, once known.
func (t *target) server() string {
	if t.cl == nil {
		return ""
	}
	return t.cl.rest.Host
}

// disconnect drops the cluster's clients, to be made again from its
// kubeconfig file, and what it was made ready with.
func (t *target) disconnect() {
	t.claims.release(t.cfg.Name)
	t.cl, t.renderers, t.down = nil, nil, nil
}

// claimServer claims the address of the server t's clients reach.
func (t *target) claimServer() error {
	return t.claims.claim(t.cfg.Name, "server "+config.ServerURL(t.cl.rest.Host), "same address "+t.cl.rest.Host)
}

// prepare loads the configuration and builds the logger, and makes ready
// the clusters reached through resyncd's own connection: an error of
// theirs (the API server does not answer, a resource is not served) stops
// the command, as restarting with a fixed configuration would help. The
// clusters of kubeconfig files are made ready by the command, each on its
// own (readyTarget), so that one that does not answer, or whose file is
// missing or refused, holds up no other.
func (g *globals) prepare() (*prepared, error) {
	cfg, err := g.loadConfig(false)
	if err != nil {
		return nil, err
	}
	log, err := newLogger(cfg.Log)
	if err != nil {
		return nil, err
	}
	p := &prepared{cfg: cfg, log: log}
	needHome := cfg.LeaderElection.Enabled || cfg.Sharding.Enabled || cfg.Metrics.Secure || len(cfg.ClusterSecrets) > 0
	claims := &serverClaims{by: map[string]string{}}
	p.claims = claims
	for _, c := range cfg.Clusters {
		p.targets = append(p.targets, &target{cfg: c, resources: cfg.ResourcesIn(c.Name),
			log: log.With(zap.String("cluster", c.Name)), claims: claims})
		needHome = needHome || c.Home()
	}
	if needHome {
		if p.home, err = g.connect(log, config.Cluster{Apply: cfg.Apply}); err != nil {
			return nil, err
		}
	}
	for _, t := range p.targets {
		if !t.cfg.Home() {
			continue
		}
		if t.cfg.Context == "" {
			t.cl = p.home
		}
		if err := g.readyTarget(cfg, t); err != nil {
			return nil, err
		}
	}
	// Connecting reads only the file: done here, in the configuration's
	// order, so that of two entries whose files name one server the first
	// keeps it. What fails is readyTarget's to report.
	for _, t := range p.targets {
		if t.cfg.Home() {
			continue
		}
		if cl, err := g.connect(t.log, t.cfg); err == nil {
			t.cl = cl
			_ = t.claimServer()
		}
	}
	return p, nil
}

// readyTarget connects to cluster t, checks that it reaches an API server
// no other cluster reaches, that the server serves each resource watched
// there, and compiles the graphs against its schemas. A cluster of a
// kubeconfig file names itself in the error; when its file names another
// server than its clients were made for, it connects again.
func (g *globals) readyTarget(cfg *config.Config, t *target) error {
	err := func() error {
		if t.cl != nil && !t.cfg.Home() && t.cl.movedAway() {
			t.disconnect()
		}
		if t.cl == nil {
			cl, err := g.connectTarget(t)
			if err != nil {
				return err
			}
			t.cl = cl
		}
		if err := t.claimServer(); err != nil {
			return err
		}
		if g.installCRDs {
			// No context, as for discovery: the request timeout bounds it.
			down, err := installCRDs(context.Background(), cfg, t)
			if err != nil {
				return g.explain(t.cl, err)
			}
			t.down = down
		}
		if err := checkServed(t.cl.kube.Discovery(), cfg, t.up()); err != nil {
			return g.explain(t.cl, err)
		}
		uid, err := kubeSystemUID(t.cl.kube)
		if err != nil {
			return g.explain(t.cl, err)
		}
		if uid != "" {
			if err := t.claims.claim(t.cfg.Name, "kube-system "+uid, "same kube-system namespace, UID "+uid); err != nil {
				return err
			}
		}
		reg, err := renderers(cfg, t.up(), t.cl.kube.Discovery())
		if err != nil {
			return g.explain(t.cl, err)
		}
		t.renderers = reg
		return nil
	}()
	if err != nil && !t.cfg.Home() {
		return fmt.Errorf("cluster %s (%s): %w", t.cfg.Name, t.source(), err)
	}
	return err
}

// connectTarget builds the clients of cluster t: from its Secret's
// server and credentials, or through connect.
func (g *globals) connectTarget(t *target) (*clients, error) {
	if t.secret != nil {
		return g.newClients(rest.CopyConfig(t.secret), t.cfg, nil)
	}
	return g.connect(t.log, t.cfg)
}

// source names where cluster t comes from, in messages: its kubeconfig
// file, or its Secret.
func (t *target) source() string {
	if t.cfg.Secret != "" {
		return "Secret " + t.cfg.Secret
	}
	return t.cfg.Kubeconfig
}

// kubeSystemUID returns the UID of the server's kube-system namespace,
// which tells one cluster from another whatever address reaches it; empty
// when the server has none or resyncd may not get it.
func kubeSystemUID(kube kubernetes.Interface) (string, error) {
	// No context, as for discovery: the request timeout bounds it.
	ns, err := kube.CoreV1().Namespaces().Get(context.Background(), metav1.NamespaceSystem, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err), apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get namespace %s: %w", metav1.NamespaceSystem, err)
	}
	return string(ns.UID), nil
}

// serverClaims are the API servers the clusters of a command reach, by
// address and by the UID of their kube-system namespace. Two entries that
// reach one server would write every child twice: the first to claim it
// keeps it, the other is refused.
type serverClaims struct {
	mu sync.Mutex
	by map[string]string // "server URL" or "kube-system UID" → cluster
}

// claim gives key to cluster, or refuses it when another cluster holds
// it; what says what the two share.
func (s *serverClaims) claim(cluster, key, what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if other, ok := s.by[key]; ok && other != cluster {
		return &sameServerError{cluster: cluster, other: other, what: what}
	}
	s.by[key] = cluster
	return nil
}

// release gives up what cluster claimed.
func (s *serverClaims) release(cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.by {
		if c == cluster {
			delete(s.by, k)
		}
	}
}

// sameServerError refuses a cluster that reaches the API server another
// cluster of the configuration reaches.
type sameServerError struct {
	cluster, other string
	// what the two share: the address, or the kube-system namespace.
	what string
}

func (e *sameServerError) Error() string {
	return fmt.Sprintf("cluster %s reaches the API server of cluster %s (%s): every child would be written twice; "+
		"remove one of the two entries, or point it at another cluster", e.cluster, e.other, e.what)
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
