package serve

import (
	"testing"

	"github.com/resyncd/resyncd/internal/testenv"
)

// shared is the package's control plane, started by the first test that
// needs it.
var shared testenv.Shared

// env is the package's control plane; the test fails if it cannot start.
func env(t testing.TB) *testenv.Env { t.Helper(); return shared.Env(t) }

func TestMain(m *testing.M) { testenv.Main(m, &shared) }
