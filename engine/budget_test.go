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
	t.Parallel()
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
	if got := testutil.ToFloat64(h.engine.metrics.deferred.WithLabelValues("local", "httpservices.v1alpha1.resyncd.io")); got != float64(rep.Deferred) {
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

// TestResourcePriority: two watched resources with writes waiting at once
// share one budget, and the one of the higher priority has it first,
// though the configuration lists it second; the other's writes wait for
// the next pass. The default 8 workers take jobs in priority order.
func TestResourcePriority(t *testing.T) {
	t.Parallel()
	cfg := testConfig("prio-low")
	cfg.Resources = append(cfg.Resources, cfg.Resources[0])
	cfg.Resources[1].Namespaces, cfg.Resources[1].Priority = []string{"prio-high"}, 10
	cfg.Apply.MaxWritesPerPass = 12
	h := newHarness(t, cfg)
	for _, ns := range []string{"prio-low", "prio-high"} {
		h.namespace(ns)
		for i := range 10 {
			h.createParent(ns, fmt.Sprintf("p%d", i), map[string]any{"image": "nginx", "port": int64(80)})
		}
	}
	rep, err := h.engine.SyncOnce(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	low, high := rep.Resources[0], rep.Resources[1]
	children := func(ns string) int { return len(h.list(deployments, ns)) + len(h.list(services, ns)) }
	if n := children("prio-low"); n != 0 || low.Deferred != 30 {
		t.Errorf("the lower priority's pass wrote %d children, deferred %d; want 0 and all 30 writes", n, low.Deferred)
	}
	if n := children("prio-high"); n == 0 || high.Created+high.Statuses != 12 {
		t.Errorf("the higher priority's pass: %d children, %d created, %d statuses; want the budget of 12 writes", n, high.Created, high.Statuses)
	}
	for pass := 2; pass <= 6 && (low.Deferred > 0 || high.Deferred > 0); pass++ {
		if rep, err = h.engine.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		low, high = rep.Resources[0], rep.Resources[1]
	}
	if n := children("prio-low") + children("prio-high"); n != 40 {
		t.Errorf("%d children after the budget let every write through, want 40", n)
	}
}
