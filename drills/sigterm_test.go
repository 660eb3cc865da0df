package drills

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resyncd/resyncd/config"
)

// buildResyncd builds the resyncd binary for the drills that run it as a
// process.
func buildResyncd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "resyncd")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/resyncd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestSIGTERMDuringALargeBatch: SIGTERM while resyncd writes the children
// of 500 new parents. The batch in flight finishes, the process exits 0
// within 10 s, and the next pass repairs everything with no error.
func TestSIGTERMDuringALargeBatch(t *testing.T) {
	bin := buildResyncd(t)
	d := newDrillWith(t, "sigterm", func(c *config.Config) { c.Apply.QPS, c.Apply.Burst = 1000, 1000 })
	for i := range 500 {
		d.createParent(fmt.Sprintf("app-%03d", i), map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	body := `apply: {qps: 100, burst: 10, batchSize: 200, concurrency: 4}
metrics: {address: "127.0.0.1:0"}
health: {address: "127.0.0.1:0"}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: 10m, namespaces: [sigterm]}
`
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
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		log = append(log, l)
	}
	err = cmd.Wait()
	took := time.Since(sent)
	if err != nil {
		t.Errorf("resyncd exited with %v after SIGTERM", err)
	}
	if took > 10*time.Second {
		t.Errorf("resyncd took %s to exit after SIGTERM, want at most 10 s", took)
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
		t.Fatalf("all %d writes were made before SIGTERM took effect: the drill proved nothing", applied)
	}
	t.Logf("SIGTERM after the first write; %d child writes made, exit after %s", applied, took.Round(time.Millisecond))

	rep := d.pass()
	if rep.Failed != 0 || rep.Stalled != 0 || rep.Created != 1000-applied {
		t.Errorf("the next pass: created %d (want %d), failed %d, stalled %d", rep.Created, 1000-applied, rep.Failed, rep.Stalled)
	}
	if rep = d.pass(); rep.Created+rep.Updated+rep.Deleted != 0 || rep.InSync != 1000 {
		t.Errorf("the pass after: %d child writes, %d in sync; want 0, 1000", rep.Created+rep.Updated+rep.Deleted, rep.InSync)
	}
}
