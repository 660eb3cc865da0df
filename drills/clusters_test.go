package drills

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// clusterDrillInterval is every resource's interval in TestManyClusters.
const clusterDrillInterval = 3 * time.Second

// TestManyClusters: one resyncd keeps three clusters in sync (the shared
// control plane and two of their own, 200 parents each). One API server
// frozen with SIGSTOP (it holds its connections and answers nothing), then
// killed, holds up neither other cluster: their passes keep their
// schedule, drift there is repaired within an interval, the frozen cluster
// shows resyncd_cluster_up 0 and in /statusz, /readyz stays ready, log
// lines stay few, memory and goroutines flat; back, it converges within
// two intervals. Then one cluster's token is rotated in its kubeconfig
// file and the old one revoked: passes go on with no restart.
//
// RESYNCD_DRILL_FREEZE sets how long the API server stays frozen (default
// 20s); with a longer one (10m is 200 intervals) the same drill checks
// that nothing grows over hours of a cluster down.
func TestManyClusters(t *testing.T) {
	t.Parallel()
	freezeFor := 20 * time.Second
	if v := os.Getenv("RESYNCD_DRILL_FREEZE"); v != "" {
		var err error
		if freezeFor, err = time.ParseDuration(v); err != nil {
			t.Fatalf("RESYNCD_DRILL_FREEZE: %v", err)
		}
	}
	bin := testenv.BuildResyncd(t)
	east, west := startPlane(t), startPlane(t)
	const ns, parents = "fleet", 200
	planes := map[string]*testenv.Env{"home": bulkEnv(t), "east": east, "west": west}
	cs := map[string]kubernetes.Interface{}
	for name, e := range planes {
		d := newDrillOn(t, e, ns, func(*config.Config) {})
		for i := range parents {
			d.createParent(fmt.Sprintf("app-%03d", i), map[string]any{"image": "nginx:1.27", "port": int64(8080)})
		}
		cs[name] = d.cs
	}

	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	homeKC := write("home.kubeconfig", bulkEnv(t).Kubeconfig())
	write("east.kubeconfig", east.Kubeconfig())
	// west: a ServiceAccount's token, to be rotated.
	oldToken := fixture.ServiceAccountToken(t, cs["west"], "default", "resyncd-a", "cluster-admin", "drill")
	westKC := filepath.Join(dir, "west.kubeconfig")
	fixture.WriteTokenKubeconfig(t, west.Kubeconfig(), oldToken, westKC)

	metricsPort, healthPort := testenv.FreePort(t), testenv.FreePort(t)
	cfg := write("config.yaml", []byte(fmt.Sprintf(`apply: {qps: 500, burst: 500, batchSize: 100}
metrics: {address: "127.0.0.1:%d"}
health: {address: "127.0.0.1:%d"}
clusters:
  - name: home
  - {name: east, kubeconfig: east.kubeconfig}
  - {name: west, kubeconfig: west.kubeconfig}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: %s, namespaces: [%s]}
`, metricsPort, healthPort, clusterDrillInterval, ns)))
	p := startResyncd(t, bin, "run", "--config", cfg, "--kubeconfig", homeKC, "--request-timeout", "2s")
	base := fmt.Sprintf("http://127.0.0.1:%d", healthPort)
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)

	children := func(cluster string) int {
		l, err := cs[cluster].AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return -1
		}
		return len(l.Items)
	}
	for name := range planes {
		fixture.Eventually(t, name+" converged", 3*time.Minute, func() bool { return children(name) == parents })
	}
	t.Logf("all three clusters converged: %d Deployments each", parents)

	// recreated deletes five Deployments of cluster and returns how long
	// until the API server holds all five again.
	recreated := func(cluster string, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for i := range 5 {
			name := fmt.Sprintf("app-%03d", 10*i+7)
			if err := cs[cluster].AppsV1().Deployments(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("%s: delete %s: %v", cluster, name, err)
			}
		}
		fixture.Eventually(t, cluster+": 5 deleted Deployments re-created", within, func() bool { return children(cluster) == parents })
		return time.Since(start)
	}
	// repaired changes one Deployment's replicas, as another writer would,
	// and returns how long until the API server holds resyncd's value again.
	repaired := func(cluster string, i int) time.Duration {
		t.Helper()
		name := fmt.Sprintf("app-%03d", i%parents)
		start := time.Now()
		patch := []byte(`{"spec":{"replicas":7}}`)
		if _, err := cs[cluster].AppsV1().Deployments(ns).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "drill"}); err != nil {
			t.Fatalf("%s: scale %s: %v", cluster, name, err)
		}
		fixture.Eventually(t, cluster+": drift on "+name+" repaired", 2*clusterDrillInterval, func() bool {
			d, err := cs[cluster].AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
			return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == 1
		})
		return time.Since(start)
	}
	others := []string{"home", "west"}

	// Frozen.
	if err := east.SignalAPIServer(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozenAt := time.Now()
	fromLine := p.lines()
	fixture.Eventually(t, "east shown down", 4*clusterDrillInterval, func() bool {
		return metricOf(t, metricsURL, `resyncd_cluster_up{cluster="east"}`) == 0
	})

	// Memory and goroutines are sampled through the freeze: the highest of
	// its last third may not exceed the highest of its first third by more
	// than what a few requests in flight hold.
	type sample struct {
		rss        int64
		goroutines float64
	}
	var samples []sample
	worst := time.Duration(0)
	for i := 0; time.Since(frozenAt) < freezeFor; i++ {
		for _, c := range others {
			worst = max(worst, repaired(c, i))
		}
		samples = append(samples, sample{rssOf(t, p), metricOf(t, metricsURL, "go_goroutines")})
		time.Sleep(clusterDrillInterval / 2)
	}
	frozenLog := p.linesSince(fromLine)
	third := max(len(samples)/3, 1)
	var early, late sample
	for i, x := range samples {
		if i < third {
			early = sample{max(early.rss, x.rss), max(early.goroutines, x.goroutines)}
		}
		if i >= len(samples)-third {
			late = sample{max(late.rss, x.rss), max(late.goroutines, x.goroutines)}
		}
	}
	t.Logf("frozen %s: drift in home and west repaired within %s at worst; highest RSS %d MiB in the first third, %d in the last; goroutines %v, %v; %d log lines",
		time.Since(frozenAt).Round(time.Second), worst.Round(time.Millisecond), early.rss>>20, late.rss>>20, early.goroutines, late.goroutines, len(frozenLog))
	if worst > clusterDrillInterval+time.Second {
		t.Errorf("drift in a cluster that answers took %s to repair while east was frozen; interval %s", worst, clusterDrillInterval)
	}
	for _, c := range others {
		if gap := widestGap(t, frozenLog, c, frozenAt); gap > clusterDrillInterval+time.Second {
			var lines []string
			for _, l := range frozenLog {
				if strings.Contains(l, `"cluster":"`+c+`"`) && !strings.Contains(l, `"msg":"Applied"`) {
					lines = append(lines, l)
				}
			}
			t.Errorf("%s: %s between the starts of two passes while east was frozen; interval %s; its lines:\n%s", c, gap, clusterDrillInterval, strings.Join(lines, "\n"))
		}
		if up := metricOf(t, metricsURL, fmt.Sprintf(`resyncd_cluster_up{cluster=%q}`, c)); up != 1 {
			t.Errorf("resyncd_cluster_up{cluster=%s} = %v while it answers", c, up)
		}
	}
	if late.rss > early.rss+16<<20 {
		t.Errorf("RSS grew from %d to %d MiB while east was frozen", early.rss>>20, late.rss>>20)
	}
	if late.goroutines > early.goroutines+10 {
		t.Errorf("goroutines grew from %v to %v while east was frozen", early.goroutines, late.goroutines)
	}
	eastLines, eastFailed := 0, 0
	for _, l := range frozenLog {
		if strings.Contains(l, `"cluster":"east"`) {
			eastLines++
		}
		if strings.Contains(l, `"cluster":"east"`) && strings.Contains(l, `"msg":"Pass failed"`) {
			eastFailed++
		}
	}
	if eastLines > 2*eastFailed+2 {
		t.Errorf("%d log lines about east in %d failed passes; at most 2 a pass", eastLines, eastFailed)
	}
	st := statusOf(t, base+"/statusz")
	if st["east"].Up || st["east"].err == "" || !st["west"].Up || !st["home"].Up {
		t.Errorf("/statusz: %+v", st)
	}
	t.Logf("/statusz of east: %s", st["east"].err)
	if code := httpCode(base + "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz answered %d while only a remote cluster was down", code)
	}

	// Thawed: converges within two intervals.
	if err := east.SignalAPIServer(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("east thawed: 5 deleted Deployments re-created in %s", recreated("east", 2*clusterDrillInterval).Round(time.Millisecond))
	fixture.Eventually(t, "east shown up", 2*clusterDrillInterval, func() bool {
		return metricOf(t, metricsURL, `resyncd_cluster_up{cluster="east"}`) == 1
	})

	// Killed, and started again after a while.
	restarted := make(chan error, 1)
	go func() { restarted <- east.RestartAPIServer(3 * clusterDrillInterval) }()
	fixture.Eventually(t, "east shown down after the kill", 4*clusterDrillInterval, func() bool {
		return metricOf(t, metricsURL, `resyncd_cluster_up{cluster="east"}`) == 0
	})
	for i := 0; ; i++ {
		select {
		case err := <-restarted:
			if err != nil {
				t.Fatalf("restart east: %v", err)
			}
		default:
			for _, c := range others {
				if d := repaired(c, 100+i); d > clusterDrillInterval+time.Second {
					t.Errorf("%s: drift repaired in %s while east was killed", c, d)
				}
			}
			continue
		}
		break
	}
	t.Logf("east restarted: 5 deleted Deployments re-created in %s", recreated("east", 2*clusterDrillInterval).Round(time.Millisecond))

	// west's token rotated: the new one written, then the old one revoked.
	newToken := fixture.ServiceAccountToken(t, cs["west"], "default", "resyncd-b", "cluster-admin", "drill")
	fixture.WriteTokenKubeconfig(t, west.Kubeconfig(), newToken, westKC)
	if err := cs["west"].CoreV1().ServiceAccounts("default").Delete(t.Context(), "resyncd-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	old := kubernetes.NewForConfigOrDie(&rest.Config{Host: west.Config.Host, BearerToken: oldToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: west.Config.CAData}})
	fixture.Eventually(t, "the old token refused", 30*time.Second, func() bool {
		_, err := old.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
		return apierrors.IsUnauthorized(err)
	})
	rotated := p.lines()
	t.Logf("west's token rotated: 5 deleted Deployments re-created in %s", recreated("west", 2*clusterDrillInterval).Round(time.Millisecond))
	for _, l := range p.linesSince(rotated) {
		if strings.Contains(l, `"cluster":"west"`) && strings.Contains(l, `"msg":"Pass failed"`) {
			t.Errorf("a pass of west failed after the rotation: %s", l)
		}
	}
	select {
	case <-p.done:
		t.Fatal("resyncd exited")
	default:
	}
}

// startPlane starts a control plane of the test's own.
func startPlane(t *testing.T) *testenv.Env {
	t.Helper()
	e, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return e
}

// lines is how many log lines the process wrote so far.
func (p *process) lines() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.log)
}

