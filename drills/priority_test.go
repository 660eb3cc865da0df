package drills

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/testenv"
)

// TestResourcePriorityOrder: two watched resources of one cluster, both
// with writes waiting, under a budget that does not cover them: `resyncd
// once`, run until everything converged, creates every child of the
// resource with the higher priority (listed second) before any of the
// other's, as the API server's audit log records them; the first pass
// writes none of the lower priority's. (Status writes are left out of the
// order: a parent's status changes again as its Deployment rolls out.)
func TestResourcePriorityOrder(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildResyncd(t)
	const high, low, parents = "prio-high", "prio-low", 30
	for _, ns := range []string{low, high} {
		d := newDrillWith(t, ns, func(*config.Config) {})
		for i := range parents {
			d.createParent(fmt.Sprintf("app-%02d", i), map[string]any{"image": "nginx:1.27", "port": int64(8080)})
		}
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf(`apply: {qps: 500, burst: 500, concurrency: 1, maxWritesPerPass: 40}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, namespaces: [%s], priority: 0}
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, namespaces: [%s], priority: 10}
`, low, high)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	passes := 0
	for ; passes < 10; passes++ {
		out, err := exec.Command(bin, "once", "--config", cfg, "--kubeconfig", kc).CombinedOutput()
		if passes == 0 {
			lowWrites, highWrites := writesIn(t, low), writesIn(t, high)
			if len(lowWrites) != 0 || len(highWrites) == 0 {
				t.Fatalf("first pass: %d writes in %s, %d in %s; want none of the lower priority's\n%s", len(lowWrites), low, len(highWrites), high, out)
			}
		}
		if err == nil {
			break
		}
	}
	lowWrites, highWrites := writesIn(t, low), writesIn(t, high)
	t.Logf("converged in %d passes of `once`: %d writes in %s, then %d in %s", passes+1, len(highWrites), high, len(lowWrites), low)
	if len(lowWrites) != 2*parents || len(highWrites) != 2*parents {
		t.Fatalf("%d and %d child writes; want a Deployment and a Service of each of %d parents in each namespace", len(highWrites), len(lowWrites), parents)
	}
	if last, first := slices.MaxFunc(highWrites, time.Time.Compare), slices.MinFunc(lowWrites, time.Time.Compare); !last.Before(first) {
		t.Errorf("a write of the lower priority (%s) came before the last of the higher (%s)", first.Format(time.StampMicro), last.Format(time.StampMicro))
	}
	deps, err := kubernetes.NewForConfigOrDie(env(t).Config).AppsV1().Deployments(low).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(deps.Items) != parents {
		t.Errorf("%s holds %d Deployments (%v), want %d", low, len(deps.Items), err, parents)
	}
}

// writesIn returns the times of every write of a child (Deployment,
// Service) the audit log records in namespace.
func writesIn(t *testing.T, namespace string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, times := range auditedWrites(t, namespace, "deployments", "services") {
		out = append(out, times...)
	}
	return out
}
