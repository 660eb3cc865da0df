package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resyncd/resyncd/internal/testenv"
	"github.com/resyncd/resyncd/shard"
)

func TestParseTraffic(t *testing.T) {
	raw := []byte(`# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="",resource="services",scope="resource",subresource="",verb="APPLY",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="resyncd.io",resource="httpservices",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="resyncd.io",resource="httpservices",scope="resource",subresource="",verb="POST",version="v1alpha1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="services",scope="cluster",subresource="",verb="WATCH",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 100
# TYPE apiserver_response_sizes histogram
apiserver_response_sizes_bucket{component="apiserver",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1",le="+Inf"} 4
apiserver_response_sizes_sum{component="apiserver",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 4000
apiserver_response_sizes_count{component="apiserver",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 4
apiserver_response_sizes_bucket{component="apiserver",group="",resource="endpoints",scope="cluster",subresource="",verb="LIST",version="v1",le="+Inf"} 1
apiserver_response_sizes_sum{component="apiserver",group="",resource="endpoints",scope="cluster",subresource="",verb="LIST",version="v1"} 99999
apiserver_response_sizes_count{component="apiserver",group="",resource="endpoints",scope="cluster",subresource="",verb="LIST",version="v1"} 1
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1",le="+Inf"} 4
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 0.25
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 4
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1",le="+Inf"} 3
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 9
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 3
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="endpoints",scope="cluster",subresource="",verb="LIST",version="v1",le="+Inf"} 1
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="endpoints",scope="cluster",subresource="",verb="LIST",version="v1"} 7
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="endpoints",scope="cluster",subresource="",verb="LIST",version="v1"} 1
# TYPE apiserver_watch_events_sizes histogram
apiserver_watch_events_sizes_bucket{group="",resource="services",version="v1",le="+Inf"} 2
apiserver_watch_events_sizes_sum{group="",resource="services",version="v1"} 500
apiserver_watch_events_sizes_count{group="",resource="services",version="v1"} 2
`)
	got, err := parseTraffic(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := Traffic{Requests: 22, Lists: 4, Watches: 1, ChildWrites: 3, StatusWrites: 2, OtherWrites: 7, DryRuns: 5, Bytes: 4500, ListSeconds: 0.25}
	if got != want {
		t.Errorf("parseTraffic:\n got %+v\nwant %+v", got, want)
	}
	if d := got.sub(Traffic{Requests: 2, Bytes: 500}); d.Requests != 20 || d.Bytes != 4000 || d.Writes() != 12 {
		t.Errorf("sub: %+v", d)
	}
	by, err := parseBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"deployments": 4000, "services": 500}; !maps.Equal(by, want) {
		t.Errorf("parseBytes: %v, want %v", by, want)
	}
}

func TestStatOf(t *testing.T) {
	if s := statOf([]float64{3, 1, 2}); s.Median != 2 || s.Min != 1 || s.Max != 3 {
		t.Errorf("odd: %+v", s)
	}
	if s := statOf([]float64{4, 1, 2, 3}); s.Median != 2.5 {
		t.Errorf("even: %+v", s)
	}
}

