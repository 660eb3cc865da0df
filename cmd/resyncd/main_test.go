package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// shared is the package's control plane, started by the first test that
// needs it.
var shared testenv.Shared

// env is the package's control plane; the test fails if it cannot start.
func env(t testing.TB) *testenv.Env { t.Helper(); return shared.Env(t) }

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

// resyncd runs the command line with args and returns its output and exit
// code, as main would pick it.
func resyncd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	err := newRootCommand(&out, &out, args).ExecuteContext(t.Context())
	if err == nil {
		return out.String(), 0
	}
	var ec *exitError
	if errors.As(err, &ec) {
		if !errors.Is(err, errSilent) {
			out.WriteString(err.Error())
		}
		return out.String(), ec.code
	}
	return out.String() + err.Error(), 1
}

// files writes a kubeconfig for the test API server and a configuration
// watching namespace, and returns the flags that use them.
func files(t *testing.T, namespace string) []string {
	t.Helper()
	return fixture.Files(t, env(t).Kubeconfig(), namespace)
}
