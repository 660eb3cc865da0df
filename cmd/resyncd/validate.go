package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the configuration file and list every problem",
		Long:  "validate reads the configuration as run would, without touching a cluster. It exits 0\nwhen it is valid and 1 with every problem, each with the file, line and key, when not.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return exitWith(1, err)
			}
			_, err = fmt.Fprintf(g.stdout, "%s: valid, %d watched resources\n", g.configPath, len(cfg.Resources))
			return err
		},
	}
}