// TestBenchRuns runs the whole bench on 10 HttpServices, so that it cannot
// rot between `make bench` runs, and checks what the API server counted.
func TestBenchRuns(t *testing.T) {
	dir := t.TempDir()
	// resyncd is built in its own module, at the repository root, as `make
	// build` builds it: the bench module's requirements are not the daemon's.
	resyncd := testenv.BuildResyncd(t)
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "bench"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build bench: %v\n%s", err, out)
	}
	results, doc := filepath.Join(dir, "results.json"), filepath.Join(dir, "benchmarks.md")
	cmd := exec.Command(filepath.Join(dir, "bench"), "-sizes", "10", "-reps", "1", "-resyncd", resyncd,
		"-work", filepath.Join(dir, "work"), "-out", results, "-doc", doc,
		"-tradeoff-n", "10", "-window", "8s", "-churn-window", "8s", "-intervals", "2s,1h", "-latency-span", "4s", "-latency-changes", "4", "-depth-n", "10",
		"-ring-n", "200", "-fixed-n", "20", "-kro-n", "10", "-kro-chain-n", "10")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	data, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	seen, fixed := map[string]bool{}, map[string]bool{}
	for _, s := range res.Samples {
		seen[s.Contender+" "+s.Phase] = true
		if s.N == 20 {
			fixed[s.Contender+" "+s.Phase] = true
		}
		drifted := int(float64(2*s.N)*res.Drift + 0.5) // 2 children a parent
		if s.Error != "" {
			t.Errorf("%s %s: %s", s.Contender, s.Phase, s.Error)
		}
		if s.PeakRSS <= 0 {
			t.Errorf("%s %s: no peak RSS", s.Contender, s.Phase)
		}
		switch {
		case s.Phase == "cold" && s.Contender != crName && s.Contender != cr8Name && s.Traffic.ChildWrites != float64(2*s.N):
			t.Errorf("%s cold at N=%d: %v child writes, want %d", s.Contender, s.N, s.Traffic.ChildWrites, 2*s.N)
		case (s.Phase == "steady" || s.Phase == "others") && (s.Contender == resyncdName || s.Contender == listName) && (s.Traffic.Requests != 4 || s.Traffic.Lists != 4):
			t.Errorf("%s %s: %+v, want 4 LISTs and nothing else", s.Contender, s.Phase, s.Traffic)
		case s.Phase == "others" && s.Others != 40:
			t.Errorf("%s others: %d unrelated objects, want 40", s.Contender, s.Others)
		case s.Phase == "steady" && s.Contender == resyncdTwoName && (s.Traffic.Requests != 8 || s.Traffic.Lists != 8):
			t.Errorf("%s steady: %+v, want 4 LISTs in each cluster and nothing else", s.Contender, s.Traffic)
		case s.Phase == "drift" && s.Contender == resyncdTwoName && (s.Drifted != 2 || s.StillDrifted != 0 || s.Traffic.ChildWrites != 2):
			t.Errorf("%s drift: %d drifted, %d left, %v child writes; want 2 (one in each cluster), 0, 2", s.Contender, s.Drifted, s.StillDrifted, s.Traffic.ChildWrites)
		case s.Phase == "drift" && s.Contender != resyncdTwoName && (s.Drifted != drifted || s.StillDrifted != 0 || s.Traffic.ChildWrites != float64(drifted)):
			t.Errorf("%s drift at N=%d: %d drifted, %d left, %v child writes; want %d, 0, %d", s.Contender, s.N, s.Drifted, s.StillDrifted, s.Traffic.ChildWrites, drifted, drifted)
		}
	}
	for _, want := range []string{"raw-ssa-floor cold", "resyncd cold", "resyncd first", "resyncd steady", "raw-list steady",
		"resyncd again", "resyncd-server steady", "resyncd-2-clusters cold", "resyncd-2-clusters steady", "resyncd-one-namespace cold", "resyncd-one-namespace steady", "controller-runtime cold", "controller-runtime steady", "controller-runtime drift", "controller-runtime-8 cold", "controller-runtime-8 drift"} {
		if !seen[want] {
			t.Errorf("no sample of %s", want)
		}
	}
	// The fixed part: resyncd converged 20 parents and kept them in sync,
	// the raw LIST beside it.
	for _, want := range []string{"resyncd cold", "resyncd steady", "resyncd drift", "raw-list steady"} {
		if !fixed[want] {
			t.Errorf("no sample of %s at -fixed-n 20", want)
		}
	}
	if res.FixedN != 20 {
		t.Errorf("fixedN %d in the results, want 20", res.FixedN)
	}
	checkTradeOff(t, res.TradeOff)
	checkGraphDepth(t, res.GraphDepth)
	checkRing(t, res.Ring)
	checkKro(t, res.Kro)
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "### N = 10") || !strings.Contains(string(md), "| resyncd |") || !strings.Contains(string(md), "| steady pass, requests | 4 | 8 | 2.00× |") ||
		!strings.Contains(string(md), "### The trade-off against watching, at N = 10") || !strings.Contains(string(md), "**Under churn.**") || !strings.Contains(string(md), "### Graph depth, at N = 10") ||
		!strings.Contains(string(md), "### Replicas sharing the work") || !strings.Contains(string(md), "| the largest of the 3 |") ||
		!strings.Contains(string(md), "| resyncd, N parents in one namespace |") ||
		!strings.Contains(string(md), "### Against kro") || !strings.Contains(string(md), "| kro, its chart's defaults | flat |") ||
		!strings.Contains(string(md), "### The fixed part, at N = 20") || !strings.Contains(string(md), "| peak RSS keeping 20 parents in sync (the fixed part), against the raw LIST's with as many | ≤ 1.1× |") {
		t.Errorf("report has no table for N = 10:\n%s", md)
	}
	// The plots beside it, each shown in it.
	for _, name := range []string{"rss", "bytes", "latency", "cpu"} {
		svg := "benchmarks-" + name + ".svg"
		if !strings.Contains(string(md), "]("+svg+")") {
			t.Errorf("report shows no plot %s", svg)
		}
	}
	// -from writes the same report and the same plots from the samples
	// alone.
	again := filepath.Join(dir, "again")
	if err := os.Mkdir(again, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(dir, "bench"), "-from", results, "-doc", filepath.Join(again, "benchmarks.md")).CombinedOutput(); err != nil {
		t.Fatalf("bench -from: %v\n%s", err, out)
	}
	for _, name := range []string{"benchmarks.md", "benchmarks-rss.svg", "benchmarks-bytes.svg", "benchmarks-latency.svg", "benchmarks-cpu.svg"} {
		first, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if second, err := os.ReadFile(filepath.Join(again, name)); err != nil || !bytes.Equal(first, second) {
			t.Errorf("bench -from wrote another %s (%v)", name, err)
		}
	}
}

// checkTradeOff: every window plane measured, resyncd's passes there made
// their LISTs and nothing else, and every injected change was repaired.
func checkTradeOff(t *testing.T, to *TradeOff) {
	t.Helper()
	if to == nil {
		t.Fatal("no trade-off in the results")
	}
	got := map[string]*WindowSample{}
	for _, w := range to.Windows {
		got[w.Contender] = w
		if w.Error != "" || w.APIServerCPU <= 0 || w.EtcdCPU <= 0 {
			t.Errorf("window %s: error %q, CPU %.2f s and %.2f s", w.Contender, w.Error, w.APIServerCPU, w.EtcdCPU)
		}
	}
	for _, c := range []string{"idle", "resyncd-2s", "resyncd-1h", crName} {
		if got[c] == nil {
			t.Errorf("no window of %s", c)
		}
	}
	// Passes every 2 s over 8 s; none at 1 h. Each pass 4 LISTs and
	// nothing else (the server's own Service LIST may fall in a window).
	// Passes counts the passes that ended in the window: the first of them
	// may have made some of its LISTs before the window opened.
	if w := got["resyncd-2s"]; w != nil && (w.Passes < 2 || w.Traffic.Lists < float64(4*(w.Passes-1)) || w.Traffic.Writes() != 0) {
		t.Errorf("resyncd-2s: %d passes, %+v", w.Passes, w.Traffic)
	}
	if w := got["resyncd-1h"]; w != nil && (w.Passes != 0 || w.Traffic.Writes() != 0) {
		t.Errorf("resyncd-1h: %d passes, %+v", w.Passes, w.Traffic)
	}
	if len(to.Latency) != 2 {
		t.Fatalf("drift latency of %d contenders, want 2: %+v", len(to.Latency), to.Latency)
	}
	for _, l := range to.Latency {
		if l.Error != "" || l.Unrepaired != 0 || len(l.Seconds) != 4 {
			t.Errorf("drift latency under %s: %d repaired, %d not, error %q; want 4 repaired", l.Contender, len(l.Seconds), l.Unrepaired, l.Error)
		}
		for _, s := range l.Seconds {
			if s <= 0 {
				t.Errorf("drift latency under %s: a change repaired %v s after it was made", l.Contender, s)
			}
		}
	}
	checkChurn(t, to.Churn)
}

