package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// kubeconfigFor writes a kubeconfig for a server at url that skips TLS
// verification, and returns the flags that use it with a valid
// configuration.
func kubeconfigFor(t *testing.T, url string) []string {
	t.Helper()
	flags := files(t, "default")
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	body := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + url + `", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	flags[1] = kc
	return flags
}

// TestNoAnswer: against a server that completes TLS and never answers,
// once and diff give up after --request-timeout with exit code 2 and a
// message naming the server.
func TestNoAnswer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	flags := append(kubeconfigFor(t, srv.URL), "--request-timeout", "1s")
	for _, cmd := range []string{"once", "diff"} {
		out, code := resyncd(t, append([]string{cmd}, flags...)...)
		if code != 2 || !strings.Contains(out, srv.URL) || !strings.Contains(out, "did not answer within 1s") {
			t.Errorf("resyncd %s against a hung server: exit %d, output %q; want 2 naming %s", cmd, code, out, srv.URL)
		}
	}
}

// TestNotAnAPIServer: a server that answers 404 to everything is said to
// be no Kubernetes API server, not an API server without the CRD.
func TestNotAnAPIServer(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	out, code := resyncd(t, append([]string{"once"}, kubeconfigFor(t, srv.URL)...)...)
	if code != 1 || !strings.Contains(out, "does not answer like a Kubernetes API server") || strings.Contains(out, "CustomResourceDefinition") {
		t.Errorf("resyncd once against a web server: exit %d, output %q", code, out)
	}
}

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
	hung := kubeconfigFor(t, srv.URL)
	flags := files(t, "default")
	body, err := os.ReadFile(flags[3])
	if err != nil {
		t.Fatal(err)
	}
	body = append(body, []byte("clusters:\n  - name: home\n  - {name: hung, kubeconfig: "+hung[1]+"}\n")...)
	if err := os.WriteFile(flags[3], body, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		var out testenv.SyncBuffer
		done <- newRootCommand(&out, &out, append([]string{"run", "--request-timeout", "5m"}, flags...)).ExecuteContext(ctx)
	}()
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
