package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// TestPlots: the plots' points are the samples' figures, each plot is
// written beside the report and shown in it, and a plot this run has no
// figures for is removed rather than left from an earlier run.
func TestPlots(t *testing.T) {
	const mb = 1 << 20
	window := func(c string, iv, api, bytes float64) *WindowSample {
		return &WindowSample{Contender: c, Interval: iv, Seconds: 180, APIServerCPU: api, Traffic: Traffic{Bytes: bytes}}
	}
	res := &Results{
		Sizes: []int{1000, 5000},
		Samples: []*Sample{
			{Contender: resyncdName, N: 1000, Phase: "steady", PeakRSS: 50 * mb},
			{Contender: resyncdName, N: 5000, Phase: "steady", PeakRSS: 60 * mb},
			{Contender: crName, N: 1000, Phase: "steady", PeakRSS: 80 * mb},
		},
		TradeOff: &TradeOff{N: 1000,
			Windows: []*WindowSample{window("idle", 0, 4, 0), window(resyncdName+"-30s", 30, 6, 90*mb), window(resyncdName+"-3m", 180, 4.5, 15*mb), window(crName, 0, 5, mb)},
			Latency: []*LatencySample{
				{Contender: resyncdName + "-30s", Interval: 30, Seconds: []float64{10, 15, 20, 29}},
				{Contender: resyncdName + "-3m", Interval: 180, Seconds: []float64{60, 90, 120, 170}},
				{Contender: crName, Seconds: []float64{0.01, 0.02, 0.05, 0.3}},
			},
			Churn: &Churn{N: 1000, Windows: []*ChurnSample{{WindowSample: *window(resyncdName+"-30s", 30, 30, 90*mb)}, {WindowSample: *window(crName, 0, 40, 400*mb)}}},
		},
		Kro: &KroRun{Intervals: map[string]float64{kroResyncdPrefix + "30s": 30}, At: []*KroAt{{N: 1000,
			Cold:  []*KroCold{{Sample: Sample{Contender: kroName, N: 1000, Phase: "cold", PeakRSS: 110 * mb}, Graph: kroFlat.name}},
			Quiet: []*ChurnSample{{WindowSample: *window(kroName, 0, 5, 100*mb), PeakRSS: 120 * mb}, {WindowSample: *window(kroResyncdPrefix+"30s", 30, 6, 180*mb), PeakRSS: 55 * mb}},
		}}},
	}
	sum := summarize(res)

	points := func(ss *seriesSet, label string) plotter.XYs {
		for _, k := range ss.order {
			if ss.by[k].label == label {
				return ss.by[k].xy
			}
		}
		t.Errorf("no series %q", label)
		return nil
	}
	want := func(what string, got plotter.XYs, xy ...float64) {
		t.Helper()
		if len(got) != len(xy)/2 {
			t.Errorf("%s: %v, want %v", what, got, xy)
			return
		}
		for i, p := range got {
			if p.X != xy[2*i] || p.Y != xy[2*i+1] {
				t.Errorf("%s: point %d is %v, want (%g, %g)", what, i, p, xy[2*i], xy[2*i+1])
			}
		}
	}
	rss := sum.rssSeries()
	want("resyncd's RSS a parent", points(rss, "resyncd (HttpService)"), 1000, 50*1024/1000.0, 5000, 60*1024/5000.0)
	want("controller-runtime's", points(rss, "controller-runtime (HttpService)"), 1000, 80*1024/1000.0)
	want("kro's, its largest over the figure", points(rss, "kro, its chart's defaults (WebApp RGD)"), 1000, 120*1024/1000.0)
	by := sum.bytesSeries()
	want("resyncd's bytes an hour a parent at 3m", points(by, "resyncd, interval 3m (HttpService)"), 1000, 15*1024*20/1000.0)
	want("kro's", points(by, "kro, its chart's defaults (WebApp RGD)"), 1000, 100*1024*20/1000.0)
	lat := sum.latencySeries()
	want("resyncd's p50 against its interval", points(lat, "resyncd p50 (HttpService)"), 30, 15, 180, 90)
	want("resyncd's p99", points(lat, "resyncd p99 (HttpService)"), 30, 29, 180, 170)
	want("controller-runtime's p50 across the intervals", points(lat, "controller-runtime p50 (HttpService)"), 15, 0.02, 360, 0.02)

	dir := t.TempDir()
	doc := filepath.Join(dir, "benchmarks.md")
	if err := sum.writeReport(doc, ""); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rss", "bytes", "latency", "cpu"} {
		svg, err := os.ReadFile(filepath.Join(dir, "benchmarks-"+name+".svg"))
		if err != nil || !strings.HasPrefix(string(svg), "<?xml") {
			t.Errorf("plot %s: %v, %.40q", name, err, svg)
		}
		if !strings.Contains(string(md), "](benchmarks-"+name+".svg)") {
			t.Errorf("report does not show the %s plot", name)
		}
	}
	// A run with none of these figures: no plot left of the one before.
	if err := summarize(&Results{}).writeReport(doc, ""); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.svg")); len(left) > 0 {
		t.Errorf("plots left from the run before: %v", left)
	}
	if md, _ := os.ReadFile(doc); strings.Contains(string(md), "### Plots") {
		t.Error("report shows plots it has no figures for")
	}
}
