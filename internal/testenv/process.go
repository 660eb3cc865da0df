package testenv

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// BinaryEnv names a resyncd binary built already: make test builds
// bin/resyncd once and hands it to every package's tests.
const BinaryEnv = "RESYNCD_TEST_BINARY"

// built is the binary BuildResyncd built for this test process.
var built struct {
	once sync.Once
	path string
	err  error
}

// BuildResyncd returns the resyncd binary for a test that runs it as a
// process: $RESYNCD_TEST_BINARY if set, or else one built in its own
// module at the repository's root as `make build` does, once a test
// process, into .run/test/ of the checkout (a private name, then a
// rename, so that test processes building at once never run a half
// written file).
func BuildResyncd(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v", BinaryEnv, err)
		}
		return p
	}
	built.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			built.err = err
			return
		}
		dir := filepath.Join(root, ".run", "test")
		if built.err = os.MkdirAll(dir, 0o755); built.err != nil {
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf("resyncd.%d.tmp", os.Getpid()))
		build := exec.Command("go", "build", "-o", tmp, "./cmd/resyncd")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		built.path = filepath.Join(dir, "resyncd")
		built.err = os.Rename(tmp, built.path)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// FreePort returns a loopback port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// FreeAddr is FreePort as a host:port address.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// SyncBuffer is a bytes.Buffer safe for a writer and a reader at once: a
// process's output read while it runs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
