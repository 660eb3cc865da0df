package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/resyncd/resyncd/internal/fixture"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// recordingProxy is an HTTPS server that passes every request on to the
// test API server and records the bearer tokens it received.
type recordingProxy struct {
	*httptest.Server
	mu     sync.Mutex
	tokens map[string]int
}

func newRecordingProxy(t *testing.T) *recordingProxy {
	t.Helper()
	target, err := url.Parse(env(t).Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(env(t).Config.CAData)
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		// A request cancelled as the passes restart is no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p := &recordingProxy{tokens: map[string]int{}}
	p.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// received returns how many requests came with token.
func (p *recordingProxy) received(token string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokens[token]
}

// TestKubeconfigFollowsServer: a cluster's kubeconfig file rotated to
// another server (with that server's token) is followed: the cluster's
// passes restart against the new server, /statusz names it, and the old
// server never receives the new token.
func TestKubeconfigFollowsServer(t *testing.T) {
	const ns = "follow-server"
	cs := fixture.NamespaceWithParent(t, env(t).Config, ns)
	oldToken := fixture.ServiceAccountToken(t, cs, ns, "old", "cluster-admin", "follow")
	newToken := fixture.ServiceAccountToken(t, cs, ns, "new", "cluster-admin", "follow")
	oldServer, newServer := newRecordingProxy(t), newRecordingProxy(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "east.kubeconfig")
	fixture.WriteKubeconfig(t, path, oldServer.URL, &clientcmdapi.AuthInfo{Token: oldToken})
	d := startDaemon(t, dir, "  - {name: east, kubeconfig: east.kubeconfig}", ns)
	fixture.Eventually(t, "east synced through the old server", time.Minute, func() bool {
		server, up, _ := d.Cluster("east")
		return up && server == oldServer.URL && fixture.HasDeployment(t, cs, ns)
	})

	fixture.WriteKubeconfig(t, path, newServer.URL, &clientcmdapi.AuthInfo{Token: newToken})
	// Waited for with no fatal end, so that what went where is checked in
	// any case.
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		server, up, _ := d.Cluster("east")
		return up && server == newServer.URL, nil
	})
	if err != nil {
		t.Errorf("east not reconnected to the new server: %v", err)
	}
	if n := oldServer.received(newToken); n > 0 {
		t.Errorf("the old server received the new token %d times", n)
	}
	if t.Failed() {
		return
	}
	if err := cs.AppsV1().Deployments(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "the Deployment repaired through the new server", time.Minute, func() bool { return fixture.HasDeployment(t, cs, ns) })
	if n := oldServer.received(newToken); n > 0 {
		t.Errorf("the old server received the new token %d times", n)
	}
	if newServer.received(newToken) == 0 {
		t.Error("the new server never received the new token")
	}
	if n := newServer.received(oldToken); n > 0 {
		t.Errorf("the new server received the old token %d times", n)
	}
	if !d.Logged("Kubeconfig names another server", "east") {
		t.Error("no log line says the file names another server")
	}
}
