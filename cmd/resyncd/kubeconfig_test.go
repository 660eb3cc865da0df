package main

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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/resyncd/resyncd/internal/fixture"
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
