package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestClusterKubeconfigProblems: a cluster whose kubeconfig file is
// missing at start, and one whose file breaks while resyncd runs, are
// down with the reason (resyncd_cluster_up 0, /statusz, a log line); the
// daemon runs, and so do the other clusters. A file that loads again
// brings its cluster back.
func TestClusterKubeconfigProblems(t *testing.T) {
	const ns = "kubeconfig-problems"
	cs := fixture.NamespaceWithParent(t, env(t).Config, ns)
	dir := t.TempDir()
	east := filepath.Join(dir, "east.kubeconfig")
	if err := os.WriteFile(east, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, "  - {name: east, kubeconfig: east.kubeconfig}\n  - {name: west, kubeconfig: west.kubeconfig}", ns)

	fixture.Eventually(t, "east synced", time.Minute, func() bool {
		_, up, _ := d.Cluster("east")
		return up && fixture.HasDeployment(t, cs, ns)
	})
	fixture.Eventually(t, "west down, with the reason", 30*time.Second, func() bool {
		_, up, errs := d.Cluster("west")
		return !up && strings.Contains(errs, "west.kubeconfig: no such file or directory") && d.Metric(`resyncd_cluster_up{cluster="west"} 0`)
	})
	if !d.Logged("Cluster not ready", "west") {
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
		_, up, errs := d.Cluster("east")
		return !up && strings.Contains(errs, "east.kubeconfig") && d.Metric(`resyncd_cluster_up{cluster="east"} 0`)
	})
	if !d.Logged("Kubeconfig not loaded", "east") {
		t.Error("no log line says that east's file does not load")
	}

	if err := os.WriteFile(broken, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(broken, east); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "east up again", 30*time.Second, func() bool {
		_, up, _ := d.Cluster("east")
		return up && d.Metric(`resyncd_cluster_up{cluster="east"} 1`)
	})
}
