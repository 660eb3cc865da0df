package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	p, err := g.prepare()
	if err != nil {
		return exitWith(exitCodeOf(err, 1), err)
	}
	defer func() { _ = p.log.Sync() }()
	d := &daemon{cfg: p.cfg, cl: p.cl}
	rec, stop := d.recorder(ctx)
	defer stop()
	eng, err := engine.New(engine.SettingsFrom(p.cfg), engine.Options{REST: p.cl.rest, Renderers: p.renderers, Log: p.log, Events: rec})
	if err != nil {
		return err
	}
	rep, passErr := eng.SyncOnce(ctx)
	if err := printSummary(g.stdout, rep); err != nil {
		return err
	}
	if passErr != nil {
		passErr = g.explain(p.cl, passErr)
		return exitWith(exitCodeOf(passErr, 1), passErr)
	}
	var problems []error
	for _, r := range rep.Resources {
		if r.Failed > 0 || r.Stalled > 0 || r.Deferred > 0 {
			problems = append(problems, fmt.Errorf("%s: %d writes failed, %d parents stalled, %d writes deferred", r.Resource, r.Failed, r.Stalled, r.Deferred))
		}
	}
	if len(problems) > 0 {
		return exitWith(1, errors.Join(problems...))
	}
	return nil
}

func printSummary(w io.Writer, rep engine.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tPARENTS\tIN SYNC\tDRIFTED\tMISSING\tORPHANED\tTAKEN\tCREATED\tUPDATED\tDELETED\tRELEASED\tSTATUSES\tDEFERRED\tWITHHELD\tFAILED\tSTALLED\tDURATION")
	for _, r := range rep.Resources {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Resource, r.Parents, r.InSync, r.Drifted,
			r.Missing, r.Orphaned, r.Taken, r.Created, r.Updated, r.Deleted, r.Released, r.Statuses, r.Deferred, r.Withheld, r.Failed, r.Stalled, r.Duration.Round(1e6))
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
