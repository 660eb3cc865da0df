package engine

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkPassMemory measures what a pass holds, in memory (no API
// server): for each parent between passes (B/parent-kept: the memory the
// next pass plans from, without what the engine holds whatever N), and
// for each job of a drifted parent once every job is planned, before the
// first runs (B/job-held). 2,000 HttpServices, 100 a namespace, each a
// Deployment and a Service, as in make bench; one Deployment in ten
// changed by another writer. The
// figures are live heap after a collection, so they do not depend on the
// machine; make bench measures the process.
func BenchmarkPassMemory(b *testing.B) {
	const n, drifted = 2000, 200
	for b.Loop() {
		cfg := testConfig()
		cfg.PageSize = 500
		cfg.Apply.QPS, cfg.Apply.Burst, cfg.Apply.MaxWritesPerPass = 1e6, 1e6, 1e6
		p := newMemPass(b, cfg)
		for i := range n {
			p.parent(fmt.Sprintf("team-%04d", i/100), fmt.Sprintf("web-%05d", i), map[string]any{
				"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2),
				"env":         []any{map[string]any{"name": "MODE", "value": "prod"}, map[string]any{"name": "LOG", "value": "info"}},
				"resources":   map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}, "limits": map[string]any{"cpu": "500m", "memory": "128Mi"}},
				"healthCheck": map[string]any{"path": "/healthz"},
			})
		}
		for range 3 {
			p.sync()
		}
		for i := range drifted {
			k := i * n / drifted
			setImage(b, p.w, fmt.Sprintf("team-%04d", k/100), fmt.Sprintf("web-%05d", k), "nginx:1.28")
		}
		// The drift pass, a step at a time, as a pass runs it: the jobs
		// are measured once all are planned, before any of them runs.
		e, rs := p.engine, p.engine.resources[0]
		var rep ResourceReport
		before := liveHeap()
		rs.begin()
		jobs, err := e.planPass(b.Context(), rs, &rep)
		if err != nil {
			b.Fatal(err)
		}
		planned := liveHeap()
		if err := e.execute(b.Context(), rs, jobs, &rep); err != nil {
			b.Fatal(err)
		}
		fold(rs.next, &rep, jobs)
		rs.end()
		if len(jobs) != drifted || rep.Updated != drifted {
			b.Fatalf("the drift pass had %d jobs and updated %d children, want %d and %d", len(jobs), rep.Updated, drifted, drifted)
		}
		kept := liveHeap() // jobs is dead here: what the jobs held and fold did not keep is collectable
		for _, rs := range p.engine.resources {
			rs.mem = nil
		}
		without := liveHeap()
		runtime.KeepAlive(p) // the objects stored, in both
		b.ReportMetric(float64(int64(planned)-int64(before))/drifted, "B/job-held")
		b.ReportMetric(float64(int64(kept)-int64(without))/n, "B/parent-kept")
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
