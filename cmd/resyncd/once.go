package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/resyncd/resyncd/daemon"
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
	p, err := g.prepare(true)
	if err != nil {
		return exitWith(exitCodeOf(err, 1), err)
	}
	defer func() { _ = p.log.Sync() }()
	reps, passErr := p.PassOnce(ctx, daemon.OnceOptions{Events: true})
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
				problems = append(problems, fmt.Errorf("%s: %d writes failed, %d parents stalled, %d writes deferred",
					p.cfg.InCluster(cr.Cluster, r.Resource), r.Failed, r.Stalled, r.Deferred))
			}
		}
	}
	if len(problems) > 0 {
		return exitWith(1, errors.Join(problems...))
	}
	return nil
}

func printSummary(w io.Writer, reps []daemon.ClusterReport, listed bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "RESOURCE\tPARENTS\tIN SYNC\tDRIFTED\tMISSING\tORPHANED\tTAKEN\tCREATED\tUPDATED\tDELETED\tRELEASED\tSTATUSES\tDEFERRED\tWITHHELD\tFAILED\tSTALLED\tDURATION"
	if listed {
		head = "CLUSTER\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, cr := range reps {
		for _, r := range cr.Resources {
			if listed {
				fmt.Fprintf(tw, "%s\t", cr.Cluster)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Resource, r.Parents, r.InSync, r.Drifted,
				r.Missing, r.Orphaned, r.Taken, r.Created, r.Updated, r.Deleted, r.Released, r.Statuses, r.Deferred, r.Withheld, r.Failed, r.Stalled, r.Duration.Round(1e6))
		}
	}
	return tw.Flush()
}
