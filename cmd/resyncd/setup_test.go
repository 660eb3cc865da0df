package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// daemonRun is a `resyncd run` started by a test, with its health and
// metrics addresses, what it printed and what it logged.
type daemonRun struct {
	health, metrics string
	out, log        *testenv.SyncBuffer
}

// startDaemon writes a configuration of the clusters section clusters (a
// YAML list, indented by two spaces) and one resource, HttpServices in
// namespace, run every second, into dir, and runs `resyncd run` with it
// and args until the test ends.
func startDaemon(t *testing.T, dir, clusters, namespace string, args ...string) *daemonRun {
	t.Helper()
	d := &daemonRun{health: testenv.FreeAddr(t), metrics: testenv.FreeAddr(t), out: &testenv.SyncBuffer{}, log: &testenv.SyncBuffer{}}
	cfg := filepath.Join(dir, "config.yaml")
	body := `metrics: {address: "` + d.metrics + `"}
health: {address: "` + d.health + `"}
log: {level: info}
clusters:
` + clusters + `
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: 1s, namespaces: [` + namespace + `]}
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// The logger writes to the standard error it finds when it is built.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(d.log, r)
		close(copied)
	}()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- newRootCommand(d.out, d.out, append([]string{"run", "--config", cfg, "--request-timeout", "5s"}, args...)).ExecuteContext(ctx)
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("resyncd run: %v", err)
		}
		os.Stderr = stderr
		_ = w.Close()
		<-copied
		if t.Failed() {
			t.Logf("resyncd run:\n%s%s", d.out.String(), d.log.String())
		}
	})
	return d
}

// logged reports whether the daemon logged a line with the message msg
// in the cluster name.
func (d *daemonRun) logged(msg, cluster string) bool {
	return strings.Contains(d.log.String(), `"msg":"`+msg+`","cluster":"`+cluster+`"`)
}

// statusz is what /statusz says of the clusters.
type statusz struct {
	Clusters []struct {
		Name, Server, Error string
		Up                  bool
		Resources           []struct{ Error string }
	}
}

// cluster returns what /statusz says of the cluster name; the zero value
// while /statusz does not answer.
func (d *daemonRun) cluster(name string) (server string, up bool, errs string) {
	resp, err := http.Get("http://" + d.health + "/statusz")
	if err != nil {
		return "", false, ""
	}
	defer resp.Body.Close()
	var s statusz
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return "", false, ""
	}
	for _, c := range s.Clusters {
		if c.Name == name {
			errs = c.Error
			for _, r := range c.Resources {
				errs += "\n" + r.Error
			}
			return c.Server, c.Up, errs
		}
	}
	return "", false, ""
}

// metric reports whether /metrics has the sample line, for example
// `resyncd_cluster_up{cluster="east"} 1`.
func (d *daemonRun) metric(line string) bool {
	resp, err := http.Get("http://" + d.metrics + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(body), "\n"+line+"\n")
}

// createNamespaceWithParent creates namespace ns and an HttpService web
// in it.
func createNamespaceWithParent(t *testing.T, ns string) kubernetes.Interface {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.CreateParent(t, dynamic.NewForConfigOrDie(env(t).Config), ns, "web", map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	return cs
}

// hasDeployment reports whether the Deployment ns/web exists.
func hasDeployment(t *testing.T, cs kubernetes.Interface, ns string) bool {
	_, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	return err == nil
}

// TestClusterKubeconfigProblems: a cluster whose kubeconfig file is
// missing at start, and one whose file breaks while resyncd runs, are
// down with the reason (resyncd_cluster_up 0, /statusz, a log line); the
// daemon runs, and so do the other clusters. A file that loads again
// brings its cluster back.
func TestClusterKubeconfigProblems(t *testing.T) {
	const ns = "kubeconfig-problems"
	cs := createNamespaceWithParent(t, ns)
	dir := t.TempDir()
	east := filepath.Join(dir, "east.kubeconfig")
	if err := os.WriteFile(east, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, "  - {name: east, kubeconfig: east.kubeconfig}\n  - {name: west, kubeconfig: west.kubeconfig}", ns)

	fixture.Eventually(t, "east synced", time.Minute, func() bool {
		_, up, _ := d.cluster("east")
		return up && hasDeployment(t, cs, ns)
	})
	fixture.Eventually(t, "west down, with the reason", 30*time.Second, func() bool {
		_, up, errs := d.cluster("west")
		return !up && strings.Contains(errs, "west.kubeconfig: no such file or directory") && d.metric(`resyncd_cluster_up{cluster="west"} 0`)
	})
	if !d.logged("Cluster not ready", "west") {
		t.Error("no log line says why west is down")
	}

	broken := filepath.Join(dir, ".east.new")
	if err := os.WriteFile(broken, []byte("clusters: [this is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(broken, east); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "east down, with the reason", 30*time.Second, func() bool {
		_, up, errs := d.cluster("east")
		return !up && strings.Contains(errs, "east.kubeconfig") && d.metric(`resyncd_cluster_up{cluster="east"} 0`)
	})
	if !d.logged("Kubeconfig not loaded", "east") {
		t.Error("no log line says that east's file does not load")
	}

	if err := os.WriteFile(broken, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(broken, east); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "east up again", 30*time.Second, func() bool {
		_, up, _ := d.cluster("east")
		return up && d.metric(`resyncd_cluster_up{cluster="east"} 1`)
	})
}

// TestSameAPIServerRefused: two cluster entries that reach one API server,
// by the same address or by another (the same kube-system namespace),
// would write every child twice: the second is refused, naming both, and
// writes nothing; the first is synced.
func TestSameAPIServerRefused(t *testing.T) {
	kc, err := clientcmd.Load(env(t).Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	byName := kc.DeepCopy()
	for _, c := range byName.Clusters {
		c.Server = strings.Replace(c.Server, "127.0.0.1", "localhost", 1)
	}
	other, err := clientcmd.Write(*byName)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, ns string
		file     []byte
		want     string
	}{
		{"the same address", "same-address", env(t).Kubeconfig(), "cluster mirror reaches the API server of cluster home (same address https://127.0.0.1:"},
		{"another address", "same-uid", other, "cluster mirror reaches the API server of cluster home (same kube-system namespace, UID "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := createNamespaceWithParent(t, tt.ns)
			flags := files(t, tt.ns)
			mirror := filepath.Join(t.TempDir(), "mirror.kubeconfig")
			if err := os.WriteFile(mirror, tt.file, 0o600); err != nil {
				t.Fatal(err)
			}
			body, err := os.ReadFile(flags[3])
			if err != nil {
				t.Fatal(err)
			}
			body = append(body, []byte("clusters:\n  - name: home\n  - {name: mirror, kubeconfig: "+mirror+"}\n")...)
			if err := os.WriteFile(flags[3], body, 0o600); err != nil {
				t.Fatal(err)
			}
			out, code := resyncd(t, append([]string{"once"}, flags...)...)
			if code != 1 || !strings.Contains(out, tt.want) || !strings.Contains(out, "every child would be written twice") {
				t.Errorf("once with two entries for one server: exit %d, output:\n%s\nwant exit 1 and %q", code, out, tt.want)
			}
			if !strings.Contains(out, "\nhome     httpservices.v1alpha1.resyncd.io  1") || !hasDeployment(t, cs, tt.ns) {
				t.Errorf("home was not synced:\n%s", out)
			}
			if strings.Contains(out, "\nmirror ") {
				t.Errorf("mirror ran a pass:\n%s", out)
			}
		})
	}
}
