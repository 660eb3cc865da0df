package drills

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestFightWithAnotherWriter: another process sets a managed Deployment's
// replicas every 300 ms. resyncd puts it back with one write per pass (a
// watch sees the API server hold its replicas, for a moment, after each),
// the fight shows in resyncd_drift_total pass after pass and in one Event,
// and nothing loops.
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
	// The generation of each version of the Deployment the server held
	// with resyncd's replicas: the other writer overwrites them within
	// 300 ms, so only a watch sees each repair. Closed when the watch ends.
	w, err := d.cs.AppsV1().Deployments("fight").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	repaired := make(chan int64, 64)
	go func() {
		defer close(repaired)
		for ev := range w.ResultChan() {
			if dep, ok := ev.Object.(*appsv1.Deployment); ok && dep.Spec.Replicas != nil && *dep.Spec.Replicas == 2 {
				select {
				case repaired <- dep.Generation:
				default:
				}
			}
		}
	}()
	const passes = 5
	var counts []float64
	for i := range passes {
		// The other writer strikes in between: the server holds its 5.
		var struck int64
		fixture.Eventually(t, "the other writer's replicas", 10*time.Second, func() bool {
			dep, err := d.cs.AppsV1().Deployments("fight").Get(t.Context(), "web", metav1.GetOptions{})
			if err != nil || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 5 {
				return false
			}
			struck = dep.Generation
			return true
		})
		rep := d.pass()
		if rep.Updated != 1 {
			t.Errorf("pass %d made %d updates; want 1 (one object drifted)", i+1, rep.Updated)
		}
		if err := heldAfter(repaired, struck, 10*time.Second); err != nil {
			t.Errorf("pass %d: %v", i+1, err)
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

// heldAfter waits up to timeout for gens to yield a generation above
// after: the API server held resyncd's replicas again.
func heldAfter(gens <-chan int64, after int64, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		select {
		case g, ok := <-gens:
			if !ok {
				return errors.New("the watch on the Deployment ended")
			}
			if g > after {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("the API server held no replicas 2 after the other writer's generation %d within %s", after, timeout)
		}
	}
}
