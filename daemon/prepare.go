package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/dynamic"

	"github.com/resyncd/resyncd/cluster"
	"github.com/resyncd/resyncd/config"
)

// Options are how the commands run the daemon, and prepare clusters for
// one pass.
type Options struct {
	// Log is the logger the configuration asks for (NewLogger).
	Log *zap.Logger
	// Dialer makes the clients of every cluster; its RequestTimeout is
	// named in the errors of a server that does not answer.
	Dialer cluster.Dialer
	// Version is logged when the daemon starts.
	Version string
	// PassTimeout bounds each pass of Run; zero: no bound.
	PassTimeout time.Duration
	// Timeout bounds the whole of a command that runs one pass; it is
	// named in the error of one that gave up.
	Timeout time.Duration
	// InstallCRDs: making a cluster ready applies the CRDs of the
	// resources that set installCRD (Run always does).
	InstallCRDs bool
}

// Prepared is what every command that talks to a cluster starts with: the
// configuration, resyncd's own connection and the clusters, those reached
// through that connection made ready.
type Prepared struct {
	cfg  *config.Config
	log  *zap.Logger
	opts Options
	// home is the connection resyncd runs with (--kubeconfig, or the
	// in-cluster configuration): leader election or the ring, the metrics
	// guard, the Secrets of clusters and the clusters that name no
	// kubeconfig file. Nil when nothing needs it.
	home    *cluster.Clients
	catalog *cluster.Catalog
	// targets are the clusters of the configuration file, in its order.
	targets []*target
}

// Prepare connects to the clusters of cfg and makes ready those reached
// through resyncd's own connection: an error of theirs (the API server
// does not answer, a resource is not served) stops the command, as
// restarting with a fixed configuration would help. The clusters of
// kubeconfig files are made ready by the command, each on its own
// (readyTarget), so that one that does not answer, or whose file is
// missing or refused, holds up no other.
func Prepare(cfg *config.Config, opts Options) (*Prepared, error) {
	p := &Prepared{cfg: cfg, log: opts.Log, opts: opts, catalog: cluster.NewCatalog(cfg, opts.Log)}
	needHome := cfg.LeaderElection.Enabled || cfg.Sharding.Enabled || cfg.Metrics.Secure || len(cfg.ClusterSecrets) > 0
	for _, t := range p.catalog.Listed() {
		p.targets = append(p.targets, &target{Target: t})
		needHome = needHome || t.Config.Home()
	}
	if needHome {
		var err error
		if p.home, err = opts.Dialer.Clients(p.log, config.Cluster{Apply: cfg.Apply}); err != nil {
			return nil, err
		}
	}
	for _, t := range p.targets {
		if !t.Config.Home() {
			continue
		}
		if t.Config.Context == "" {
			t.Clients = p.home
		}
		if err := p.readyTarget(t); err != nil {
			return nil, err
		}
	}
	// Connecting reads only the file: done here, in the configuration's
	// order, so that of two entries whose files name one server the first
	// keeps it. What fails is readyTarget's to report.
	for _, t := range p.targets {
		if t.Config.Home() {
			continue
		}
		if cl, err := p.opts.Dialer.Connect(t.Target); err == nil {
			t.Clients = cl
			_ = t.ClaimServer()
		}
	}
	return p, nil
}

// readyTarget connects to cluster t, checks that it reaches an API server
// no other cluster reaches, that the server serves each resource watched
// there, and compiles the graphs against its schemas. A cluster of a
// kubeconfig file names itself in the error; when its file names another
// server than its clients were made for, it connects again.
func (p *Prepared) readyTarget(t *target) error {
	err := p.makeReady(t)
	if err != nil && !t.Config.Home() {
		return fmt.Errorf("cluster %s (%s): %w", t.Config.Name, t.Source(), err)
	}
	return err
}

func (p *Prepared) makeReady(t *target) error {
	if t.Clients != nil && !t.Config.Home() && t.Clients.MovedAway() {
		t.disconnect()
	}
	if t.Clients == nil {
		cl, err := p.opts.Dialer.Connect(t.Target)
		if err != nil {
			return err
		}
		t.Clients = cl
	}
	if err := t.ClaimServer(); err != nil {
		return err
	}
	if p.opts.InstallCRDs && p.cfg.ResourceGraphDefinitions.Enabled {
		dyn, err := dynamic.NewForConfig(t.Clients.REST)
		if err != nil {
			return err
		}
		if err := ensureRGDCRD(context.Background(), dyn, p.cfg.FieldManager, t.Log); err != nil {
			return p.explain(t.Clients, err)
		}
	}
	if p.opts.InstallCRDs {
		// No context, as for discovery: the request timeout bounds it.
		down, err := installCRDs(context.Background(), p.cfg, t)
		if err != nil {
			return p.explain(t.Clients, err)
		}
		t.down = down
	}
	if err := cluster.CheckServed(t.Clients.Kube.Discovery(), p.cfg, t.up()); err != nil {
		return p.explain(t.Clients, err)
	}
	if err := t.ClaimKubeSystem(); err != nil {
		return p.explain(t.Clients, err)
	}
	reg, err := renderers(p.cfg, t.up(), t.Clients.Kube.Discovery())
	if err != nil {
		return p.explain(t.Clients, err)
	}
	t.renderers = reg
	return nil
}

// ErrNoAnswer marks an error of a server that did not answer in time.
var ErrNoAnswer = errors.New("no answer")

// explain says, of an error that is a request or command timing out, which
// server did not answer within which bound, and marks it ErrNoAnswer.
func (p *Prepared) explain(cl *cluster.Clients, err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: the API server at %s did not answer within %s (--request-timeout): %w", ErrNoAnswer, cl.REST.Host, p.opts.Dialer.RequestTimeout, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: gave up after %s (--timeout) waiting for the API server at %s: %w", ErrNoAnswer, p.opts.Timeout, cl.REST.Host, err)
	}
	return err
}
