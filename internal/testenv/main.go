package testenv

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// Main starts a control plane for one test package, runs its tests, stops
// the control plane and exits; call it from TestMain:
//
//	var env *testenv.Env
//	func TestMain(m *testing.M) { testenv.Main(m, &env) }
//
// envtest starts etcd and kube-apiserver in their own process group, so a
// Ctrl-C on the terminal does not reach them: Main catches SIGINT and SIGTERM
// and stops them before exiting.
func Main(m *testing.M, env **Env) {
	MainWith(m, env, Options{})
}

// MainWith is Main with a control plane started with opts, for example a
// whole Cluster.
func MainWith(m *testing.M, env **Env, opts Options) {
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	*env = e

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "testenv: %v: stopping the control plane\n", s)
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
		}
		os.Exit(130)
	}()

	code := m.Run()
	signal.Stop(sig)
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
