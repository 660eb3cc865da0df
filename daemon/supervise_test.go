package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/resyncd/resyncd/cluster"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/serve"
)

// TestSupervisorWant: a cluster runs only while the daemon wants it; the
// answer is asked again when rebalance fires, and a cluster no longer
// wanted is stopped and leaves /statusz, and comes back when wanted again.
func TestSupervisorWant(t *testing.T) {
	cfg := &config.Config{
		Clusters:  []config.Cluster{{Name: "a"}, {Name: "b"}},
		Resources: []config.Resource{{Group: "resyncd.io", Version: "v1alpha1", Resource: "httpservices", Interval: time.Hour}},
	}
	var wantB atomic.Bool
	wantB.Store(true)
	rebalance := make(chan struct{})
	// No resource: its passes stop at once, as they do in a cluster that
	// watches none, and the supervisor keeps it as it is.
	d := testDaemon(cfg)
	d.rebalance, d.want = rebalance, func(c string) bool { return c == "a" || wantB.Load() }
	s := newSupervisor(d)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { s.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	runs := func() map[string]bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := map[string]bool{}
		for name := range s.runs {
			out[name] = true
		}
		return out
	}
	listed := func(name string) bool {
		t.Helper()
		rec := httptest.NewRecorder()
		d.status.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/statusz", nil))
		var st struct{ Clusters []struct{ Name string } }
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(st.Clusters, func(c struct{ Name string }) bool { return c.Name == name })
	}
	fire := func() {
		t.Helper()
		select {
		case rebalance <- struct{}{}:
		case <-time.After(10 * time.Second):
			t.Fatal("the supervisor does not listen to rebalance")
		}
	}
	fixture.Eventually(t, "a and b run", 10*time.Second, func() bool { r := runs(); return r["a"] && r["b"] })

	wantB.Store(false)
	fire()
	fixture.Eventually(t, "b stopped and gone from /statusz", 10*time.Second, func() bool {
		r := runs()
		return r["a"] && !r["b"] && listed("a") && !listed("b")
	})

	wantB.Store(true)
	fire()
	fixture.Eventually(t, "b back", 10*time.Second, func() bool { r := runs(); return r["b"] && listed("b") })
}

// TestSupervisorWantedAgainWhileStopping: a cluster no longer wanted
// whose passes are still writing their batch in flight, and that is
// wanted again before they stopped, runs again once they have: the run
// that was cancelled is not taken for the one that should run.
func TestSupervisorWantedAgainWhileStopping(t *testing.T) {
	cfg := &config.Config{
		Clusters:  []config.Cluster{{Name: "a"}},
		Resources: []config.Resource{{Group: "resyncd.io", Version: "v1alpha1", Resource: "httpservices", Interval: time.Hour}},
	}
	var want atomic.Bool
	d := testDaemon(cfg)
	d.want = func(string) bool { return want.Load() }
	s := newSupervisor(d)
	var cancelled atomic.Bool
	old := &clusterRun{t: d.targets[0], cancel: func() { cancelled.Store(true) }, stopped: make(chan struct{}), done: make(chan struct{})}
	s.runs["a"] = old
	run := func() *clusterRun {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.runs["a"]
	}

	s.reconcile(t.Context(), false)
	if !cancelled.Load() || run() != old {
		t.Fatalf("not wanted, still writing: cancelled %v, kept %v; want true, true", cancelled.Load(), run() == old)
	}
	want.Store(true)
	s.reconcile(t.Context(), false)
	if run() != old {
		t.Fatal("wanted again before it stopped: a second run started beside the first")
	}
	close(old.stopped)
	close(old.done)
	s.reconcile(t.Context(), false)
	if r := run(); r == nil || r == old {
		t.Fatalf("wanted again, and stopped: run %p, the cancelled one %p; want a new run", r, old)
	}
	<-run().stopped
}

// testDaemon is a daemon of cfg's clusters that reaches no API server;
// its clusters watch no resource, so their passes stop at once.
func testDaemon(cfg *config.Config) *daemon {
	p := &Prepared{cfg: cfg, log: zap.NewNop(), catalog: cluster.NewCatalog(cfg, zap.NewNop())}
	for _, t := range p.catalog.Listed() {
		t.Resources = nil
		p.targets = append(p.targets, &target{Target: t})
	}
	return &daemon{Prepared: p, status: serve.NewStatus(cfg)}
}
