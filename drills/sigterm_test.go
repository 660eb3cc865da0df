package drills

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/testenv"
)

// newParentWrites are the writes a new HttpService with no autoscaling
// gets, all in one job: its Deployment, its Service, its status.
var newParentWrites = []string{"deployments", "httpservices", "services"}

// halfWritten returns the parents of which user made some of the writes
// of a new parent but not all: what a batch cut short leaves.
func halfWritten(writes []write, user string) []string {
	made := map[string][]string{}
	for _, w := range writes {
		if w.User == user && !slices.Contains(made[w.Name], w.Resource) {
			made[w.Name] = append(made[w.Name], w.Resource)
		}
	}
	var half []string
	for name, resources := range made {
		slices.Sort(resources)
		if !slices.Equal(resources, newParentWrites) {
			half = append(half, fmt.Sprintf("%s %v", name, resources))
		}
	}
	slices.Sort(half)
	return half
}

// TestStopSignalDuringALargeBatch: SIGTERM, or SIGHUP, while resyncd writes
// the children of 500 new parents. The batch in flight finishes (the API
// server's audit log shows no parent with only some of its writes made),
// the process exits 0 within 10 s, and the next pass repairs everything
// with no error.
func TestStopSignalDuringALargeBatch(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildResyncd(t)
	for _, sig := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGHUP", syscall.SIGHUP}} {
		t.Run(sig.name, func(t *testing.T) {
			t.Parallel()
			stopDuringALargeBatch(t, bin, strings.ToLower(sig.name), sig.sig)
		})
	}
}

// stopDuringALargeBatch sends sig to resyncd while it writes the children
// of 500 new parents in namespace ns.
func stopDuringALargeBatch(t *testing.T, bin, ns string, sig syscall.Signal) {
	d := newBulkDrill(t, ns, func(c *config.Config) { c.Apply.QPS, c.Apply.Burst = 1000, 1000 })
	for i := range 500 {
		d.createParent(fmt.Sprintf("app-%03d", i), map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, bulkEnv(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf(`apply: {qps: 100, burst: 10, batchSize: 200, concurrency: 4}
metrics: {address: "127.0.0.1:0"}
health: {address: "127.0.0.1:0"}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: 10m, namespaces: [%s]}
`, ns)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "run", "--config", cfg, "--kubeconfig", kc)
	stdout, err := cmd.StderrPipe() // zap writes to stderr
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 10000)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	var log []string
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("resyncd exited before writing:\n%s", strings.Join(log, "\n"))
			}
			log = append(log, l)
			if strings.Contains(l, `"msg":"Applied"`) {
				break wait
			}
		case <-deadline:
			t.Fatalf("no write within 60 s:\n%s", strings.Join(log, "\n"))
		}
	}
	sent := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		log = append(log, l)
	}
	err = cmd.Wait()
	took := time.Since(sent)
	if err != nil {
		t.Errorf("resyncd exited with %v after %s", err, sig)
	}
	if took > 10*time.Second {
		t.Errorf("resyncd took %s to exit after %s, want at most 10 s", took, sig)
	}
	applied := 0
	for _, l := range log {
		if strings.Contains(l, `"msg":"Applied"`) {
			applied++
		}
	}
	if !strings.Contains(strings.Join(log, "\n"), `"msg":"Stopped"`) {
		t.Errorf("no Stopped line:\n%s", strings.Join(log[max(0, len(log)-5):], "\n"))
	}
	if applied >= 1000 {
		t.Fatalf("all %d writes were made before %s took effect: the drill proved nothing", applied, sig)
	}
	t.Logf("%s after the first write; %d child writes made, exit after %s", sig, applied, took.Round(time.Millisecond))
	// Only resyncd has written in the namespace so far.
	writes := bulkAuditedEvents(t, ns)
	if len(writes) == 0 {
		t.Fatal("no write in the audit log")
	}
	if half := halfWritten(writes, writes[0].User); len(half) != 0 {
		t.Errorf("%d parents left with only some of their writes made (of %v): the batch in flight did not finish: %v",
			len(half), newParentWrites, half[:min(5, len(half))])
	}

	rep := d.pass()
	if rep.Failed != 0 || rep.Stalled != 0 || rep.Created != 1000-applied {
		t.Errorf("the next pass: created %d (want %d), failed %d, stalled %d", rep.Created, 1000-applied, rep.Failed, rep.Stalled)
	}
	if rep = d.pass(); rep.Created+rep.Updated+rep.Deleted != 0 || rep.InSync != 1000 {
		t.Errorf("the pass after: %d child writes, %d in sync; want 0, 1000", rep.Created+rep.Updated+rep.Deleted, rep.InSync)
	}
}

