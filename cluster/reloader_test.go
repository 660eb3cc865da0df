package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/fixture"
)

// TestKubeconfigRotation: the clients re-read their kubeconfig when it
// changes. Credentials revoked on the server fail requests (no crash); a
// new token written to the file, swapped in by a rename as a mounted
// Secret is, is used from then on, with the same clients.
func TestKubeconfigRotation(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	const ns = "rotate"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "rotate-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(name string) string {
		t.Helper()
		return fixture.ServiceAccountToken(t, cs, ns, name, reader.Name, "rotate")
	}
	old, next := token("old"), token("next")

	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	write := func(tok string) {
		t.Helper()
		fixture.WriteTokenKubeconfig(t, env(t).Kubeconfig(), tok, path)
	}
	write(old)
	cfg := config.Default()
	cl, err := Dialer{Kubeconfig: path, RequestTimeout: 10 * time.Second}.Clients(zap.NewNop(), config.Cluster{Apply: cfg.Apply})
	if err != nil {
		t.Fatal(err)
	}
	get := func(c kubernetes.Interface) error {
		_, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err
	}
	// The authorizer learns of new bindings from its cache, a moment later.
	fixture.Eventually(t, "the first token allowed", 30*time.Second, func() bool { return get(cl.Kube) == nil })

	// Revoked: the old identity may no longer read.
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, "rotate-old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	oldOnly := kubernetes.NewForConfigOrDie(&rest.Config{Host: env(t).Config.Host, BearerToken: old, TLSClientConfig: rest.TLSClientConfig{CAData: env(t).Config.CAData}})
	fixture.Eventually(t, "the old token refused", 30*time.Second, func() bool { return apierrors.IsForbidden(get(oldOnly)) })
	if err := get(cl.Kube); !apierrors.IsForbidden(err) {
		t.Fatalf("with the revoked token: %v, want Forbidden", err)
	}

	write(next)
	fixture.Eventually(t, "the rotated token used", 10*time.Second, func() bool { return get(cl.Kube) == nil })

	// Rotated again as a token is renewed: the one in use is gone (401
	// once the server forgets it) when the file gets the new one. The very
	// next request succeeds, with no failed request first.
	third := token("third")
	thirdOnly := kubernetes.NewForConfigOrDie(&rest.Config{Host: env(t).Config.Host, BearerToken: third, TLSClientConfig: rest.TLSClientConfig{CAData: env(t).Config.CAData}})
	fixture.Eventually(t, "the third token allowed", 30*time.Second, func() bool { return get(thirdOnly) == nil })
	if err := cs.CoreV1().ServiceAccounts(ns).Delete(ctx, "next", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nextOnly := kubernetes.NewForConfigOrDie(&rest.Config{Host: env(t).Config.Host, BearerToken: next, TLSClientConfig: rest.TLSClientConfig{CAData: env(t).Config.CAData}})
	fixture.Eventually(t, "the second token unknown", 30*time.Second, func() bool { return apierrors.IsUnauthorized(get(nextOnly)) })
	write(third)
	if err := get(cl.Kube); err != nil {
		t.Errorf("the first request after the rotation: %v, want it sent again with the new token", err)
	}
}

// fakeTransport answers every request with its name, and counts the calls
// to close its idle connections.
type fakeTransport struct {
	name   string
	closed atomic.Int32
}

func (f *fakeTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"X-Transport": {f.name}}, Body: http.NoBody}, nil
}

func (f *fakeTransport) CloseIdleConnections() { f.closed.Add(1) }

// fakeReloader is a reloader of the file path whose content is the server
// and the token, one a line; each transport it builds is a fakeTransport
// named after the token, kept in built. While loads is not nil, each load
// of a file whose token is "slow" sends on it and waits for release.
type fakeReloader struct {
	*reloader
	path    string
	mu      sync.Mutex
	built   map[string]*fakeTransport
	loads   chan struct{}
	release chan struct{}
	clock   atomic.Int64
}

func newFakeReloader(t *testing.T, log *zap.Logger, server, token string) *fakeReloader {
	t.Helper()
	f := &fakeReloader{path: filepath.Join(t.TempDir(), "kubeconfig"), built: map[string]*fakeTransport{}, release: make(chan struct{})}
	f.write(t, server, token)
	f.clock.Store(time.Now().UnixNano())
	f.reloader = &reloader{files: []string{f.path}, follow: true, log: log,
		now: func() time.Time { return time.Unix(0, f.clock.Load()) },
		load: func() (*rest.Config, error) {
			data, err := os.ReadFile(f.path)
			if err != nil {
				return nil, err
			}
			host, token, ok := strings.Cut(strings.TrimSpace(string(data)), "\n")
			if !ok {
				return nil, fmt.Errorf("%s: not a server and a token", f.path)
			}
			if token == "slow" && f.loads != nil {
				f.loads <- struct{}{}
				<-f.release
			}
			return &rest.Config{Host: host, BearerToken: token}, nil
		},
		build: func(rc *rest.Config) (http.RoundTripper, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			ft := &fakeTransport{name: rc.BearerToken}
			f.built[rc.BearerToken] = ft
			return ft, nil
		},
	}
	if _, err := f.start(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeReloader) write(t *testing.T, server, token string) {
	t.Helper()
	tmp := f.path + ".new"
	if err := os.WriteFile(tmp, []byte(server+"\n"+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeReloader) transport(token string) *fakeTransport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.built[token]
}

// get makes a request through the reloader and returns the name of the
// transport that answered it, or the error.
func (f *fakeReloader) get() (string, error) {
	req, _ := http.NewRequest(http.MethodGet, f.server+"/version", nil)
	resp, err := f.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	return resp.Header.Get("X-Transport"), nil
}

// TestReloaderOffTheRequestPath: requests do not wait while the files are
// read and a transport built, and one look at a time runs; the transport
// replaced has its idle connections closed.
func TestReloaderOffTheRequestPath(t *testing.T) {
	f := newFakeReloader(t, zap.NewNop(), "https://east.example", "old")
	f.loads = make(chan struct{}, 1)
	f.write(t, "https://east.example", "slow")
	f.clock.Add(int64(2 * reloadEvery))

	answered := make(chan string, 3)
	go func() {
		for range 3 {
			name, err := f.get()
			if err != nil {
				name = err.Error()
			}
			answered <- name
		}
	}()
	<-f.loads // the look is loading, and stays there until released
	for range 3 {
		select {
		case name := <-answered:
			if name != "old" {
				t.Errorf("while the files load, a request went through %q, want the old transport", name)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a request waits for the kubeconfig files to load")
		}
	}
	f.clock.Add(int64(2 * reloadEvery))
	if name, err := f.get(); err != nil || name != "old" {
		t.Errorf("with a look running: %q, %v; want the old transport and no second look", name, err)
	}
	close(f.release)
	fixture.Eventually(t, "the new transport used", 30*time.Second, func() bool {
		name, err := f.get()
		return err == nil && name == "slow"
	})
	if len(f.loads) > 0 {
		t.Error("a second look started while one was running")
	}
	if n := f.transport("old").closed.Load(); n != 1 {
		t.Errorf("the replaced transport's idle connections were closed %d times, want 1", n)
	}
}

// TestReloaderKeepsItsServer: a file rotated to another server fails every
// request, with no transport built for the new credentials, and closes
// moved; rotated back, the credentials are used again.
func TestReloaderKeepsItsServer(t *testing.T) {
	f := newFakeReloader(t, zap.NewNop(), "https://east.example", "east-token")
	f.write(t, "https://west.example", "west-token")
	f.look()
	_, err := f.get()
	var moved *serverMovedError
	if !errors.As(err, &moved) || moved.from != "https://east.example" || moved.to != "https://west.example" {
		t.Fatalf("after the file named another server: %v, want a serverMovedError from east to west", err)
	}
	if f.transport("west-token") != nil {
		t.Error("a transport was built with the new server's credentials for the old server")
	}
	select {
	case <-f.moved:
	default:
		t.Error("moved is not closed")
	}
	f.write(t, "https://east.example", "east-token-2")
	f.look()
	if name, err := f.get(); err != nil || name != "east-token-2" {
		t.Errorf("back on its server: %q, %v", name, err)
	}
}

// TestReloaderBrokenFile: a file deleted or broken while running fails
// every request with the reason, logged once, until it loads again.
func TestReloaderBrokenFile(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	f := newFakeReloader(t, zap.New(core), "https://east.example", "token")
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f.look()
		if _, err := f.get(); err == nil || !strings.Contains(err.Error(), f.path) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("with the file deleted: %v, want an error naming the file", err)
		}
	}
	if err := os.WriteFile(f.path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.look()
	if _, err := f.get(); err == nil || !strings.Contains(err.Error(), "not a server and a token") {
		t.Errorf("with the file broken: %v", err)
	}
	if n := logs.FilterMessage("Kubeconfig not loaded").Len(); n != 2 {
		t.Errorf("%d lines Kubeconfig not loaded, want 2 (deleted, broken): %v", n, logs.All())
	}
	f.write(t, "https://east.example", "token-2")
	f.look()
	if name, err := f.get(); err != nil || name != "token-2" {
		t.Errorf("with the file back: %q, %v", name, err)
	}
	if logs.FilterMessage("Kubeconfig loaded again").Len() != 1 {
		t.Errorf("no line says the file loads again: %v", logs.All())
	}
}
