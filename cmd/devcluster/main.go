// Command devcluster runs a local cluster for `make run`: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok with fake
// nodes, all from bin/ (or only the first two with --cluster=false). It
// writes a kubeconfig to a stable path, installs the CRDs (HttpService's,
// and the example WebApp's) and the samples, runs the given command
// against it with KUBECONFIG set, and on Ctrl-C or the command's exit stops
// everything.
//
//	devcluster [--dir DIR] [--crds DIRS] [--samples DIR] [--cluster=false] [--nodes N] [-- COMMAND ARGS...]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/resyncd/resyncd/internal/testenv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("devcluster", flag.ContinueOnError)
	dir := fs.String("dir", ".run", "directory for the kubeconfig and the control plane's log")
	samples := fs.String("samples", "testdata/samples", "directory of manifests to apply once the API server is up; empty: none")
	crds := fs.String("crds", "deploy/crds,testdata/crds", "comma-separated directories of CustomResourceDefinitions to install")
	cluster := fs.Bool("cluster", true, "also run kube-controller-manager, kube-scheduler and kwok, so that Deployments roll out")
	nodes := fs.Int("nodes", 3, "fake nodes, with --cluster")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(*dir, "controlplane.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()

	// Ctrl-C reaches this process and the command (same process group); the
	// control plane runs in a group of its own and is stopped below. Signals
	// that come while it stops are absorbed, so that it always stops.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	parts := "etcd and kube-apiserver"
	if *cluster {
		parts = fmt.Sprintf("etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with %d fake nodes", *nodes)
	}
	fmt.Fprintf(os.Stderr, "devcluster: starting %s (log: %s)\n", parts, logPath)
	env, err := testenv.Start(testenv.Options{Output: logFile, Cluster: *cluster, Nodes: *nodes, CRDDirs: strings.Split(*crds, ",")})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "devcluster: stopping the control plane")
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "devcluster: stop: %v\n", err)
		}
	}()

	kubeconfig, err := filepath.Abs(filepath.Join(*dir, "kubeconfig"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, env.Kubeconfig(), 0o600); err != nil {
		return err
	}
	if *samples != "" {
		n, err := applyDir(ctx, env.Config, *samples)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "devcluster: applied %d objects from %s\n", n, *samples)
	}
	fmt.Fprintf(os.Stderr, "devcluster: API server %s is up; in another terminal:\n\n    export KUBECONFIG=%s\n    kubectl get hsvc -A\n\n",
		env.Config.Host, kubeconfig)

	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "devcluster: press Ctrl-C to stop")
		<-ctx.Done()
		return nil
	}
	return runCommand(ctx, kubeconfig, fs.Args())
}

// runCommand runs argv with KUBECONFIG set until it exits or ctx ends; on
// ctx's end it signals the command and waits for it.
func runCommand(ctx context.Context, kubeconfig string, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	// A process group of its own: the terminal's Ctrl-C reaches only this
	// process, which passes on exactly one SIGTERM (a second signal would
	// make the command exit without finishing its batch).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return commandErr(argv[0], err)
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := <-done
		var exit *exec.ExitError
		if errors.As(err, &exit) && !exit.Exited() {
			return nil // ended by the signal, as asked
		}
		return commandErr(argv[0], err)
	}
}

func commandErr(name string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
