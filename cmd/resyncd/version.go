package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newVersionCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(g.stdout, version+"\n")
			return err
		},
	}
}
