package drills

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func kstatus(t *testing.T, u *unstructured.Unstructured) status.Status {
	t.Helper()
	res, err := status.Compute(u)
	if err != nil {
		t.Fatalf("kstatus: %v", err)
	}
	return res.Status
}

// TestRolloutAndReadiness: an HttpService is InProgress for kstatus while
// its Deployment rolls out, then Ready=True and Current, and
// `kubectl wait --for=condition=Ready` returns; a new image goes round again.
func TestRolloutAndReadiness(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl, a prerequisite (README), is not on PATH: %v", err)
	}
	d := newDrill(t, "rollout")
	d.createParent("web", map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(3)})

	d.pass()
	if s := kstatus(t, d.parent("web")); s != status.InProgressStatus {
		t.Errorf("right after the Deployment was created: kstatus %s (Ready %s), want InProgress", s, conditionOf(d.parent("web"), "Ready"))
	}

	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	wait := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", kc, "wait", "--for=condition=Ready", "hsvc/web", "-n", "rollout", "--timeout=60s")
	out := make(chan error, 1)
	var output []byte
	go func() {
		var err error
		output, err = wait.CombinedOutput()
		out <- err
	}()

	d.until("Ready=True", 500*time.Millisecond, 60*time.Second, func() bool { return conditionOf(d.parent("web"), "Ready") == "True/Available" })
	if s := kstatus(t, d.parent("web")); s != status.CurrentStatus {
		t.Errorf("Ready: kstatus %s, want Current", s)
	}
	select {
	case err := <-out:
		if err != nil {
			t.Errorf("kubectl wait: %v: %s", err, output)
		}
	case <-time.After(30 * time.Second):
		t.Error("kubectl wait did not return once Ready was True")
	}

	p := d.parent("web")
	if err := unstructured.SetNestedField(p.Object, "nginx:1.28", "spec", "image"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.dyn.Resource(httpServices).Namespace("rollout").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d.pass()
	if s := kstatus(t, d.parent("web")); s != status.InProgressStatus {
		t.Errorf("after an image change: kstatus %s (Reconciling %s), want InProgress", s, conditionOf(d.parent("web"), "Reconciling"))
	}
	d.until("the new image Ready", 500*time.Millisecond, 60*time.Second, func() bool {
		return kstatus(t, d.parent("web")) == status.CurrentStatus
	})
	if w := d.warnings(); len(w) > 0 {
		t.Errorf("warnings: %v", w)
	}
}
