package main

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

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
	// requestTimeout bounds every request to the API server.
	requestTimeout time.Duration
	// timeout bounds the whole of once and diff.
	timeout time.Duration
	// passTimeout bounds each pass of run.
	passTimeout time.Duration
	stdout      io.Writer
	profiles    profiles
	// installCRDs: the command applies the CRDs of the resources that set
	// installCRD when it makes a cluster ready (run and once do).
	installCRDs bool
}

func run(ctx context.Context, args []string) error {
	root, g := newRoot(os.Stdout, os.Stderr, args)
	err := root.ExecuteContext(ctx)
	return errors.Join(err, g.profiles.stop())
}

func newRootCommand(stdout, stderr io.Writer, args []string) *cobra.Command {
	root, _ := newRoot(stdout, stderr, args)
	return root
}

func newRoot(stdout, stderr io.Writer, args []string) (*cobra.Command, *globals) {
	g := &globals{stdout: stdout}
	root := &cobra.Command{
		Use:   "resyncd",
		Short: "Level-triggered resync daemon for Kubernetes",
		Long: "resyncd LISTs the resources it watches on an interval, renders the child objects each\n" +
			"should have, and repairs every difference with server-side apply. No informers, no watches.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return g.profiles.start()
		},
	}
	f := root.PersistentFlags()
	f.StringVar(&g.configPath, "config", envOr("RESYNCD_CONFIG", DefaultConfigPath), "configuration file ($RESYNCD_CONFIG)")
	f.StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig file; default: $KUBECONFIG, ~/.kube/config, then the in-cluster service account")
	f.StringVar(&g.context, "context", "", "kubeconfig context")
	f.StringVar(&g.logLevel, "log-level", "", "debug, info, warn or error; overrides log.level")
	f.StringVar(&g.logFormat, "log-format", "", "json or console; overrides log.format")
	f.DurationVar(&g.requestTimeout, "request-timeout", 30*time.Second,
		"give up on a request to the API server that has not been answered in full after this long")
	f.StringVar(&g.profiles.cpuPath, "cpu-profile", "", "write a pprof CPU profile of the command to this file")
	f.StringVar(&g.profiles.heapPath, "heap-profile", "", "write a pprof heap profile (live and allocated since start) to this file at exit")
	root.AddCommand(newRunCommand(g), newOnceCommand(g), newDiffCommand(g), newValidateCommand(g), newRenderCommand(g), newCRDCommand(g), newVersionCommand(g))
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root, g
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
