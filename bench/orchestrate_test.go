package main

import (
	"math"
	"strings"
	"testing"
)

// TestColds: above -cold-reps-up-to only the contenders of the cold
// target repeat, and only up to -target-cold-reps-up-to.
func TestColds(t *testing.T) {
	b := &bench{coldMax: 2000, targetColdMax: 5000}
	for _, tc := range []struct {
		name string
		n    int
		want int
	}{
		{resyncdName, 1000, 3}, {crName, 1000, 3}, {resyncdServerName, 2000, 3},
		{resyncdName, 5000, 3}, {floorName, 5000, 3}, {crName, 5000, 1}, {resyncdServerName, 5000, 1},
		{resyncdName, 20000, 1}, {floorName, 20000, 1},
	} {
		if got := b.colds(contenderNamed(tc.name), tc.n, 3); got != tc.want {
			t.Errorf("%s at N = %d: %d cold runs, want %d", tc.name, tc.n, got, tc.want)
		}
	}
	// make bench's -cold-reps-up-to 0: the contenders of a cold target,
	// the graph's too, repeat; the others converge once.
	b.coldMax = 0
	for _, tc := range []struct {
		name string
		n    int
		want int
	}{
		{resyncdName, 1000, 3}, {floorName, 1000, 3}, {resyncdGraphName, 1000, 3},
		{crName, 1000, 1}, {cr8Name, 1000, 1}, {resyncdServerName, 1000, 1}, {resyncdTwoName, 1000, 1}, {resyncdOneNSName, 1000, 1},
	} {
		if got := b.colds(contenderNamed(tc.name), tc.n, 3); got != tc.want {
			t.Errorf("-cold-reps-up-to 0: %s at N = %d: %d cold runs, want %d", tc.name, tc.n, got, tc.want)
		}
	}
}

// TestRounds: with -untargeted-rounds, the contenders no target is on
// make that many rounds of steady passes and drift, the others -reps.
func TestRounds(t *testing.T) {
	for _, tc := range []struct {
		untargeted int
		name       string
		want       int
	}{
		{0, resyncdServerName, 3}, {0, crName, 3}, {0, resyncdName, 3},
		{1, resyncdName, 3}, {1, resyncdGraphName, 3}, {1, resyncdName + baselineSuffix, 3},
		{1, resyncdServerName, 1}, {1, resyncdTwoName, 1}, {1, resyncdOneNSName, 1}, {1, crName, 1}, {1, cr8Name, 1},
		{5, crName, 3},
	} {
		b := &bench{untargetedRounds: tc.untargeted}
		if got := b.rounds(contenderNamed(tc.name), 3); got != tc.want {
			t.Errorf("-untargeted-rounds %d: %s: %d rounds, want %d", tc.untargeted, tc.name, got, tc.want)
		}
	}
}

// contenderNames is the contenders' names, comma-separated.
func contenderNames(cs []contender) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

// TestRunAt: above -all-up-to only the contenders a target is on run,
// each up to its MaxN.
func TestRunAt(t *testing.T) {
	all := contenders()
	for _, tc := range []struct {
		allMax, n int
		want      string
	}{
		{0, 1000, contenderNames(all)},
		{0, 5000, "raw-ssa-floor,resyncd,resyncd-baseline,resyncd-graph,resyncd-graph-baseline,resyncd-one-namespace,controller-runtime,controller-runtime-8"},
		{0, 20000, "raw-ssa-floor,resyncd,resyncd-baseline,resyncd-graph,resyncd-graph-baseline,controller-runtime,controller-runtime-8"},
		{1000, 1000, contenderNames(all)},
		{1000, 5000, "raw-ssa-floor,resyncd,resyncd-baseline"},
		{1000, 20000, "raw-ssa-floor,resyncd,resyncd-baseline"},
	} {
		b := &bench{allMax: tc.allMax}
		if got := contenderNames(b.runAt(all, tc.n)); got != tc.want {
			t.Errorf("-all-up-to %d, N = %d: %s, want %s", tc.allMax, tc.n, got, tc.want)
		}
	}
}

// TestSelected: -only and -skip pick the contenders by name, a
// -baseline's only with one; each refuses a name no contender (nor, for
// -only, another figure) has.
func TestSelected(t *testing.T) {
	skip, err := contenderSet("-skip", "resyncd-one-namespace, controller-runtime-8")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		b    *bench
		want string
	}{
		{&bench{}, "raw-ssa-floor,resyncd,resyncd-server,resyncd-graph,resyncd-2-clusters,resyncd-one-namespace,controller-runtime,controller-runtime-8"},
		{&bench{skip: skip}, "raw-ssa-floor,resyncd,resyncd-server,resyncd-graph,resyncd-2-clusters,controller-runtime"},
		{&bench{skip: skip, baseline: "old"}, "raw-ssa-floor,resyncd,resyncd-baseline,resyncd-server,resyncd-graph,resyncd-graph-baseline,resyncd-2-clusters,controller-runtime"},
		{&bench{only: map[string]bool{"resyncd": true, "resyncd-one-namespace": true}, skip: skip}, "resyncd"},
	} {
		if got := contenderNames(tc.b.selected()); got != tc.want {
			t.Errorf("only %v, skip %v, baseline %q: %s, want %s", tc.b.only, tc.b.skip, tc.b.baseline, got, tc.want)
		}
	}
	if _, err := contenderSet("-skip", "resyncd,one-namespace,cr"); err == nil ||
		err.Error() != `-skip "resyncd,one-namespace,cr": no contender is named "one-namespace", "cr"` {
		t.Errorf("-skip with unknown names: %v", err)
	}
	if only, err := contenderSet("-only", "resyncd,graph-depth,resyncd-ring-3", depthName, ringThreeName); err != nil || len(only) != 3 {
		t.Errorf("-only with a contender, graph depth and the ring: %v, %v", only, err)
	}
	if _, err := contenderSet("-only", "resyncd,graph-depth", ringThreeName); err == nil {
		t.Error("-only accepted graph-depth where it is not allowed")
	}
}

