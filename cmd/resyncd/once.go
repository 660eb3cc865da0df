package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/resyncd/resyncd/engine"
)

func newOnceCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "once",
		Short: "Run one pass over every watched resource and print a summary",
		Long: "once runs one pass, as run does, and prints what it found and did. It exits 0 when\n" +
			"everything is in sync or was repaired, and 1 when a write failed, a parent is stalled,\n" +
			"writes were left for a later pass by apply.maxWritesPerPass, or a pass failed, and 2 when\n" +
			"the API server did not answer within --request-timeout or the pass within --timeout.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runOnce(cmd.Context(), g) },
	}
	timeoutFlag(cmd, g)
	return cmd
}

func runOnce(ctx context.Context, g *globals) error {
	ctx, cancel := g.bounded(ctx)
	defer cancel()
	g.installCRDs = true
	p, err := g.prepare()
	if err != nil {
		return exitWith(exitCodeOf(err, 1), err)
	}
	defer func() { _ = p.log.Sync() }()
	reps, passErr := g.passOnce(ctx, p, func(t *target) (engine.Options, func()) {
		rec, stop := newRecorder(ctx, t.cl.kube)
		return engine.Options{Events: rec}, stop
	})
	if err := printSummary(g.stdout, reps, p.cfg.ListsClusters()); err != nil {
		return err
	}
	if passErr != nil {
		return exitWith(exitCodeOf(passErr, 1), passErr)
	}
	var problems []error
	for _, cr := range reps {
		for _, r := range cr.Resources {
			if r.Failed > 0 || r.Stalled > 0 || r.Deferred > 0 {
				problems = append(problems, fmt.Errorf("%s%s: %d writes failed, %d parents stalled, %d writes deferred",
					clusterPrefix(cr.cluster, p.cfg.ListsClusters()), r.Resource, r.Failed, r.Stalled, r.Deferred))
			}
		}
	}
	if len(problems) > 0 {
		return exitWith(1, errors.Join(problems...))
	}
	return nil
}

// clusterReport is what one pass did in one cluster.
type clusterReport struct {
	cluster string
	engine.Report
}

// passOnce runs one pass over every cluster at once, those of the Secrets
// the configuration selects too, each with its own engine, and returns
// their reports in the configuration's order, then the Secrets'. A
// cluster that does not answer fails alone: its error is returned with
// the others', and every other cluster's pass runs. with gives the options
// of a cluster's engine (Log and REST are set here) and what to call when
// its pass is over.
func (g *globals) passOnce(ctx context.Context, p *prepared, with func(*target) (engine.Options, func())) ([]clusterReport, error) {
	fromSecrets, secretsErr := p.secretTargets(ctx)
	targets := append(slices.Clip(p.targets), fromSecrets...)
	reps := make([]clusterReport, len(targets))
	errs := make([]error, len(targets), len(targets)+1)
	var wg sync.WaitGroup
	for i, t := range targets {
		reps[i].cluster = t.cfg.Name
		wg.Go(func() {
			if !t.ready() {
				if errs[i] = g.readyTarget(p.cfg, t); errs[i] != nil {
					return
				}
			}
			opts, done := with(t)
			defer done()
			opts.REST, opts.Renderers, opts.Log = t.cl.rest, t.renderers, p.log
			settings, _ := t.settings(p.cfg)
			eng, err := engine.New(settings, opts)
			if err != nil {
				errs[i] = err
				return
			}
			reps[i].Report, err = eng.SyncOnce(ctx)
			for _, why := range t.down {
				err = errors.Join(err, errors.New(why))
			}
			if err != nil {
				errs[i] = g.explain(t.cl, err)
				if p.cfg.ListsClusters() {
					errs[i] = fmt.Errorf("cluster %s: %w", t.cfg.Name, errs[i])
				}
			}
		})
	}
	wg.Wait()
	return reps, errors.Join(append(errs, secretsErr)...)
}

// clusterPrefix is "NAME/" when the configuration lists clusters, else "".
func clusterPrefix(name string, listed bool) string {
	if !listed {
		return ""
	}
	return name + "/"
}

func printSummary(w io.Writer, reps []clusterReport, listed bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "RESOURCE\tPARENTS\tIN SYNC\tDRIFTED\tMISSING\tORPHANED\tTAKEN\tCREATED\tUPDATED\tDELETED\tRELEASED\tSTATUSES\tDEFERRED\tWITHHELD\tFAILED\tSTALLED\tDURATION"
	if listed {
		head = "CLUSTER\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, cr := range reps {
		for _, r := range cr.Resources {
			if listed {
				fmt.Fprintf(tw, "%s\t", cr.cluster)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Resource, r.Parents, r.InSync, r.Drifted,
				r.Missing, r.Orphaned, r.Taken, r.Created, r.Updated, r.Deleted, r.Released, r.Statuses, r.Deferred, r.Withheld, r.Failed, r.Stalled, r.Duration.Round(1e6))
		}
	}
	return tw.Flush()
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
	if errors.Is(err, errNoAnswer) {
		return 2
	}
	return code
}