// checkChurn: every churn plane measured while the churn wrote, resyncd
// passed through the window, and the drift injected meanwhile was
// repaired.
func checkChurn(t *testing.T, ch *Churn) {
	t.Helper()
	if ch == nil {
		t.Fatal("no churn in the results")
	}
	if ch.Objects != 40 || ch.PeriodSeconds != 1 {
		t.Errorf("churn of %d objects every %v s, want 40 every 1 s", ch.Objects, ch.PeriodSeconds)
	}
	got := map[string]*ChurnSample{}
	for _, w := range ch.Windows {
		got[w.Contender] = w
		if w.Error != "" || w.Writes <= 0 || w.ProcessCPU <= 0 || w.PeakRSS <= 0 || w.APIServerCPU <= 0 || w.Traffic.Bytes <= 0 {
			t.Errorf("churn window %s: error %q, %d writes, process CPU %.2f s, peak RSS %d, server CPU %.2f s, %v bytes",
				w.Contender, w.Error, w.Writes, w.ProcessCPU, w.PeakRSS, w.APIServerCPU, w.Traffic.Bytes)
		}
	}
	for _, c := range []string{"resyncd-2s", crName, cr8Name} {
		if got[c] == nil {
			t.Errorf("no churn window of %s", c)
		}
	}
	if w := got["resyncd-2s"]; w != nil && (w.Passes < 2 || w.Traffic.Lists < float64(4*(w.Passes-1))) {
		t.Errorf("churn, resyncd-2s: %d passes, %+v", w.Passes, w.Traffic)
	}
	if w := got[cr8Name]; w != nil && w.Workers != 8 {
		t.Errorf("churn, %s: %d workers, want 8", cr8Name, w.Workers)
	}
	if len(ch.Latency) != 2 {
		t.Fatalf("drift latency under churn of %d contenders, want 2: %+v", len(ch.Latency), ch.Latency)
	}
	for _, l := range ch.Latency {
		if l.Error != "" || l.Unrepaired != 0 || len(l.Seconds) != 4 {
			t.Errorf("drift latency under churn, %s: %d repaired, %d not, error %q; want 4 repaired", l.Contender, len(l.Seconds), l.Unrepaired, l.Error)
		}
	}
}

// checkRing: the one replica's passes and each ring replica's LISTed
// every parent of its share and nothing else, the replicas' shares add up
// to every parent, and every process has a peak RSS.
func checkRing(t *testing.T, rr *RingRun) {
	t.Helper()
	if rr == nil || !slices.Equal(rr.Sizes, []int{200}) {
		t.Fatalf("ring: %+v, want the figure at N = 200", rr)
	}
	shares := map[int]int{} // by repetition, the parents of the replicas' steady passes
	seen := map[string]int{}
	for _, s := range rr.Samples {
		seen[s.Contender+" "+s.Phase]++
		if s.Error != "" || (s.PeakRSS <= 0 && s.Replica != ringAll) {
			t.Errorf("ring %s %s %s: error %q, peak RSS %d", s.Contender, s.Replica, s.Phase, s.Error, s.PeakRSS)
		}
		lists := 4 // the parents, and each kind of child: Deployments, Services, HPAs (none)
		if s.Replica == ringAll {
			lists = 4 * ringReplicas
		}
		// One LIST more: the API server's own Service LIST, every 3 minutes.
		if s.Traffic.Lists < float64(lists) || s.Traffic.Lists > float64(lists+1) || s.Traffic.Requests != s.Traffic.Lists {
			t.Errorf("ring %s %s %s: %+v, want %d LISTs and nothing else", s.Contender, s.Replica, s.Phase, s.Traffic, lists)
		}
		switch {
		case s.Contender == ringOneName && s.Parents != 200, s.Replica == ringAll && s.Parents != 200:
			t.Errorf("ring %s %s %s: %d parents, want 200", s.Contender, s.Replica, s.Phase, s.Parents)
		case s.Contender == ringThreeName && (s.Phase == "steady" || s.Phase == "first"):
			if s.Parents == 0 || s.Parents == 200 {
				t.Errorf("ring %s %s: %d parents, want a share", s.Replica, s.Phase, s.Parents)
			}
			if s.Phase == "steady" {
				shares[s.Rep] += s.Parents
			}
		}
	}
	for rep, n := range shares {
		if n != 200 {
			t.Errorf("ring, repetition %d: the replicas' passes held %d parents, want 200", rep, n)
		}
	}
	for k, want := range map[string]int{ringOneName + " first": 1, ringOneName + " steady": 1, ringThreeName + " first": ringReplicas,
		ringThreeName + " steady": ringReplicas, ringThreeName + " together": 1} {
		if seen[k] != want {
			t.Errorf("ring: %d samples of %s, want %d", seen[k], k, want)
		}
	}
}

