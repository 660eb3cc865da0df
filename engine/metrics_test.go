package engine

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMetrics: the registry lints clean and counts what the test did.
func TestMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("metrics"))
	h.namespace("metrics")
	for _, name := range []string{"a", "b", "c"} {
		h.createParent("metrics", name, map[string]any{"image": "nginx", "port": int64(80)})
	}
	h.sync()
	if err := h.dyn.Resource(httpServices).Namespace("metrics").Delete(t.Context(), "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync()

	problems, err := testutil.GatherAndLint(h.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	const res = `resource="httpservices.v1alpha1.resyncd.io"`
	want := `
# HELP resyncd_apply_total Writes to the API server, by operation and result.
# TYPE resyncd_apply_total counter
resyncd_apply_total{cluster="local",kind="Deployment",operation="create",` + res + `,result="success"} 3
resyncd_apply_total{cluster="local",kind="Deployment",operation="delete",` + res + `,result="success"} 1
resyncd_apply_total{cluster="local",kind="HttpService",operation="status",` + res + `,result="success"} 3
resyncd_apply_total{cluster="local",kind="Service",operation="create",` + res + `,result="success"} 3
resyncd_apply_total{cluster="local",kind="Service",operation="delete",` + res + `,result="success"} 1
# HELP resyncd_drift_total Child objects found drifted, by reason.
# TYPE resyncd_drift_total counter
resyncd_drift_total{cluster="local",kind="Deployment",reason="changed",` + res + `} 0
resyncd_drift_total{cluster="local",kind="Deployment",reason="missing",` + res + `} 3
resyncd_drift_total{cluster="local",kind="Deployment",reason="orphaned",` + res + `} 1
resyncd_drift_total{cluster="local",kind="HorizontalPodAutoscaler",reason="changed",` + res + `} 0
resyncd_drift_total{cluster="local",kind="HorizontalPodAutoscaler",reason="missing",` + res + `} 0
resyncd_drift_total{cluster="local",kind="HorizontalPodAutoscaler",reason="orphaned",` + res + `} 0
resyncd_drift_total{cluster="local",kind="Service",reason="changed",` + res + `} 0
resyncd_drift_total{cluster="local",kind="Service",reason="missing",` + res + `} 3
resyncd_drift_total{cluster="local",kind="Service",reason="orphaned",` + res + `} 1
# HELP resyncd_managed_objects Child objects seen in the last pass, by state.
# TYPE resyncd_managed_objects gauge
resyncd_managed_objects{cluster="local",kind="Deployment",` + res + `,state="in_sync"} 2
resyncd_managed_objects{cluster="local",kind="Deployment",` + res + `,state="orphaned"} 1
resyncd_managed_objects{cluster="local",kind="Service",` + res + `,state="in_sync"} 2
resyncd_managed_objects{cluster="local",kind="Service",` + res + `,state="orphaned"} 1
# HELP resyncd_passes_total Passes over a watched resource, by result.
# TYPE resyncd_passes_total counter
resyncd_passes_total{cluster="local",` + res + `,result="error"} 0
resyncd_passes_total{cluster="local",` + res + `,result="success"} 2
# HELP resyncd_deferred_writes Writes left for the next pass by the per-pass budget.
# TYPE resyncd_deferred_writes gauge
resyncd_deferred_writes{cluster="local",` + res + `} 0
# HELP resyncd_cluster_up 1 when the last pass of every watched resource of the cluster succeeded, 0 when one failed or the cluster could not be reached.
# TYPE resyncd_cluster_up gauge
resyncd_cluster_up{cluster="local"} 1
`
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want),
		"resyncd_apply_total", "resyncd_drift_total", "resyncd_managed_objects", "resyncd_passes_total", "resyncd_deferred_writes", "resyncd_cluster_up"); err != nil {
		t.Error(err)
	}
}

// TestForgetCluster: every series of the cluster forgotten goes, those of
// the others stay.
func TestForgetCluster(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	for _, c := range []string{"east", "west"} {
		m.SetClusterUp(c, true)
		m.passes.WithLabelValues(c, "httpservices.v1alpha1.resyncd.io", "success").Inc()
		m.applyDuration.WithLabelValues(c, "create").Observe(0.1)
	}
	m.SetShard(2, map[string]float64{"east": 0.5, "west": 0.5})
	m.ForgetCluster("east")
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("%d series after east was forgotten, want west's 4, resyncd_is_leader and resyncd_shard_members", n)
	}
	want := `
# HELP resyncd_cluster_up 1 when the last pass of every watched resource of the cluster succeeded, 0 when one failed or the cluster could not be reached.
# TYPE resyncd_cluster_up gauge
resyncd_cluster_up{cluster="west"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "resyncd_cluster_up"); err != nil {
		t.Error(err)
	}
}