// TestChurnCrossover: the rate at which the watch costs the server what
// polling does lies on the line through the quiet window and the churn.
func TestChurnCrossover(t *testing.T) {
	quiet := []*WindowSample{
		{Contender: "resyncd-30s", Interval: 30, Seconds: 300, APIServerCPU: 4.2, EtcdCPU: 1.5},
		{Contender: crName, Seconds: 300, APIServerCPU: 2.8, EtcdCPU: 1.5},
	}
	churned := func(crAPI float64) *Churn {
		return &Churn{Windows: []*ChurnSample{
			{WindowSample: WindowSample{Contender: "resyncd-30s", Interval: 30, Seconds: 120, APIServerCPU: 30, EtcdCPU: 10}, Writes: 4800, ProcessCPU: 2, PeakRSS: 50 << 20},
			{WindowSample: WindowSample{Contender: crName, Seconds: 120, APIServerCPU: crAPI, EtcdCPU: 10}, Writes: 4800, ProcessCPU: 8, PeakRSS: 100 << 20},
		}}
	}
	// Quiet: the watch 16.8 CPU s an hour below polling; at 40 changes a
	// second 300 above: equal at 40 × 16.8 / 316.8 ≈ 2.
	got := churnCrossover(&TradeOff{Windows: quiet, Churn: churned(40)})
	for _, want := range []string{"At 40.0 changes a second, resyncd used 0.25× the CPU", "0.50× its peak RSS", "-17 s quiet, +300 s at this rate",
		"at about 2 unrelated changes a second (between the two)"} {
		if !strings.Contains(got, want) {
			t.Errorf("crossover %q\nwants %q", got, want)
		}
	}
	if got := churnCrossover(&TradeOff{Windows: quiet, Churn: churned(30.5)}); !strings.Contains(got, "+15 s at this rate (of 1200 s)") ||
		!strings.Contains(got, "within the 5% two control planes differ by") {
		t.Errorf("the servers 1%% apart under churn: %q", got)
	}
	if got := churnCrossover(&TradeOff{Windows: quiet, Churn: churned(20)}); !strings.Contains(got, "no crossover") {
		t.Errorf("the watch cheaper under churn than quiet, against polling: %q", got)
	}
}

// TestRequestsGot: the steady pass's requests show the most of any pass
// where it differs from the median, since the target is judged on it.
func TestRequestsGot(t *testing.T) {
	passes := func(ts ...Traffic) steadyFig {
		var ss []*Sample
		for i, t := range ts {
			ss = append(ss, &Sample{Contender: resyncdName, Rep: i + 1, Phase: "steady", PassSeconds: 1, Traffic: t})
		}
		return trafficFig(ss, resyncdName, "steady")
	}
	met := func(st steadyFig) bool {
		return targets(sizeSummary{N: 1000, Steady: map[string]steadyFig{resyncdName: st}})[0].Met
	}
	lists := Traffic{Requests: 8, Lists: 8, ListSeconds: 1}
	same := passes(lists, lists, lists)
	if got, want := requestsGot(same), "8 requests, 8 LIST, 0 writes"; got != want || !met(same) {
		t.Errorf("passes alike: %q (met: %v), want %q, met", got, met(same), want)
	}
	watched := passes(Traffic{Requests: 9, Lists: 8, Watches: 1, ListSeconds: 1}, lists, lists)
	if got, want := requestsGot(watched), "8 requests, 8 LIST, 0 writes; beside them 1 WATCH in a pass, not resyncd's"; got != want || !met(watched) {
		t.Errorf("one pass with another client's WATCH: %q (met: %v), want %q, met", got, met(watched), want)
	}
	got := passes(Traffic{Requests: 9, Lists: 8, Gets: 1, ListSeconds: 1}, lists, lists)
	if want := "8 requests, 8 LIST, 0 writes; at most 9 requests, 8 LIST, 0 writes"; requestsGot(got) != want || met(got) {
		t.Errorf("one pass with a GET: %q (met: %v), want %q, not met", requestsGot(got), met(got), want)
	}
	many := passes(Traffic{Requests: 10, Lists: 10, ListSeconds: 1}, lists, lists)
	if met(many) {
		t.Errorf("one pass of 10 LIST at N = 1,000 (at most 9): met")
	}
}

// TestOverServer: each pass is set against the server's time in that pass,
// not the median pass against the median server time of another.
func TestOverServer(t *testing.T) {
	var ss []*Sample
	for i, p := range [][2]float64{{0.217, 0.199}, {0.262, 0.250}, {0.257, 0.209}} {
		ss = append(ss, &Sample{Contender: resyncdName, Rep: i + 1, Phase: "steady", PassSeconds: p[0], Traffic: Traffic{ListSeconds: p[1]}})
	}
	f := trafficFig(ss, resyncdName, "steady")
	if got, want := spreadTimes(f.OverServer), "1.09× (1.05×–1.23×)"; got != want {
		t.Errorf("paired: %q, want %q (the ratio of the medians would be %s)", got, want, times(f.Pass, f.Server))
	}
	if got := spreadTimes(trafficFig([]*Sample{{Contender: crName, Phase: "steady", PassSeconds: 1}}, crName, "steady").OverServer); got != "—" {
		t.Errorf("no LIST: %q, want —", got)
	}
	if got := spreadTimes(statOf([]float64{1.1, math.NaN(), 1.2})); got != "—" {
		t.Errorf("a pass of no time against none: %q, want —", got)
	}
}
