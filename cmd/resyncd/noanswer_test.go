package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/resyncd/resyncd/internal/fixture"
)

// kubeconfigFor writes a kubeconfig for a server at url that skips TLS
// verification, and returns the flags that use it with a valid
// configuration.
func kubeconfigFor(t *testing.T, url string) []string {
	t.Helper()
	flags := files(t, "default")
	flags[1] = fixture.InsecureKubeconfig(t, url)
	return flags
}

// TestNoAnswer: against a server that completes TLS and never answers,
// once and diff give up after --request-timeout with exit code 2 and a
// message naming the server.
func TestNoAnswer(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	out, code := resyncd(t, append([]string{"once"}, kubeconfigFor(t, srv.URL)...)...)
	if code != 1 || !strings.Contains(out, "does not answer like a Kubernetes API server") || strings.Contains(out, "CustomResourceDefinition") {
		t.Errorf("resyncd once against a web server: exit %d, output %q", code, out)
	}
}
