package drills

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestFightWithAnotherWriter: another process sets a managed Deployment's
// replicas every 300 ms. resyncd writes it at most once per pass, the fight
// shows in resyncd_drift_total pass after pass and in one Event, and
// nothing loops.
func TestFightWithAnotherWriter(t *testing.T) {
	t.Parallel()
	d := newDrill(t, "fight")
	d.createParent("web", map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2)})
	d.pass()

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go func() {
		force := true
		patch := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":5}}`)
		_ = wait.PollUntilContextCancel(ctx, 300*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, _ = d.cs.AppsV1().Deployments("fight").Patch(ctx, "web", types.ApplyPatchType, patch,
				metav1.PatchOptions{FieldManager: "rogue-autoscaler", Force: &force})
			return false, nil
		})
	}()

	changed := func() float64 {
		mfs, err := d.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "resyncd_drift_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["kind"] == "Deployment" && labels["reason"] == "changed" {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	const passes = 5
	var counts []float64
	for range passes {
		// The other writer strikes in between: the server holds its 5.
		fixture.Eventually(t, "the other writer's replicas", 10*time.Second, func() bool {
			dep, err := d.cs.AppsV1().Deployments("fight").Get(t.Context(), "web", metav1.GetOptions{})
			return err == nil && dep.Spec.Replicas != nil && *dep.Spec.Replicas == 5
		})
		rep := d.pass()
		if rep.Updated > 1 {
			t.Errorf("a pass made %d updates; at most 1 (one object drifted)", rep.Updated)
		}
		counts = append(counts, changed())
	}
	stop()
	for i := 1; i < len(counts); i++ {
		if counts[i] <= counts[i-1] {
			t.Errorf("resyncd_drift_total{kind=Deployment,reason=changed} did not grow pass after pass: %v", counts)
			break
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := d.cs.EventsV1().Events("fight").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var fights []string
		for _, ev := range evs.Items {
			if ev.Reason == "DriftRecurring" {
				fights = append(fights, ev.Note)
			}
		}
		if len(fights) == 1 && strings.Contains(fights[0], "Deployment/fight/web") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DriftRecurring Events: %q, want exactly one about Deployment/fight/web", fights)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