// linesSince returns the log lines from the n-th on.
func (p *process) linesSince(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log[n:]...)
}

// widestGap is the longest time between the starts of two passes of
// cluster that log shows, of those that started at or after since (a
// start is a "Pass finished" line's time less its duration).
func widestGap(t *testing.T, log []string, cluster string, since time.Time) time.Duration {
	t.Helper()
	var starts []time.Time
	for _, l := range log {
		var line struct {
			Msg      string `json:"msg"`
			TS       string `json:"ts"`
			Cluster  string `json:"cluster"`
			Duration string `json:"duration"`
		}
		if json.Unmarshal([]byte(l), &line) != nil || line.Cluster != cluster || line.Msg != "Pass finished" {
			continue
		}
		ts, err := time.Parse("2006-01-02T15:04:05.000Z0700", line.TS)
		if err != nil {
			t.Fatalf("log time %q: %v", line.TS, err)
		}
		d, err := time.ParseDuration(line.Duration)
		if err != nil {
			t.Fatalf("log duration %q: %v", line.Duration, err)
		}
		// A pass that started before since (the tail of the convergence,
		// writing statuses as Deployments become ready) says nothing of
		// what happened after.
		if start := ts.Add(-d); !start.Before(since) {
			starts = append(starts, start)
		}
	}
	if len(starts) < 2 {
		t.Fatalf("%s: %d passes in the log", cluster, len(starts))
	}
	widest := time.Duration(0)
	for i := 1; i < len(starts); i++ {
		widest = max(widest, starts[i].Sub(starts[i-1]))
	}
	return widest
}

// metricOf scrapes url and returns the value of the series written
// exactly as series (name and labels), or -1 when there is none.
func metricOf(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	return -1
}

// rssOf is the resident memory of the process, from /proc.
func rssOf(t *testing.T, p *process) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// clusterState is what the drill reads of /statusz.
type clusterState struct {
	Up  bool
	err string
}

func statusOf(t *testing.T, url string) map[string]clusterState {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Clusters []struct {
			Name      string `json:"name"`
			Up        bool   `json:"up"`
			Error     string `json:"error"`
			Resources []struct {
				Error string `json:"error"`
			} `json:"resources"`
		} `json:"clusters"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	out := map[string]clusterState{}
	for _, c := range body.Clusters {
		why := c.Error
		for _, r := range c.Resources {
			why += r.Error
		}
		out[c.Name] = clusterState{Up: c.Up, err: why}
	}
	return out
}

func httpCode(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
