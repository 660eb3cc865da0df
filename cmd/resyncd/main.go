// Command resyncd is the resync daemon: `resyncd run` keeps the children
// of the watched resources in place; see README.md and docs/.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signalContext()
	defer stop()
	err := run(ctx, os.Args[1:])
	if err == nil {
		return
	}
	code := 1
	var ec *exitError
	if errors.As(err, &ec) {
		code = ec.code
	}
	if !errors.Is(err, errSilent) {
		fmt.Fprintf(os.Stderr, "resyncd: %v\n", err)
	}
	stop()
	os.Exit(code)
}

// signalContext is cancelled by the first SIGINT, SIGTERM or SIGHUP, so
// that the batch in flight can finish; a second signal exits at once.
// SIGHUP stops like SIGTERM rather than reloading: its default action
// would kill the process between the writes of a parent, and a changed
// configuration is read by a restart.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-ch
		cancel()
		<-ch
		fmt.Fprintln(os.Stderr, "resyncd: second signal, exiting at once")
		os.Exit(1)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
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
