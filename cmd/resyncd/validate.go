package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/resyncd/resyncd/daemon"
)

func newValidateCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the configuration file and its graphs and list every problem",
		Long: "validate reads the configuration as run would. It exits 0 when it is valid and 1 with\n" +
			"every problem, each with the file, line and key, when not. Without a cluster it checks\n" +
			"graph files offline: their shape, expressions, references and order, and, where the\n" +
			"parent kind's CRD is known (the graph's spec.schema, or the resource's crd file), every\n" +
			"expression's types as the parent decides them and its cost. With --kubeconfig\n" +
			"(or $KUBECONFIG) it also asks the API server whether it serves every watched resource,\n" +
			"type-checks every graph expression against the schemas it publishes for the parent and\n" +
			"child kinds, and bounds each expression's estimated cost (cel.maxEstimatedCost).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadConfig(true)
			if err != nil {
				return exitWith(1, err)
			}
			graphs := 0
			for _, r := range cfg.Resources {
				if r.Graph != "" {
					graphs++
				}
			}
			var where []string
			how := "graphs checked offline; pass --kubeconfig to type-check them against a cluster"
			online := g.kubeconfig != "" || os.Getenv("KUBECONFIG") != ""
			if !online {
				// Offline, which kinds are cluster-scoped is Kubernetes'
				// own list; against a cluster, its discovery says (below).
				var errs []error
				for _, r := range cfg.Resources {
					if r.Graph == "" {
						continue
					}
					lines, err := placementsOffline(cfg, r)
					errs = append(errs, err)
					where = append(where, lines...)
				}
				if err := errors.Join(errs...); err != nil {
					return exitWith(1, err)
				}
			} else {
				p, err := g.prepare(false)
				if err != nil {
					return exitWith(exitCodeOf(err, 1), err)
				}
				servers, err := p.ReadyAll()
				if err != nil {
					return exitWith(exitCodeOf(err, 1), err)
				}
				how = "every resource served by " + strings.Join(servers, ", ") + ", graphs type-checked against its schemas"
				where = onlinePlacements(p.Graphs())
			}
			if graphs == 0 {
				how = "no graph"
			}
			if _, err = fmt.Fprintf(g.stdout, "%s: valid, %d watched resources (%s)\n", g.configPath, len(cfg.Resources), how); err != nil {
				return err
			}
			for _, l := range where {
				if _, err := fmt.Fprintln(g.stdout, l); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// onlinePlacements is what validate says of the placements of graphs,
// each line once, with the graphs as loaded against their cluster: its
// discovery says which kinds are cluster-scoped. Their errors were
// reported when the graphs were loaded.
func onlinePlacements(graphs []daemon.Graph) []string {
	var where []string
	for _, g := range graphs {
		lines, _ := placementLines(g.Resource, g.Renderer)
		for _, l := range lines {
			if !slices.Contains(where, l) {
				where = append(where, l)
			}
		}
	}
	return where
}