// checkKro: every contender of the kro figure converged its instances
// from cold, each child and status checked on the API server (kro's
// among them: a cold sample whose children are not all there has an
// Error), resyncd in one pass for either graph; every flat plane was
// measured over the quiet window and under drift, and kro and resyncd at
// both intervals under churn.
func checkKro(t *testing.T, kr *KroRun) {
	t.Helper()
	if kr == nil || len(kr.At) != 1 || kr.At[0].N != 10 {
		t.Fatalf("kro: %+v, want the figure at N = 10", kr)
	}
	if !strings.HasPrefix(kr.Version, "v0.") {
		t.Errorf("kro's version %q, want the module's", kr.Version)
	}
	at := kr.At[0]
	fast, slow := kroResyncdPrefix+"2s", kroResyncdPrefix+"1h"
	colds := map[string]*KroCold{}
	for _, c := range at.Cold {
		colds[c.Contender+"/"+c.Graph] = c
		if c.Error != "" || c.Seconds <= 0 || c.PeakRSS <= 0 {
			t.Errorf("kro figure, %s cold (%s): error %q, %.1f s, peak RSS %d", c.Contender, c.Graph, c.Error, c.Seconds, c.PeakRSS)
		}
		// Four children an instance, and its status: kro creates with
		// server-side apply, and may write a child or a status again.
		if c.Traffic.ChildWrites < 40 {
			t.Errorf("kro figure, %s cold (%s): %v child writes, want at least 40", c.Contender, c.Graph, c.Traffic.ChildWrites)
		}
		if strings.HasPrefix(c.Contender, kroResyncdPrefix) && c.Passes != 1 {
			t.Errorf("kro figure, %s cold (%s): %d passes that wrote, want 1", c.Contender, c.Graph, c.Passes)
		}
		// kro kept on the flat plane went idle before what came after it.
		if c.BusyAfter < 0 {
			t.Errorf("kro figure, %s cold (%s): its process still busy %s after it", c.Contender, c.Graph, kroSettleMax)
		}
	}
	for _, want := range []string{kroName + "/chain", fast + "/chain", kroName + "/flat", kroTunedName + "/flat", fast + "/flat", slow + "/flat"} {
		if colds[want] == nil {
			t.Errorf("kro figure: no cold sample of %s", want)
		}
	}
	quiet := map[string]bool{}
	for _, w := range at.Quiet {
		quiet[w.Contender] = true
		// A quiet controller may use less than a clock tick in the window;
		// resyncd at 2 s makes its passes.
		if w.Error != "" || w.APIServerCPU <= 0 || w.PeakRSS <= 0 || (w.Contender == fast && (w.ProcessCPU <= 0 || w.Passes < 2)) {
			t.Errorf("kro figure, quiet window of %s: error %q, server CPU %.2f s, process CPU %.2f s, peak RSS %d, %d passes",
				w.Contender, w.Error, w.APIServerCPU, w.ProcessCPU, w.PeakRSS, w.Passes)
		}
		if w.Traffic.Writes() != 0 && strings.HasPrefix(w.Contender, kroResyncdPrefix) {
			t.Errorf("kro figure, quiet window of %s: %+v, want no write", w.Contender, w.Traffic)
		}
	}
	if len(quiet) != 4 {
		t.Errorf("kro figure: quiet windows of %v, want kro, tuned kro and resyncd at 2s and 1h", quiet)
	}
	if len(at.Latency) != 3 {
		t.Errorf("kro figure: drift latency of %d contenders, want 3", len(at.Latency))
	}
	for _, l := range at.Latency {
		if l.Error != "" || l.Unrepaired != 0 || len(l.Seconds) != 4 {
			t.Errorf("kro figure, drift latency under %s: %d repaired, %d not, error %q; want 4 repaired", l.Contender, len(l.Seconds), l.Unrepaired, l.Error)
		}
	}
	if at.Churn == nil || len(at.Churn.Windows) != 3 || len(at.Churn.Latency) != 2 {
		t.Fatalf("kro figure: churn %+v, want windows of kro and resyncd at 2s and 1h, drift under kro and resyncd at 2s", at.Churn)
	}
	for _, w := range at.Churn.Windows {
		// kro's informers see every churned Deployment; resyncd at 1 h
		// makes no pass in the window and sees none.
		if w.Error != "" || w.Writes <= 0 || (w.Contender != slow && w.ProcessCPU <= 0) {
			t.Errorf("kro figure, churn window of %s: error %q, %d writes, process CPU %.2f s", w.Contender, w.Error, w.Writes, w.ProcessCPU)
		}
	}
	for _, l := range at.Churn.Latency {
		if l.Error != "" || l.Unrepaired != 0 || len(l.Seconds) != 4 {
			t.Errorf("kro figure, drift latency under churn, %s: %d repaired, %d not, error %q", l.Contender, len(l.Seconds), l.Unrepaired, l.Error)
		}
	}
}

// checkGraphDepth: each graph converged from nothing in one pass that
// wrote its four children and the status of every parent, and a second
// that wrote nothing.
func checkGraphDepth(t *testing.T, gd *GraphDepth) {
	t.Helper()
	if gd == nil || len(gd.Runs) != 2 {
		t.Fatalf("graph depth: %+v, want a run of each graph", gd)
	}
	for _, r := range gd.Runs {
		if r.Error != "" || len(r.Passes) != 2 || r.Passes[0].Writes != 50 || r.Passes[1].Writes != 0 {
			t.Errorf("graph depth %d: %+v; want a pass of 50 writes, then one of none", r.Depth, r)
		}
	}
}

// TestQuantile: nearest rank.
func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for q, want := range map[float64]float64{0.5: 3, 0.99: 5, 1: 5, 0.2: 1} {
		if got := quantile(xs, q); got != want {
			t.Errorf("quantile %.2f = %v, want %v", q, got, want)
		}
	}
}

func TestGCHeap(t *testing.T) {
	line := "gc 7 @0.512s 3%: 0.020+2.1+0.031 ms clock, 0.040+0.5/1.9/0.3+0.062 ms cpu, 41->43->12 MB, 44 MB goal, 0 MB stacks, 0 MB globals, 2 P"
	if got := gcHeap(line); got != 43<<20 {
		t.Errorf("gcHeap = %d, want 43 MiB", got)
	}
	if got := gcHeap(`{"msg":"Pass finished"}`); got != 0 {
		t.Errorf("gcHeap of a log line = %d", got)
	}
}

// TestInterleavedLog: resyncd's log line written between the pieces of a
// GC trace line is still read, and so is the rest of the trace line.
func TestInterleavedLog(t *testing.T) {
	pass := `gc {"level":"info","msg":"Pass finished","cluster":"a","duration":"1.5s"}`
	l, ok := parsePassLine(pass)
	if !ok || l.Duration != "1.5s" {
		t.Errorf("parsePassLine(%q) = %+v, %v", pass, l, ok)
	}
	if got := gcHeap(pass); got != 0 {
		t.Errorf("gcHeap of a log line = %d", got)
	}
	rest := "66 @1.301s 10%: 0.16+7.3+0.039 ms clock, 0.33+2.7/1.3/0+0.079 ms cpu, 17->19->9 MB, 20 MB goal, 0 MB stacks, 0 MB globals, 2 P"
	if got := gcHeap(rest); got != 19<<20 {
		t.Errorf("gcHeap(%q) = %d, want 19 MiB", rest, got)
	}
	if _, ok := parsePassLine(`{"level":"info","msg":"Serving"}`); ok {
		t.Error("another log line read as a pass line")
	}
}

