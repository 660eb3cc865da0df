package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// Shared is the control plane of one test package, started by the first
// test that asks for it, so that the package's tests that need none (plans,
// folds, schedules on values) run where the binaries are not built. Main
// stops it; the zero value starts with Options{}.
//
//	var shared testenv.Shared
//	func env(t testing.TB) *testenv.Env { t.Helper(); return shared.Env(t) }
//	func TestMain(m *testing.M) { testenv.Main(m, &shared) }
type Shared struct {
	opts Options
	// mu is held while the control plane starts, so that a signal that
	// comes then stops it once it is up rather than leaving it running.
	mu      sync.Mutex
	started bool // a start was tried; err says how it went
	env     *Env
	err     error
}

// Env returns the control plane, starting it on the first call. A test
// that asks where it cannot start (no binaries: `make bins` builds them)
// fails with the reason, and so does every later one, without trying again.
func (s *Shared) Env(t testing.TB) *Env {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.started = true
		s.env, s.err = Start(s.opts)
	}
	if s.err != nil {
		t.Fatalf("testenv: this test needs a control plane: %v", s.err)
	}
	return s.env
}

// stop stops the control plane if a test started it, and runs
// Options.AfterStop either way, for what the caller made beforehand.
func (s *Shared) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env != nil {
		err := s.env.Stop()
		s.env = nil
		return err
	}
	if s.opts.AfterStop != nil {
		s.opts.AfterStop()
		s.opts.AfterStop = nil
	}
	return nil
}

// Main runs a test package's tests with s as its control plane, started
// by the first test that needs it, then stops it and exits; call it from
// TestMain.
//
// envtest starts etcd and kube-apiserver in their own process group, so a
// Ctrl-C on the terminal does not reach them: Main catches SIGINT and SIGTERM
// and stops them before exiting.
func Main(m *testing.M, s *Shared) {
	MainWith(m, s, Options{})
}

// MainWith is Main with a control plane started with opts, for example a
// whole Cluster.
func MainWith(m *testing.M, s *Shared, opts Options) {
	MainShared(m, map[*Shared]Options{s: opts})
}

// MainShared is Main with several shared control planes, each started with
// its options by the first test that needs it: tests side by side that
// must not slow each other (a living cluster's controllers behind a bulk
// load) each take their own.
func MainShared(m *testing.M, planes map[*Shared]Options) {
	for s, opts := range planes {
		s.opts = opts
	}
	stop := func() error {
		var errs []error
		for s := range planes {
			errs = append(errs, s.stop())
		}
		return errors.Join(errs...)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		got := <-sig
		fmt.Fprintf(os.Stderr, "testenv: %v: stopping the control plane\n", got)
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
		}
		os.Exit(130)
	}()

	code := m.Run()
	signal.Stop(sig)
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
