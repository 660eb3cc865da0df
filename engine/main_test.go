package engine

import (
	"testing"

	"github.com/resyncd/resyncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }
