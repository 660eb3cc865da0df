package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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
	g := &globals{kubeconfig: path, requestTimeout: 10 * time.Second}
	cl, err := g.connect(zap.NewNop(), config.Cluster{Apply: cfg.Apply})
	if err != nil {
		t.Fatal(err)
	}
	get := func(c kubernetes.Interface) error {
		_, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err
	}
	// The authorizer learns of new bindings from its cache, a moment later.
	fixture.Eventually(t, "the first token allowed", 30*time.Second, func() bool { return get(cl.kube) == nil })

	// Revoked: the old identity may no longer read.
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, "rotate-old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	oldOnly := kubernetes.NewForConfigOrDie(&rest.Config{Host: env(t).Config.Host, BearerToken: old, TLSClientConfig: rest.TLSClientConfig{CAData: env(t).Config.CAData}})
	fixture.Eventually(t, "the old token refused", 30*time.Second, func() bool { return apierrors.IsForbidden(get(oldOnly)) })
	if err := get(cl.kube); !apierrors.IsForbidden(err) {
		t.Fatalf("with the revoked token: %v, want Forbidden", err)
	}

	write(next)
	fixture.Eventually(t, "the rotated token used", 10*time.Second, func() bool { return get(cl.kube) == nil })

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
	if err := get(cl.kube); err != nil {
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

// writeKubeconfig writes to path, by a rename as the kubelet swaps a
// mounted Secret, a kubeconfig for the server at url (TLS unverified) with
// the credentials user.
func writeKubeconfig(t *testing.T, path, url string, user *clientcmdapi.AuthInfo) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: url, InsecureSkipTLSVerify: true}
	kc.AuthInfos["u"] = user
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	if err := clientcmd.WriteToFile(*kc, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestKubeconfigFollowsServer: a cluster's kubeconfig file rotated to
// another server (with that server's token) is followed: the cluster's
// passes restart against the new server, /statusz names it, and the old
// server never receives the new token.
func TestKubeconfigFollowsServer(t *testing.T) {
	const ns = "follow-server"
	cs := createNamespaceWithParent(t, ns)
	oldToken := fixture.ServiceAccountToken(t, cs, ns, "old", "cluster-admin", "follow")
	newToken := fixture.ServiceAccountToken(t, cs, ns, "new", "cluster-admin", "follow")
	oldServer, newServer := newRecordingProxy(t), newRecordingProxy(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "east.kubeconfig")
	writeKubeconfig(t, path, oldServer.URL, &clientcmdapi.AuthInfo{Token: oldToken})
	d := startDaemon(t, dir, "  - {name: east, kubeconfig: east.kubeconfig}", ns)
	fixture.Eventually(t, "east synced through the old server", time.Minute, func() bool {
		server, up, _ := d.cluster("east")
		return up && server == oldServer.URL && hasDeployment(t, cs, ns)
	})

	writeKubeconfig(t, path, newServer.URL, &clientcmdapi.AuthInfo{Token: newToken})
	// Waited for with no fatal end, so that what went where is checked in
	// any case.
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		server, up, _ := d.cluster("east")
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
	fixture.Eventually(t, "the Deployment repaired through the new server", time.Minute, func() bool { return hasDeployment(t, cs, ns) })
	if n := oldServer.received(newToken); n > 0 {
		t.Errorf("the old server received the new token %d times", n)
	}
	if newServer.received(newToken) == 0 {
		t.Error("the new server never received the new token")
	}
	if n := newServer.received(oldToken); n > 0 {
		t.Errorf("the new server received the old token %d times", n)
	}
	if !d.logged("Kubeconfig names another server", "east") {
		t.Error("no log line says the file names another server")
	}
}

// execKubeconfig writes, in dir, a script that creates the file marker and
// prints an ExecCredential holding token, and a kubeconfig for the test API
// server whose user gets its credentials by running it.
func execKubeconfig(t *testing.T, dir, token string) (kubeconfig, marker string) {
	t.Helper()
	marker = filepath.Join(dir, "plugin-ran")
	script := filepath.Join(dir, "plugin.sh")
	body := "#!/bin/sh\ntouch " + marker + "\nprintf '%s' '" +
		`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"` + token + `"}}` + "'\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	kubeconfig = filepath.Join(dir, "exec.kubeconfig")
	kc, err := clientcmd.Load(env(t).Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	for name := range kc.AuthInfos {
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1", Command: script, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
	}
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, marker
}

// TestKubeconfigExecRefused: a cluster's kubeconfig whose user runs a
// command for its credentials is refused, and the command never runs:
// validate reports it, once fails that cluster, and a file rotated to one
// while resyncd runs makes the cluster down. With allowCredentialPlugins
// the command runs.
func TestKubeconfigExecRefused(t *testing.T) {
	const ns = "exec-plugin"
	cs := createNamespaceWithParent(t, ns)
	token := fixture.ServiceAccountToken(t, cs, ns, "plugin", "cluster-admin", "exec")
	dir := t.TempDir()
	kubeconfig, marker := execKubeconfig(t, dir, token)
	config := func(name, entry string) string {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		body := "log: {level: error}\nclusters:\n  - " + entry + "\nresources:\n" +
			"  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, namespaces: [" + ns + "]}\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ran := func() bool {
		_, err := os.Stat(marker)
		return err == nil
	}
	refused := config("refused", "{name: plugin, kubeconfig: "+kubeconfig+"}")
	for _, cmd := range []string{"validate", "once"} {
		out, code := resyncd(t, cmd, "--config", refused)
		if code != 1 || !strings.Contains(out, `gets its credentials by running the command "`+filepath.Join(dir, "plugin.sh")+`" (exec)`) ||
			!strings.Contains(out, "allowCredentialPlugins: true") {
			t.Errorf("resyncd %s with an exec plugin: exit %d, output:\n%s", cmd, code, out)
		}
		if ran() {
			t.Fatalf("resyncd %s ran the exec plugin", cmd)
		}
	}

	// Rotated to one while running.
	path := filepath.Join(dir, "east.kubeconfig")
	writeKubeconfig(t, path, env(t).Config.Host, &clientcmdapi.AuthInfo{Token: token})
	d := startDaemon(t, dir, "  - {name: east, kubeconfig: east.kubeconfig}", ns)
	fixture.Eventually(t, "east synced", time.Minute, func() bool {
		_, up, _ := d.cluster("east")
		return up && hasDeployment(t, cs, ns)
	})
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "east down, naming the plugin", 30*time.Second, func() bool {
		_, up, errs := d.cluster("east")
		return !up && strings.Contains(errs, "allowCredentialPlugins") && d.metric(`resyncd_cluster_up{cluster="east"} 0`)
	})
	if ran() {
		t.Fatal("the exec plugin of a file rotated in ran")
	}

	allowed := config("allowed", "{name: plugin, kubeconfig: "+kubeconfig+", allowCredentialPlugins: true}")
	if out, code := resyncd(t, "once", "--config", allowed); code != 0 || !ran() {
		t.Errorf("once with the plugin allowed: exit %d, plugin ran %v, output:\n%s", code, ran(), out)
	}
}