// TestSIGTERMToTheLeaderDuringALargeBatch: two resyncd processes with
// leader election; SIGTERM to the leader while it writes a batch that
// takes seconds. The API server's audit log shows that the leader finished
// the batch (no parent with only some of its writes made by it), that the
// standby wrote only after the leader's last write was answered, and that
// the standby went on from there; the leader exits 0.
func TestSIGTERMToTheLeaderDuringALargeBatch(t *testing.T) {
	t.Parallel()
	const ns, parents = "handover", 200
	bin := testenv.BuildResyncd(t)
	d := newBulkDrill(t, ns, func(*config.Config) {})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	// 40 writes a second, batches of 240 writes (80 parents): a batch
	// takes about 6 s, against a retry period of 500 ms in which the
	// standby would take a Lease released early.
	body := fmt.Sprintf(`leaderElection: {enabled: true, namespace: %[1]s, leaseName: resyncd-drill, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 500ms}
apply: {qps: 40, burst: 5, batchSize: 240, concurrency: 4, maxWritesPerPass: 10000}
metrics: {address: "127.0.0.1:0"}
health: {address: "127.0.0.1:0"}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: 10m, namespaces: [%[1]s]}
`, ns)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	leader, standby := leaderAndStandby(t, bulkEnv(t), bin, cfg, dir, "resyncd-leader", "resyncd-standby")

	// The parents come once both run, and the leader's first pass has found
	// none: the pass SIGUSR1 starts now writes them all.
	leader.await(t, `"msg":"Pass finished"`, 20*time.Second)
	for i := range parents {
		d.createParent(fmt.Sprintf("app-%03d", i), map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	}
	if err := leader.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	leader.await(t, `"msg":"Applied"`, 30*time.Second)
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-leader.done
	if st := leader.cmd.ProcessState; !st.Success() {
		t.Errorf("the leader exited with %v after SIGTERM", st)
	}
	standby.await(t, `"msg":"Leading"`, 30*time.Second)
	standby.await(t, `"msg":"Pass finished"`, 60*time.Second)
	if err := standby.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-standby.done

	writes := bulkAuditedEvents(t, ns)
	var lw, sw []write
	for _, w := range writes {
		switch w.User {
		case "resyncd-leader":
			lw = append(lw, w)
		case "resyncd-standby":
			sw = append(sw, w)
		}
	}
	if len(lw) == 0 || len(sw) == 0 {
		t.Fatalf("writes by the leader %d, by the standby %d: both must have written", len(lw), len(sw))
	}
	if len(lw) >= len(newParentWrites)*parents {
		t.Fatalf("the leader made all %d writes before SIGTERM took effect: the drill proved nothing", len(lw))
	}
	lastLeader, firstStandby := lw[0].Completed, sw[0].Received
	for _, w := range lw {
		lastLeader = maxTime(lastLeader, w.Completed)
	}
	for _, w := range sw {
		firstStandby = minTime(firstStandby, w.Received)
	}
	if !firstStandby.After(lastLeader) {
		t.Errorf("the standby's first write came at %s, before the leader's last write was answered at %s: both wrote at once",
			firstStandby.Format(time.StampMicro), lastLeader.Format(time.StampMicro))
	}
	if half := halfWritten(writes, "resyncd-leader"); len(half) != 0 {
		t.Errorf("%d parents left by the leader with only some of their writes made (of %v): the batch in flight did not finish: %v",
			len(half), newParentWrites, half[:min(5, len(half))])
	}
	// Every write of every new parent made, by one or the other.
	made := map[string]int{}
	for _, w := range writes {
		made[w.Name+" "+w.Resource]++
	}
	if len(made) != len(newParentWrites)*parents {
		t.Errorf("%d of the %d writes of the new parents made", len(made), len(newParentWrites)*parents)
	}
	t.Logf("SIGTERM to the leader during a batch: it made %d writes, the standby %d; the standby's first write %s after the leader's last",
		len(lw), len(sw), firstStandby.Sub(lastLeader).Round(time.Millisecond))
}
