package shard

import (
	"testing"

	"github.com/resyncd/resyncd/internal/testenv"
)

// shared is the package's control plane, started by the first test that
// needs it: the ring's tests, which hold Leases.
var shared testenv.Shared

func env(t testing.TB) *testenv.Env { t.Helper(); return shared.Env(t) }

func TestMain(m *testing.M) { testenv.Main(m, &shared) }
