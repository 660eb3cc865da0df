package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/resyncd/resyncd/daemon"
)

func newRunCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run passes on each resource's interval until SIGINT, SIGTERM or SIGHUP",
		Long: "run serves /metrics, /healthz and /readyz, takes part in leader election when it is\n" +
			"enabled, and runs a pass over each watched resource every interval. SIGUSR1 starts a pass\n" +
			"of every resource now (the leader's; a follower ignores it). SIGTERM, SIGINT or SIGHUP\n" +
			"lets the batch of writes in flight finish, releases the Lease if it leads, and exits 0;\n" +
			"a second signal exits at once.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, opts, err := g.options()
			if err != nil {
				return exitWith(1, err)
			}
			defer func() { _ = opts.Log.Sync() }()
			return daemon.Run(cmd.Context(), cfg, opts)
		},
	}
	cmd.Flags().DurationVar(&g.passTimeout, "pass-timeout", 10*time.Minute,
		"fail a pass that has not finished after this long (no new batch starts, requests in flight are cancelled); the next starts on schedule")
	return cmd
}
