package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/daemon"
	"github.com/resyncd/resyncd/engine"
)

func newDiffCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show, without writing, how each drifted child differs from what resyncd would apply",
		Long: "diff runs one read-only pass and prints each drifted, missing or orphaned child as a\n" +
			"unified diff of the fields resyncd owns, like kubectl diff. It exits 0 when nothing\n" +
			"drifted, 1 when something did, and 2 on error.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDiff(cmd.Context(), g) },
	}
	timeoutFlag(cmd, g)
	return cmd
}

func runDiff(ctx context.Context, g *globals) error {
	ctx, cancel := g.bounded(ctx)
	defer cancel()
	p, err := g.prepare(false)
	if err != nil {
		return exitWith(2, err)
	}
	defer func() { _ = p.log.Sync() }()
	reps, err := p.PassOnce(ctx, daemon.OnceOptions{ReadOnly: true, KeepFields: true})
	drifted := 0
	for _, cr := range reps {
		for _, r := range cr.Resources {
			for _, d := range r.Drifts {
				drifted++
				d.Object = p.cfg.InCluster(cr.Cluster, d.Object)
				if err := printDrift(g.stdout, d); err != nil {
					return exitWith(2, err)
				}
			}
		}
	}
	if err != nil {
		return exitWith(2, err)
	}
	if drifted > 0 {
		return exitWith(1, errSilent)
	}
	return nil
}

// printDrift writes one drifted object as a unified diff of YAML.
func printDrift(w io.Writer, d engine.Drift) error {
	from, err := toYAML(d.Live)
	if err != nil {
		return err
	}
	to, err := toYAML(d.Desired)
	if err != nil {
		return err
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(from), B: lines(to),
		FromFile: "live/" + d.Object, ToFile: "resyncd/" + d.Object, Context: 3,
	})
	if err != nil {
		return err
	}
	if text == "" {
		text = fmt.Sprintf("--- live/%s\n+++ resyncd/%s\n(%s)\n", d.Object, d.Object, d.Reason)
	}
	_, err = io.WriteString(w, text)
	return err
}

func toYAML(m map[string]any) (string, error) {
	if m == nil {
		return "", nil
	}
	b, err := yaml.Marshal(m)
	return strings.TrimSuffix(string(b), "\n") + "\n", err
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return difflib.SplitLines(s)
}