// TestCPUSeconds: spinning shows as CPU time, in seconds, never more
// than the wall time it took on every core.
func TestCPUSeconds(t *testing.T) {
	wall := time.Now()
	start, err := cpuSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for used := 0.0; used < 0.2; {
		if time.Since(wall) > 10*time.Second {
			t.Fatalf("10 s of spinning: %.2f CPU s", used)
		}
		now, err := cpuSeconds(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		used = now - start
		if limit := time.Since(wall).Seconds()*float64(runtime.NumCPU()) + 0.02; used > limit {
			t.Fatalf("%.2f CPU s in %.2f s of wall time on %d CPUs", used, time.Since(wall).Seconds(), runtime.NumCPU())
		}
	}
}

// TestScale: with two sizes, the report gives each contender's cost per
// parent at each N and the slope between them.
func TestScale(t *testing.T) {
	res := &Results{Sizes: []int{1000, 2000}, Reps: 1}
	for _, n := range []int{1000, 2000} {
		f := float64(n)
		res.Samples = append(res.Samples,
			&Sample{Contender: resyncdName, N: n, Rep: 1, Phase: "steady", PassSeconds: f * 100e-6, PeakRSS: int64(f) * 20 << 10, Traffic: Traffic{Bytes: f * 1024}},
			&Sample{Contender: listName, N: n, Rep: 1, Phase: "steady", PassSeconds: f * f * 1e-7, PeakRSS: 64 << 20, Traffic: Traffic{Bytes: f * 1024}})
	}
	got := summarize(res).scale()
	for _, want := range []string{
		"| resyncd | 1000 | 100 | 100 | 1.00 | 1.00 | 20 | 20.0 |",
		"| resyncd | 2000 | 100 |  | 1.00 |  | 39 |  |",
		"| raw paged LIST | 1000 | 100 | 300 | 1.00 | 1.00 | 64 | 0.0 |",
		"| raw paged LIST | 2000 | 200 |  |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no line %q in:\n%s", want, got)
		}
	}
	if one := summarize(&Results{Sizes: []int{1000}}).scale(); one != "" {
		t.Errorf("a scale table for one size: %q", one)
	}
}

// TestColdNotConverged: a cold run that did not converge is said so in
// the cold table, and kept out of the figures.
func TestColdNotConverged(t *testing.T) {
	res := &Results{Sizes: []int{100}, Reps: 1, Samples: []*Sample{
		{Contender: floorName, N: 100, Rep: 1, Phase: "cold", Seconds: 2},
		{Contender: crName, N: 100, Rep: 1, Phase: "cold", Error: "controller-runtime (N=100, cold): " + errNotConverged.Error() + " in 15m0s"},
	}}
	got := summarize(res).tables()
	if want := "| controller-runtime | —; 1 run(s) failed or did not converge in 15m0s | — |"; !strings.Contains(got, want) {
		t.Errorf("no line %q in:\n%s", want, got)
	}
}

// TestGraphDepthReport: the graph-depth table gives each graph's passes
// and seconds of the passes that wrote, medians over the runs that
// converged, per parent and against depth 1; a run that did not converge
// is said so, and kept out of the figures.
func TestGraphDepthReport(t *testing.T) {
	run := func(graph string, depth, rep int, writing ...float64) *DepthRun {
		r := &DepthRun{Graph: graph, Depth: depth, Rep: rep}
		for _, s := range writing {
			r.Passes = append(r.Passes, DepthPass{Writes: 5000, Seconds: s, PassSeconds: s - 1})
		}
		r.Passes = append(r.Passes, DepthPass{Writes: 0, Seconds: 1, PassSeconds: 0.5})
		return r
	}
	res := &Results{Sizes: []int{1000}, GraphDepth: &GraphDepth{N: 1000, Runs: []*DepthRun{
		run("flat", 1, 1, 10), run("chain", 4, 1, 12), run("chain", 4, 2, 14), run("flat", 1, 2, 10),
	}}}
	got := summarize(res).graphDepth()
	for _, want := range []string{
		"### Graph depth, at N = 1000",
		"| `flat.yaml` | 1 | 1 | 10.0 | 9.0 | 10.00 | 1.00× |",
		"| `chain.yaml` | 4 | 1 | 13.0 (12.0–14.0) | 12.0 (11.0–13.0) | 13.00 | 1.30× |",
		"At depth 4 the graph converges in as many passes as at depth 1 (1)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no line %q in:\n%s", want, got)
		}
	}

	// Four passes that wrote, and a run that never stopped writing.
	stuck := &DepthRun{Graph: "chain", Depth: 4, Rep: 3, Error: "still writing after 8 passes"}
	res.GraphDepth.Runs = []*DepthRun{run("flat", 1, 1, 10), run("chain", 4, 1, 3, 3, 3, 3)}
	if got := summarize(res).graphDepth(); !strings.Contains(got, "| `chain.yaml` | 4 | 4 | 12.0 | 8.0 | 12.00 | 1.20× |") ||
		!strings.Contains(got, "At depth 4 the graph takes 4 passes where at depth 1 it takes 1") {
		t.Errorf("four passes:\n%s", got)
	}
	res.GraphDepth.Runs = append(res.GraphDepth.Runs, stuck)
	if got := summarize(res).graphDepth(); !strings.Contains(got, "| `chain.yaml` | 4 | 4; 1 run(s) did not converge: still writing after 8 passes |") ||
		!strings.Contains(got, "At depth 4 the graph did not converge in 1 of its runs") {
		t.Errorf("a run that did not converge:\n%s", got)
	}
	if got := summarize(&Results{Sizes: []int{1000}}).graphDepth(); got != "" {
		t.Errorf("a graph-depth section without the measurement: %q", got)
	}
}

// TestParseOnceSummary reads the writes and the duration from what
// `resyncd once` prints, with one cluster and with two.
func TestParseOnceSummary(t *testing.T) {
	for _, c := range []struct {
		name, out string
		writes    int
		seconds   float64
	}{
		{"one cluster", `RESOURCE                             PARENTS  IN SYNC  DRIFTED  MISSING  ORPHANED  TAKEN  CREATED  UPDATED  DELETED  RELEASED  STATUSES  DEFERRED  WITHHELD  FAILED  STALLED  DURATION
webapps.v1alpha1.example.resyncd.io  200      0        0        800      0         1      800      2        3        4         200       0         7         0       0        3.273s
`, 1010, 3.273},
		{"two clusters", `CLUSTER  RESOURCE                             PARENTS  IN SYNC  DRIFTED  MISSING  ORPHANED  TAKEN  CREATED  UPDATED  DELETED  RELEASED  STATUSES  DEFERRED  WITHHELD  FAILED  STALLED  DURATION
a        webapps.v1alpha1.example.resyncd.io  5        5        0        0        0         0      0        0        0        0         0         0         0         0       0        120ms
b        webapps.v1alpha1.example.resyncd.io  5        4        0        1        0         0      1        0        0        0         1         0         0         0       0        1.5s
`, 2, 1.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, s, err := parseOnceSummary(c.out)
			if err != nil || w != c.writes || s != c.seconds {
				t.Errorf("%d writes, %v s, %v; want %d, %v", w, s, err, c.writes, c.seconds)
			}
		})
	}
	if _, _, err := parseOnceSummary("resyncd: no such file\n"); err == nil {
		t.Error("no summary read as one")
	}
}

