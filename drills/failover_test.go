package drills

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/resyncd/resyncd/internal/testenv"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// process is a resyncd process whose log lines are kept.
type process struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  []string
	done chan struct{}
}

func startResyncd(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			p.mu.Lock()
			p.log = append(p.log, s.Text())
			p.mu.Unlock()
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// await waits until a log line contains s and returns when it was seen.
func (p *process) await(t *testing.T, s string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for _, l := range p.log {
			if strings.Contains(l, s) {
				p.mu.Unlock()
				return time.Now()
			}
		}
		p.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("no log line with %q within %s:\n%s", s, timeout, strings.Join(p.log, "\n"))
	return time.Time{}
}

// write is one successful write the API server recorded in its audit log.
type write struct {
	// User is who made it.
	User string
	// Resource is what it wrote ("httpservices" for a status write) and
	// Namespace and Name the object's.
	Resource, Namespace, Name string
	// Received and Completed are when the API server received the request
	// and when it had answered it.
	Received, Completed time.Time
}

// auditedEvents returns the successful writes the API server recorded in
// namespace, in the order it recorded their answers.
func auditedEvents(t *testing.T, namespace string) []write {
	t.Helper()
	return auditedEventsIn(t, auditLog, func(ns string) bool { return ns == namespace })
}

// bulkAuditedEvents is auditedEvents on the bulk control plane.
func bulkAuditedEvents(t *testing.T, namespace string) []write {
	t.Helper()
	return auditedEventsIn(t, bulkAuditLog, func(ns string) bool { return ns == namespace })
}

// auditedEventsIn returns the successful writes of the audit log at path
// in the namespaces keep keeps, in the order it recorded their answers.
func auditedEventsIn(t *testing.T, path string, keep func(namespace string) bool) []write {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []write
	dec := json.NewDecoder(f)
	for {
		var ev struct {
			Stage     string                    `json:"stage"`
			User      struct{ Username string } `json:"user"`
			ObjectRef struct {
				Namespace string `json:"namespace"`
				Resource  string `json:"resource"`
				Name      string `json:"name"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			Received  metav1.MicroTime `json:"requestReceivedTimestamp"`
			Completed metav1.MicroTime `json:"stageTimestamp"`
		}
		if err := dec.Decode(&ev); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if ev.Stage == "ResponseComplete" && keep(ev.ObjectRef.Namespace) && ev.ResponseStatus.Code < 300 {
			out = append(out, write{User: ev.User.Username, Resource: ev.ObjectRef.Resource, Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name,
				Received: ev.Received.Time, Completed: ev.Completed.Time})
		}
	}
}

// auditedWrites returns, per user, the times the API server received the
// successful writes it recorded in namespace, of the given resources (none:
// all it records).
func auditedWrites(t *testing.T, namespace string, resources ...string) map[string][]time.Time {
	t.Helper()
	out := map[string][]time.Time{}
	for _, w := range auditedEvents(t, namespace) {
		if len(resources) == 0 || slices.Contains(resources, w.Resource) {
			out[w.User] = append(out[w.User], w.Received)
		}
	}
	return out
}

// TestLeaderFailover: two resyncd processes with leader election; kill -9
// the leader; the other leads within the lease duration plus one pass, and
// the API server's audit log shows that the two never wrote at the same
// time.
func TestLeaderFailover(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildResyncd(t)
	d := newDrill(t, "failover")
	for i := range 4 {
		d.createParent(fmt.Sprintf("app-%d", i), map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2)})
	}
	d.pass()

	// Another writer keeps changing replicas: the leader has work every pass.
	ctx, stopRogue := context.WithCancel(t.Context())
	defer stopRogue()
	go func() {
		force := true
		patch := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":5}}`)
		_ = wait.PollUntilContextCancel(ctx, 300*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			for i := range 4 {
				_, _ = d.cs.AppsV1().Deployments("failover").Patch(ctx, fmt.Sprintf("app-%d", i), types.ApplyPatchType, patch,
					metav1.PatchOptions{FieldManager: "rogue", Force: &force})
			}
			return false, nil
		})
	}()

	const leaseDuration, interval = 4 * time.Second, time.Second
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf(`leaderElection: {enabled: true, namespace: failover, leaseName: resyncd-drill, leaseDuration: %s, renewDeadline: 3s, retryPeriod: 500ms}
metrics: {address: "127.0.0.1:0"}
health: {address: "127.0.0.1:0"}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: %s, namespaces: [failover]}
`, leaseDuration, interval)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	a, b := leaderAndStandby(t, env(t), bin, cfg, dir, "resyncd-a", "resyncd-b")
	// The leader repairs the other writer's changes: the server holds its
	// writes before it is killed.
	wroteAudited(t, "failover", "resyncd-a", 20*time.Second)

	killed := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	led := b.await(t, `"msg":"Leading"`, 2*leaseDuration+5*time.Second)
	wroteAudited(t, "failover", "resyncd-b", 20*time.Second)
	stopRogue()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-b.done

	writes := auditedWrites(t, "failover")
	aw, bw := writes["resyncd-a"], writes["resyncd-b"]
	if len(aw) == 0 || len(bw) == 0 {
		t.Fatalf("writes by the first leader %d, by the second %d: both must have written", len(aw), len(bw))
	}
	lastA, firstB := aw[len(aw)-1], bw[0]
	for _, w := range aw {
		lastA = maxTime(lastA, w)
	}
	for _, w := range bw {
		firstB = minTime(firstB, w)
	}
	if !firstB.After(lastA) {
		t.Errorf("the second leader wrote at %s, before the first leader's last write at %s: both wrote at once", firstB, lastA)
	}
	// The lease runs out at most leaseDuration after the kill; the follower
	// notices at its next try (retryPeriod with client-go's jitter of 1.2:
	// at most 1.1 s); its first pass writes within one interval; the rest is
	// for the requests themselves on a busy 2-core machine.
	if bound := leaseDuration + 1100*time.Millisecond + interval + 900*time.Millisecond; firstB.Sub(killed) > bound {
		t.Errorf("the second leader's first write came %s after the kill, more than %s: the lease (%s), a retry, one pass (%s)",
			firstB.Sub(killed), bound, leaseDuration, interval)
	}
	t.Logf("kill -9 of the leader; the follower led after %s and wrote after %s; %d and %d writes",
		led.Sub(killed).Round(time.Millisecond), firstB.Sub(killed).Round(time.Millisecond), len(aw), len(bw))
}

// wroteAudited waits until the audit log holds a write by user in
// namespace, polling it (a read of the whole log) twice a second.
func wroteAudited(t *testing.T, namespace, user string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return len(auditedWrites(t, namespace)[user]) > 0, nil
	})
	if err != nil {
		t.Fatalf("no write by %s in %s in the audit log within %s: %v", user, namespace, timeout, err)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// leaderAndStandby starts `resyncd run` with cfg as user leader, waits
// until it leads, then as user standby, and waits until that follows; each
// user's kubeconfig is written in dir, so that the audit log tells their
// requests apart.
func leaderAndStandby(t *testing.T, cp *testenv.Env, bin, cfg, dir, leader, standby string) (*process, *process) {
	t.Helper()
	var procs []*process
	for _, user := range []string{leader, standby} {
		kc, err := cp.AddUserKubeconfig(user, "system:masters")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, user+".kubeconfig")
		if err := os.WriteFile(path, kc, 0o600); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, startResyncd(t, bin, "run", "--config", cfg, "--kubeconfig", path))
		if user == leader {
			procs[0].await(t, `"msg":"Leading"`, 20*time.Second)
		}
	}
	procs[1].await(t, `"msg":"Following"`, 20*time.Second)
	return procs[0], procs[1]
}
