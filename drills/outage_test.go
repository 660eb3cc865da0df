package drills

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/testenv"
)

// outageShown says whether /readyz answers 503 because a pass failed
// (not because none has finished yet), and what it answered.
func outageShown(readyz string) (bool, string) {
	resp, err := http.Get(readyz)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	answer := fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "failed"), answer
}

// passLine says whether l is resyncd's line at the end of a pass.
func passLine(l string) bool {
	return strings.Contains(l, `"msg":"Pass finished"`) || strings.Contains(l, `"msg":"Pass failed"`)
}

// TestAPIServerOutage: kube-apiserver is killed in the middle of a pass
// over 500 parents and started again. resyncd keeps running, logs the
// outage in a bounded number of lines per pass, /readyz says so, and the
// next passes converge with no duplicate and no missing child. It has a
// control plane of its own: after this outage on the shared cluster, the
// next drill's Deployment did not become Available within a minute (the
// controllers' recovery is not resyncd's to test here).
func TestAPIServerOutage(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildResyncd(t)
	own, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := own.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	d := newDrillOn(t, own, "outage", func(*config.Config) {})
	for i := range 500 {
		d.createParent(fmt.Sprintf("app-%03d", i), map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, own.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	health := testenv.FreePort(t)
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf(`apply: {qps: 200, burst: 20, batchSize: 100, concurrency: 4}
metrics: {address: "127.0.0.1:0"}
health: {address: "127.0.0.1:%d"}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: 2s, namespaces: [outage]}
`, health)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startResyncd(t, bin, "run", "--config", cfg, "--kubeconfig", kc)
	p.await(t, `"msg":"Applied"`, 30*time.Second)

	p.mu.Lock()
	killedAt := len(p.log) // the log lines before the outage
	p.mu.Unlock()
	restarted := make(chan error, 1)
	go func() { restarted <- own.RestartAPIServer(4 * time.Second) }()
	// While it is down, resyncd says it is not ready.
	sawOutage := false
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", health)
	var answers []string // each new answer of /readyz, for a failure's message
	last := ""
	look := func() {
		shown, answer := outageShown(readyz)
		sawOutage = sawOutage || shown
		if answer != last {
			answers, last = append(answers, time.Now().Format("15:04:05.000")+" "+answer), answer
		}
	}
	for done := false; !done; {
		select {
		case err := <-restarted:
			if err != nil {
				t.Fatalf("restart kube-apiserver: %v", err)
			}
			done = true
		case <-time.After(200 * time.Millisecond):
			look()
		}
	}
	// The pass that met the outage ends after the restart, once it has
	// made the writes left: on a loaded machine that took more than 15 s.
	// /readyz reports it until the next pass ends, which may be under a
	// second later (the next pass begins at once when this one took longer
	// than the interval): look often, until then.
	passesSince := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		n := 0
		for _, l := range p.log[killedAt:] {
			if passLine(l) {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(2 * time.Minute); !sawOutage && passesSince() < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		look()
	}
	if !sawOutage {
		p.mu.Lock()
		var passes []string
		for _, l := range p.log {
			if passLine(l) || strings.Contains(l, `"level":"warn"`) { // the write errors are warnings
				passes = append(passes, l)
			}
		}
		p.mu.Unlock()
		t.Errorf("/readyz never said that a pass failed while the API server was down; it answered:\n%s\nresyncd's passes and warnings:\n%s",
			strings.Join(answers, "\n"), strings.Join(passes, "\n"))
	}

	// The next passes converge; the process never died.
	d.until("all 500 converged", time.Second, 60*time.Second, func() bool {
		l, err := d.dyn.Resource(httpServices).Namespace("outage").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, u := range l.Items {
			if conditionOf(&u, "Ready") == "" || conditionOf(&u, "Reconciling") == "True/WritesPending" {
				return false
			}
		}
		return true
	})
	select {
	case <-p.done:
		t.Fatalf("resyncd exited during the outage:\n%s", strings.Join(p.log, "\n"))
	default:
	}
	deps, err := d.cs.AppsV1().Deployments("outage").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := d.cs.CoreV1().Services("outage").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 500 || len(svcs.Items) != 500 {
		t.Errorf("%d Deployments and %d Services, want 500 each", len(deps.Items), len(svcs.Items))
	}
	for _, u := range deps.Items {
		if refs := u.OwnerReferences; len(refs) != 1 {
			t.Errorf("Deployment %s has %d owner references", u.Name, len(refs))
		}
	}

	// Bounded logging: per pass, at most 5 write errors and one pass line.
	p.mu.Lock()
	logLines := append([]string(nil), p.log...)
	p.mu.Unlock()
	perPass, worst := 0, 0
	for _, l := range logLines {
		switch {
		case strings.Contains(l, `"msg":"Write failed"`) || strings.Contains(l, `"msg":"Status write failed"`):
			perPass++
		case passLine(l):
			worst = max(worst, perPass)
			perPass = 0
		}
	}
	if worst > 5 {
		t.Errorf("a pass logged %d write errors; at most 5", worst)
	}
	failedPasses := strings.Count(strings.Join(logLines, "\n"), `"msg":"Pass failed"`)
	t.Logf("outage: %d failed passes, at most %d write-error lines in a pass, %d log lines in all", failedPasses, worst, len(logLines))
}
