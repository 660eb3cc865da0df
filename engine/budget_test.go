package engine

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestBudgetAndPriority: with a budget of 10 writes, 30 new parents of
// mixed priority get the highest-priority children first, the rest is
// shown as deferred, and the following passes finish it.
func TestBudgetAndPriority(t *testing.T) {
	cfg := testConfig("budget")
	cfg.Apply.MaxWritesPerPass = 10
	cfg.Apply.Concurrency = 1 // the order of the writes is the order of the plan
	h := newHarness(t, cfg)
	h.namespace("budget")
	priorities := []int64{-5, 0, 7, 100, 3}
	for i := range 30 {
		h.createParent("budget", fmt.Sprintf("p%02d", i), map[string]any{"image": "nginx", "port": int64(80), "priority": priorities[i%len(priorities)]})
	}

	h.log.reset()
	rep := h.sync()
	ws := writes(h.log.reset())
	if len(ws) != 10 {
		t.Fatalf("first pass wrote %d times, want the budget of 10:\n%s", len(ws), strings.Join(ws, "\n"))
	}
	// 6 parents have priority 100: their Deployment, Service and status
	// are 18 writes, so the first 10 all belong to them.
	for _, w := range ws {
		name := w[strings.LastIndex(strings.Split(w, "?")[0], "/")+1:]
		if strings.HasSuffix(strings.Split(w, "?")[0], "/status") {
			parts := strings.Split(strings.Split(w, "?")[0], "/")
			name = parts[len(parts)-2]
		}
		var i int
		if _, err := fmt.Sscanf(name, "p%02d", &i); err != nil || priorities[i%len(priorities)] != 100 {
			t.Errorf("write for %s (priority %d) came before the priority-100 parents were done", name, priorities[i%len(priorities)])
		}
	}
	if rep.Deferred != 90-10 {
		t.Errorf("deferred = %d, want 80 (30 × Deployment, Service, status − 10)", rep.Deferred)
	}
	if got := testutil.ToFloat64(h.engine.metrics.deferred.WithLabelValues("httpservices.v1alpha1.resyncd.io")); got != float64(rep.Deferred) {
		t.Errorf("resyncd_deferred_writes = %g, want %d", got, rep.Deferred)
	}

	passes := 1
	for ; passes < 20 && rep.Deferred > 0; passes++ {
		rep = h.sync()
	}
	if rep.Deferred != 0 {
		t.Fatalf("still %d deferred after %d passes", rep.Deferred, passes)
	}
	if n := len(h.list(deployments, "budget")); n != 30 {
		t.Errorf("%d Deployments after %d passes, want 30", n, passes)
	}
	// Every parent ends with a status.
	var missing []string
	for _, p := range h.list(httpServices, "budget") {
		if _, ok, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration"); !ok {
			missing = append(missing, p.GetName())
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("parents without status: %v", missing)
	}
}
