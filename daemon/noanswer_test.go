package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestShutdownWithAClusterHung: a cluster whose server accepts and never
// answers, being made ready when SIGTERM comes, does not hold up the
// shutdown: run returns long before the request would time out.
func TestShutdownWithAClusterHung(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	hung := fixture.InsecureKubeconfig(t, srv.URL)
	flags := files(t, "default")
	body, err := os.ReadFile(flags[3])
	if err != nil {
		t.Fatal(err)
	}
	body = append(body, []byte("clusters:\n  - name: home\n  - {name: hung, kubeconfig: "+hung+"}\n")...)
	if err := os.WriteFile(flags[3], body, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, flags[3], flags[1], 5*time.Minute) }()
	fixture.Eventually(t, "a request to the hung server", 30*time.Second, func() bool { return hits.Load() > 0 })
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("run still running a minute after it was stopped: the hung cluster holds up the shutdown")
	}
}