// TestBaselineReport: with -baseline's contenders measured, the tables
// give the build against the baseline build, and the targets the ratios;
// without them, neither appears.
func TestBaselineReport(t *testing.T) {
	steady := func(c string, rep int, pass float64, rss int64) *Sample {
		return &Sample{Contender: c, N: 100, Rep: rep, Phase: "steady", PassSeconds: pass, PeakRSS: rss}
	}
	cold := func(c string, secs float64) *Sample {
		return &Sample{Contender: c, N: 100, Rep: 1, Phase: "cold", Seconds: secs}
	}
	res := &Results{Sizes: []int{100}, Reps: 1, Samples: []*Sample{
		cold(resyncdName, 3), steady(resyncdName, 1, 0.5, 60<<20),
		cold(resyncdName+baselineSuffix, 4), steady(resyncdName+baselineSuffix, 1, 0.4, 50<<20),
	}}
	sum := summarize(res)
	got := sum.tables()
	if want := "| resyncd | 0.50 | 0.40 | 1.25× | 3.0 | 4.0 | 0.75× | 60 | 50 | 1.20× |"; !strings.Contains(got, want) {
		t.Errorf("no line %q in:\n%s", want, got)
	}
	var ab []string
	for _, tg := range sum.sizes[0].Targets {
		if strings.Contains(tg.What, "baseline") {
			ab = append(ab, fmt.Sprintf("%s %s %v", tg.What, tg.Got, tg.Met))
		}
	}
	want := []string{"resyncd: steady pass against the baseline build 1.25× false", "resyncd: cold convergence against the baseline build 0.75× true",
		"resyncd: peak RSS in sync against the baseline build 1.20× false"}
	if !slices.Equal(ab, want) {
		t.Errorf("baseline targets %q, want %q", ab, want)
	}
	res.Samples = res.Samples[:2]
	if got := summarize(res).tables(); strings.Contains(got, "baseline") {
		t.Errorf("a baseline without -baseline:\n%s", got)
	}
}

// TestRingReport: each replica's figures, the largest of them against
// the one replica's, the targets met or not, and a sample with an error
// kept out of the figures.
func TestRingReport(t *testing.T) {
	steady := func(c, replica string, rep int, parents int, bytes float64, pass float64, rss int64) *Sample {
		return &Sample{Contender: c, N: ringTargetN, Rep: rep, Phase: "steady", Replica: replica, Parents: parents,
			PassSeconds: pass, PeakRSS: rss, Traffic: Traffic{Requests: 4, Lists: 4, Bytes: bytes}}
	}
	var ss []*Sample
	for rep := 1; rep <= 3; rep++ {
		ss = append(ss, steady(ringOneName, "", rep, 300, 300<<10, 3, 200<<20))
		ss = append(ss, steady(ringThreeName, "replica-1", rep, 100, 100<<10, 1, 90<<20), steady(ringThreeName, "replica-2", rep, 110, 110<<10, 1.2, 100<<20),
			steady(ringThreeName, "replica-3", rep, 90, 90<<10, 0.9, 95<<20))
		ss = append(ss, &Sample{Contender: ringThreeName, N: ringTargetN, Rep: rep, Phase: "together", Replica: ringAll, Parents: 300,
			Seconds: 2, PassSeconds: 1.5, Traffic: Traffic{Requests: 12, Bytes: 300 << 10}})
	}
	ss = append(ss, &Sample{Contender: ringOneName, N: ringTargetN, Rep: 1, Phase: "first", Parents: 300, PassSeconds: 6, PeakRSS: 200 << 20},
		&Sample{Contender: ringThreeName, N: ringTargetN, Rep: 1, Phase: "first", Replica: "replica-2", Parents: 110, PassSeconds: 2.5, PeakRSS: 100 << 20},
		&Sample{Contender: ringThreeName, N: ringTargetN, Rep: 4, Phase: "steady", Replica: "replica-1", Parents: 300, Traffic: Traffic{Bytes: 1 << 30},
			Error: "replica-2 ended a pass meanwhile"})
	res := &Results{Ring: &RingRun{Sizes: []int{ringTargetN}, Samples: ss}}
	figs := ringFigs(res.Ring)
	if len(figs) != 1 || len(figs[0].Replicas) != 3 || figs[0].Failed != 1 || figs[0].Replicas[0].Bytes.Count != 3 {
		t.Fatalf("ring figures: %+v, want one N of three replicas and one sample left out", figs)
	}
	// The fixed part 50 MiB: the bound (50 + 150/3) × 1.1 = 110 MiB holds
	// the largest replica's 100; with a fixed part of 20, (20 + 60) × 1.1 = 88
	// does not.
	for fixed, want := range map[float64][]string{
		50 << 20: {"≤ 0.4× 0.37× true", "≤ (the fixed part + 1/3 of one replica's growth above it) × 1.1 100 MiB against a bound of 110 (the fixed part 50 MiB, one replica 200) true"},
		20 << 20: {"≤ 0.4× 0.37× true", "≤ (the fixed part + 1/3 of one replica's growth above it) × 1.1 100 MiB against a bound of 88 (the fixed part 20 MiB, one replica 200) false"},
		0:        {"≤ 0.4× 0.37× true", "≤ (the fixed part + 1/3 of one replica's growth above it) × 1.1 100 MiB; the fixed part not measured in this run (-fixed-n) false"},
	} {
		var got []string
		for _, tg := range ringTargets(figs[0], fixed) {
			got = append(got, fmt.Sprintf("%s %s %v", tg.Want, tg.Got, tg.Met))
		}
		if !slices.Equal(got, want) {
			t.Errorf("ring targets with a fixed part of %.0f MiB %q, want %q", fixed/(1<<20), got, want)
		}
	}
	md := summarize(res).ring()
	for _, want := range []string{
		"| 1 replica, sharding off | 300 | 4 | 300 | 3.00 | 6.00 | 200 | — |",
		"| replica-2 | 110 | 4 | 110 | 1.20 | 2.50 | 100 | — |",
		"| the largest of the 3 | 110 | 4 | 110 | 1.20 | 2.50 | 100 | — |",
		"requests 1.00×, bytes 0.37×, pass 0.40×, peak RSS 0.50×",
		"1 sample(s) left out of the figures: replica-2 ended a pass meanwhile",
		"Targets (at this N)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
	if summarize(&Results{}).ring() != "" {
		t.Error("a ring section without a ring figure")
	}
}

// TestRingSettled: the ring is settled when each namespace is held by
// one replica, every replica holds some, and none waits.
func TestRingSettled(t *testing.T) {
	namespaces := ringNamespaces(200)
	// Cut by the namespaces' hashes, as the ring's layout is: sequential
	// names hash close together, so thirds of the hash space would not do.
	var hashes []uint64
	for _, ns := range namespaces {
		hashes = append(hashes, shard.Hash(ns))
	}
	slices.Sort(hashes)
	bounds := []uint64{0, hashes[3], hashes[6], math.MaxUint64}
	split := func(i int) []shard.Range { // the i-th of three ranges
		lo := bounds[i]
		if i > 0 {
			lo++
		}
		return []shard.Range{{Lo: lo, Hi: bounds[i+1]}}
	}
	whole := []shard.Range{{Lo: 0, Hi: math.MaxUint64}}
	three := []ringClaims{{identity: "a", held: split(0)}, {identity: "b", held: split(1)}, {identity: "c", held: split(2)}}
	for _, tc := range []struct {
		name   string
		claims []ringClaims
		want   bool
	}{
		{"three thirds", three, true},
		{"one holds everything", []ringClaims{{identity: "a", held: whole}, {identity: "b"}, {identity: "c"}}, false},
		{"one waits", []ringClaims{three[0], three[1], {identity: "c", held: split(2), pending: split(1)}}, false},
		{"two hold the same", []ringClaims{three[0], {identity: "b", held: append(split(1), split(2)...)}, three[2]}, false},
		{"a third unheld", three[:2], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := settled(tc.claims, namespaces, 3); got != tc.want {
				t.Errorf("settled = %v, want %v", got, tc.want)
			}
		})
	}
	if got, _ := claimsOf(map[string]string{"resyncd.io/identity": "a", "resyncd.io/claims": `{"local":{"held":["0:ff"],"pending":["100:1ff"]}}`}); got.identity != "a" ||
		!slices.Equal(got.held, []shard.Range{{Lo: 0, Hi: 0xff}}) || !slices.Equal(got.pending, []shard.Range{{Lo: 0x100, Hi: 0x1ff}}) {
		t.Errorf("claimsOf: %+v", got)
	}
	if _, ok := claimsOf(map[string]string{"resyncd.io/layouts": "{}"}); ok {
		t.Error("claimsOf read the layout Lease as a replica's")
	}
}

