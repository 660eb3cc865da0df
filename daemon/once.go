package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/resyncd/resyncd/cluster"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired/graph"
	"github.com/resyncd/resyncd/engine"
)

// OnceOptions say how PassOnce runs its pass.
type OnceOptions struct {
	// ReadOnly plans and reports, and writes nothing (`resyncd diff`).
	ReadOnly bool
	// KeepFields keeps the fields of every drifted child in the report.
	KeepFields bool
	// Events records Events on the parents' transitions, and waits for
	// them to be written before PassOnce returns.
	Events bool
}

// ClusterReport is what one pass did in one cluster.
type ClusterReport struct {
	// Cluster is the cluster's name.
	Cluster string
	engine.Report
}

// PassOnce runs one pass over every cluster at once, those of the Secrets
// the configuration selects too, each with its own engine, and returns
// their reports in the configuration's order, then the Secrets'. A
// cluster that does not answer fails alone: its error is returned with
// the others', and every other cluster's pass runs.
func (p *Prepared) PassOnce(ctx context.Context, o OnceOptions) ([]ClusterReport, error) {
	var fromSecrets []*target
	var secretsErr error
	if len(p.cfg.ClusterSecrets) > 0 {
		var found []*cluster.Target
		found, secretsErr = p.catalog.Secrets(p.home.Kube, zap.NewNop()).ReadOnce(ctx)
		for _, t := range found {
			fromSecrets = append(fromSecrets, &target{Target: t})
		}
	}
	targets := append(slices.Clip(p.targets), fromSecrets...)
	reps := make([]ClusterReport, len(targets))
	errs := make([]error, len(targets), len(targets)+1)
	var wg sync.WaitGroup
	for i, t := range targets {
		reps[i].Cluster = t.Config.Name
		wg.Go(func() { reps[i].Report, errs[i] = p.passIn(ctx, t, o) })
	}
	wg.Wait()
	return reps, errors.Join(append(errs, secretsErr)...)
}

// passIn makes cluster t ready if it is not, and runs one pass in it.
func (p *Prepared) passIn(ctx context.Context, t *target, o OnceOptions) (engine.Report, error) {
	if !t.ready() {
		if err := p.readyTarget(t); err != nil {
			return engine.Report{}, err
		}
	}
	opts := engine.Options{REST: t.Clients.REST, Renderers: t.renderers, Log: p.log, ReadOnly: o.ReadOnly, KeepFields: o.KeepFields}
	if o.Events {
		rec, stop := newRecorder(ctx, t.Clients.Kube)
		defer stop()
		opts.Events = rec
	}
	settings, _ := t.settings(p.cfg)
	eng, err := engine.New(settings, opts)
	if err != nil {
		return engine.Report{}, err
	}
	rep, err := eng.SyncOnce(ctx)
	for _, why := range t.down {
		err = errors.Join(err, errors.New(why))
	}
	if err != nil {
		err = p.explain(t.Clients, err)
		if p.cfg.ListsClusters() {
			err = fmt.Errorf("cluster %s: %w", t.Config.Name, err)
		}
	}
	return rep, err
}

// ReadyAll makes every cluster of the configuration file ready, and
// returns the addresses of their servers; the error holds every cluster's
// problem.
func (p *Prepared) ReadyAll() ([]string, error) {
	var errs []error
	var servers []string
	for _, t := range p.targets {
		if !t.ready() {
			errs = append(errs, p.readyTarget(t))
		}
		servers = append(servers, t.Server())
	}
	return servers, errors.Join(errs...)
}

// Graph is a graph file of a watched resource, as loaded against the
// schemas of a cluster.
type Graph struct {
	Resource config.Resource
	Renderer *graph.Renderer
}

// Graphs are the graphs of every cluster made ready, as loaded against
// that cluster, in the configuration's order.
func (p *Prepared) Graphs() []Graph {
	var out []Graph
	for _, t := range p.targets {
		for _, r := range t.Resources {
			if g, ok := t.renderers[r.RendererKey()].(*graph.Renderer); r.Graph != "" && ok {
				out = append(out, Graph{Resource: r, Renderer: g})
			}
		}
	}
	return out
}
