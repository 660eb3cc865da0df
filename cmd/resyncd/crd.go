package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/resyncd/resyncd/desired/graph"
)

func newCRDCommand(g *globals) *cobra.Command {
	var graphPath string
	cmd := &cobra.Command{
		Use:   "crd",
		Short: "Print the CustomResourceDefinition of a graph's parent kind",
		Long: "crd reads the spec.schema of a graph file (a kro.run/v1alpha1 ResourceGraphDefinition or\n" +
			"ResourceGroup, or a resyncd.io/v1alpha1 Graph) and prints the parent kind's\n" +
			"CustomResourceDefinition as kro would generate it, with the status subresource and the\n" +
			"status fields resyncd writes, ready for kubectl apply or a chart. Nothing is read from a\n" +
			"cluster. It exits 1 when the schema has a problem, naming the file, line and field.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			crd, err := graph.CRDOfFile(graphPath)
			if err != nil {
				return exitWith(1, err)
			}
			out, err := graph.CRDManifest(crd)
			if err != nil {
				return exitWith(1, fmt.Errorf("%s: %w", graphPath, err))
			}
			_, err = g.stdout.Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&graphPath, "graph", "", "graph file with spec.schema (required)")
	_ = cmd.MarkFlagRequired("graph")
	return cmd
}