func TestOwnStacks(t *testing.T) {
	log := `{"level":"info","msg":"Pass finished"}
SIGQUIT: quit
PC=0x47a1c1 m=0 sigcode=0

goroutine 1 gp=0xc000002380 m=nil [select, 15 minutes]:
runtime.gopark(0x0?, 0x0?, 0x0?, 0x0?, 0x0?)
	/usr/local/go/src/runtime/proc.go:435 +0xce
github.com/resyncd/resyncd/engine.every({0x1d4e9b0, 0xc0001a2000}, 0x4e94914f0000, 0xc000220070, 0x0, 0xc0002c6000)
	/src/engine/loop.go:52 +0x2e5

goroutine 7 gp=0xc000102a80 m=nil [IO wait]:
internal/poll.runtime_pollWait(0x7f, 0x72)
	/usr/local/go/src/runtime/netpoll.go:351 +0x85

goroutine 9 gp=0xc000103180 m=nil [sync.Mutex.Lock, 15 minutes]:
sync.(*Mutex).Lock(...)
github.com/resyncd/resyncd/shard.(*Ring).Acquire(0xc000150000, {0x1a2b3c, 0x5})
	/src/shard/ring.go:204 +0x45
`
	got := ownStacks(log, 1<<10)
	for _, want := range []string{"goroutine 1 gp=", "engine.every", "goroutine 9 gp=", "Ring).Acquire"} {
		if !strings.Contains(got, want) {
			t.Errorf("ownStacks lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"goroutine 7 ", "Pass finished", "SIGQUIT"} {
		if strings.Contains(got, not) {
			t.Errorf("ownStacks has %q:\n%s", not, got)
		}
	}
	if short := ownStacks(log, 100); strings.Contains(short, "goroutine 9 ") || !strings.HasSuffix(short, "...") {
		t.Errorf("ownStacks past its limit of 100 bytes:\n%s", short)
	}
	if got := ownStacks(`{"msg":"Starting"}`, 1<<10); got != "no goroutine dump in the log" {
		t.Errorf("no dump: %q", got)
	}
}

// TestFixedPart: the fixed part's figures come from the samples at
// -fixed-n alone, and its target holds resyncd's peak RSS in sync to 35
// MiB.
func TestFixedPart(t *testing.T) {
	// Against the raw LIST's 30 MiB: 33 is 1.10×, 34 is 1.13×; 35 MiB is
	// the bound kept for the record.
	for _, tc := range []struct {
		rss  int64
		want []string
	}{
		{33 << 20, []string{"| peak RSS keeping 10 parents in sync (the fixed part), against the raw LIST's with as many | ≤ 1.1× | 1.10× (33 MiB against 30; heap 6 MiB against 4) | yes |",
			"| the same in MiB, the bound first set (kept for the record) | ≤ 35 MiB | 33 MiB | yes |"}},
		{34 << 20, []string{"| peak RSS keeping 10 parents in sync (the fixed part), against the raw LIST's with as many | ≤ 1.1× | 1.13× (34 MiB against 30; heap 6 MiB against 4) | no |",
			"| the same in MiB, the bound first set (kept for the record) | ≤ 35 MiB | 34 MiB | yes |"}},
		{41 << 20, []string{"| peak RSS keeping 10 parents in sync (the fixed part), against the raw LIST's with as many | ≤ 1.1× | 1.37× (41 MiB against 30; heap 6 MiB against 4) | no |",
			"| the same in MiB, the bound first set (kept for the record) | ≤ 35 MiB | 41 MiB | no |"}},
	} {
		res := &Results{Sizes: []int{1000}, FixedN: 10, Reps: 1, Samples: []*Sample{
			{Contender: resyncdName, N: 10, Rep: 1, Phase: "steady", PeakRSS: tc.rss, PeakHeap: 6 << 20},
			{Contender: listName, N: 10, Rep: 1, Phase: "steady", PeakRSS: 30 << 20, PeakHeap: 4 << 20},
			{Contender: resyncdName, N: 1000, Rep: 1, Phase: "steady", PeakRSS: 90 << 20},
		}}
		got := summarize(res).fixedPart()
		for _, want := range tc.want {
			if !strings.Contains(got, want) || !strings.Contains(got, "### The fixed part, at N = 10") {
				t.Errorf("no line %q in:\n%s", want, got)
			}
		}
	}
	if got := summarize(&Results{Sizes: []int{1000}}).fixedPart(); got != "" {
		t.Errorf("a fixed part where none was measured: %q", got)
	}
}

// TestKroActive: the instances kro holds ACTIVE are the transitions to
// ACTIVE less those from it, over every kind.
func TestKroActive(t *testing.T) {
	raw := []byte(`# TYPE instance_state_transitions_total counter
instance_state_transitions_total{from_state="",gvr="kro.run/v1alpha1, Kind=WebAppFlat",to_state="IN_PROGRESS"} 10
instance_state_transitions_total{from_state="IN_PROGRESS",gvr="kro.run/v1alpha1, Kind=WebAppFlat",to_state="ACTIVE"} 9
instance_state_transitions_total{from_state="ACTIVE",gvr="kro.run/v1alpha1, Kind=WebAppFlat",to_state="IN_PROGRESS"} 2
instance_state_transitions_total{from_state="ERROR",gvr="kro.run/v1alpha1, Kind=WebAppChain",to_state="ACTIVE"} 1
`)
	got, err := parseKroActive(raw)
	if err != nil || got != 8 {
		t.Errorf("parseKroActive: %d, %v; want 8", got, err)
	}
	if got, err := parseKroActive(nil); err != nil || got != 0 {
		t.Errorf("parseKroActive of no metrics: %d, %v; want 0", got, err)
	}
}

// TestKroReport: the kro figure's targets from its samples, met and not.
func TestKroReport(t *testing.T) {
	const mb = 1 << 20
	fast, slow := kroResyncdPrefix+"30s", kroResyncdPrefix+"3m"
	cold := func(c, graph string, secs float64, rss int64, passes int) *KroCold {
		return &KroCold{Sample: Sample{Contender: c, N: 1000, Phase: "cold", Seconds: secs, PeakRSS: rss}, Graph: graph, Passes: passes}
	}
	window := func(c string, iv, api, proc, bytes float64, rss int64) *ChurnSample {
		return &ChurnSample{WindowSample: WindowSample{Contender: c, Interval: iv, Seconds: 180, APIServerCPU: api, Traffic: Traffic{Bytes: bytes}}, ProcessCPU: proc, PeakRSS: rss}
	}
	kr := &KroRun{Version: "v0.9.4", Flags: kroFlags, Intervals: map[string]float64{fast: 30, slow: 180}, At: []*KroAt{{
		N: 1000,
		Cold: []*KroCold{cold(kroName, "chain", 300, 90*mb, 0), cold(fast, "chain", 20, 60*mb, 1),
			cold(kroName, "flat", 100, 100*mb, 0), cold(kroTunedName, "flat", 40, 120*mb, 0), cold(fast, "flat", 20, 55*mb, 1), cold(slow, "flat", 21, 50*mb, 1)},
		Quiet: []*ChurnSample{window(kroName, 0, 4, 1, 10*mb, 110*mb), window(fast, 30, 6, 2, 60*mb, 58*mb), window(slow, 180, 3.5, 0.5, 8*mb, 52*mb)},
		Churn: &Churn{N: 1000, Objects: 4000, PeriodSeconds: 100, Windows: []*ChurnSample{
			window(kroName, 0, 16, 2, 20*mb, 160*mb), window(fast, 30, 15, 0.4, 2*mb, 56*mb), window(slow, 180, 17, 1.5, 1*mb, 54*mb)}},
	}}}
	f := kroFigsOf(kr, kr.At[0])
	var got []string
	for _, tg := range f.targets() {
		got = append(got, fmt.Sprintf("%s: %s %v", tg.What, tg.Got, tg.Met))
	}
	want := []string{
		"peak RSS against kro's: 0.36× (58 MiB against 160; tuned kro 120) true",
		"API server CPU in the quiet window, resyncd at 3m, against kro's: 0.88× (3.50 s against 4.00) true",
		"bytes the API server sent an hour, quiet, resyncd at 3m, against kro's: 0.80× (160.0 MiB against 200.0) true",
		"cold convergence against kro's: 0.20× (20.0 s against 100.0; tuned kro 40.0 s) true",
		"under churn, API server CPU against kro's, resyncd at 30s: 0.94× (15.00 s against 16.00) true",
		"under churn, resyncd's own CPU against kro's, resyncd at 30s: 0.20× (0.40 s against 2.00) true",
		"under churn, API server CPU against kro's, resyncd at 3m: 1.06× (17.00 s against 16.00) false",
		"under churn, resyncd's own CPU against kro's, resyncd at 3m: 0.75× (1.50 s against 2.00) false",
		"the four-deep chain converges in one pass under resyncd: 1 (20.0 s; kro 300.0 s) true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("kro targets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	md := summarize(&Results{Kro: kr}).kro()
	for _, w := range []string{"kro v0.9.4's controller", "#### N = 1000", "| kro, its chart's defaults | chain | 300.0 | — | 90 |", "| resyncd, interval 30s | flat | 20.0 | 1 | 55 |"} {
		if !strings.Contains(md, w) {
			t.Errorf("no %q in:\n%s", w, md)
		}
	}
	// At -kro-chain-n alone, with -kro-chain-kro=false: the chain's
	// target only, kro's time left to make bench-scale.
	only := &KroAt{N: 1000, Cold: []*KroCold{cold(fast, "chain", 20, 60*mb, 2)}}
	ts := kroFigsOf(kr, only).targets()
	if len(ts) != 1 || ts[0].Met || ts[0].Got != "2 (20.0 s; kro's: not run here (make bench-kro runs it))" {
		t.Errorf("chain alone, in two passes: targets %+v, want the chain's, not met", ts)
	}
	// A cold run that failed is no figure: its target is not met.
	kr.At[0].Cold[4].Error = "not converged: 1000 WebApps for 1000; 3 without the settings ConfigMap"
	if tg := kroFigsOf(kr, kr.At[0]).targets()[3]; tg.Met {
		t.Errorf("cold target met with resyncd's run failed: %+v", tg)
	}
}
