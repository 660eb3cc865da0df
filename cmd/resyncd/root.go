package main

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// DefaultConfigPath is where the Helm chart mounts the configuration.
const DefaultConfigPath = "/etc/resyncd/config.yaml"

// globals are the flags every command takes.
type globals struct {
	configPath string
	kubeconfig string
	context    string
	logLevel   string
	logFormat  string
	stdout     io.Writer
}

func run(ctx context.Context, args []string) error {
	return newRootCommand(os.Stdout, os.Stderr, args).ExecuteContext(ctx)
}

func newRootCommand(stdout, stderr io.Writer, args []string) *cobra.Command {
	g := &globals{stdout: stdout}
	root := &cobra.Command{
		Use:   "resyncd",
		Short: "Level-triggered resync daemon for Kubernetes",
		Long: "resyncd LISTs the resources it watches on an interval, renders the child objects each\n" +
			"should have, and repairs every difference with server-side apply. No informers, no watches.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := root.PersistentFlags()
	f.StringVar(&g.configPath, "config", envOr("RESYNCD_CONFIG", DefaultConfigPath), "configuration file ($RESYNCD_CONFIG)")
	f.StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig file; default: $KUBECONFIG, ~/.kube/config, then the in-cluster service account")
	f.StringVar(&g.context, "context", "", "kubeconfig context")
	f.StringVar(&g.logLevel, "log-level", "", "debug, info, warn or error; overrides log.level")
	f.StringVar(&g.logFormat, "log-format", "", "json or console; overrides log.format")
	root.AddCommand(newRunCommand(g), newOnceCommand(g), newDiffCommand(g), newValidateCommand(g), newVersionCommand(g))
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

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
