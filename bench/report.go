package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/resyncd/resyncd/internal/testenv"
)

// Machine is where the bench ran.
type Machine struct {
	CPUs   int    `json:"cpus"`
	Model  string `json:"cpuModel"`
	Memory string `json:"memory"`
	Kernel string `json:"kernel"`
}

// Versions are what ran.
type Versions struct {
	Go                string `json:"go"`
	KubeAPIServer     string `json:"kubeAPIServer"`
	Resyncd           string `json:"resyncd"`
	Commit            string `json:"commit"`
	ControllerRuntime string `json:"controllerRuntime"`
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU()}
	m.Model = procField("/proc/cpuinfo", "model name")
	m.Memory = procField("/proc/meminfo", "MemTotal")
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(k))
	}
	return m
}

func procField(path, key string) string {
	data, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func versions(b *bench) Versions {
	v := Versions{Go: runtime.Version()}
	out := func(name string, args ...string) string {
		o, err := exec.Command(name, args...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(o))
	}
	if root, err := testenv.RepoRoot(); err == nil {
		v.KubeAPIServer = out(filepath.Join(root, "bin", "kube-apiserver"), "--version")
		v.Commit = out("git", "-C", root, "rev-parse", "--short", "HEAD")
		if out("git", "-C", root, "status", "--porcelain", "--untracked-files=no") != "" {
			v.Commit += " (with local changes)"
		}
	}
	v.Resyncd = out(b.resyncd, "version")
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "sigs.k8s.io/controller-runtime" {
				v.ControllerRuntime = d.Version
			}
		}
	}
	return v
}

// stat is the median of a figure over the repetitions, with its range.
type stat struct {
	Median, Min, Max float64
	Count            int
}

func statOf(xs []float64) stat {
	if len(xs) == 0 {
		return stat{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{Median: m, Min: s[0], Max: s[len(s)-1], Count: len(s)}
}

// summary is the figures of one bench run.
type summary struct {
	res   *Results
	sizes []sizeSummary
	// fixed is the figures at -fixed-n; nil: not measured.
	fixed *sizeSummary
}

type sizeSummary struct {
	N      int
	Cold   map[string]stat // seconds
	Steady map[string]steadyFig
	// ColdRSS is the peak RSS of the cold process; SyncRSS the peak of the
	// processes that keep the cluster in sync (steady, drift and after),
	// the highest in each repetition; bytes.
	// ColdFailed counts the cold runs that did not converge; ColdLimit is
	// the time those that ran out of it had, as their errors say.
	ColdFailed       map[string]int
	ColdLimit        map[string]string
	ColdRSS, SyncRSS map[string]stat
	// SyncHeap is the peak heap of the processes in sync, bytes.
	SyncHeap map[string]stat
	Drift    map[string]driftFig
	Targets  []target
}

type steadyFig struct {
	Requests, Lists, Writes, DryRuns, Watches, Bytes, Pass stat
	// Polled is each pass's requests but WATCHes, which resyncd never
	// opens (its chart grants it no watch verb) and the API server's own
	// Service informer adds now and then; Other, those neither LIST nor
	// WATCH.
	Polled, Other stat
	// Server is the API server's own time serving the LISTs.
	Server stat
	// OverServer is each pass against the server's time serving its LISTs
	// in the same window: paired, so that the server's own spread from
	// pass to pass (a quarter at N = 1,000) is not taken for the client's.
	OverServer stat
}

type driftFig struct {
	Drifted, ChildWrites, StatusWrites, StillDrifted, AgainWrites stat
}

type target struct {
	What, Want, Got string
	Met             bool
}

func pick(samples []*Sample, contender, phase string, f func(*Sample) float64) stat {
	var xs []float64
	for _, s := range samples {
		if s.Contender == contender && s.Phase == phase && s.Error == "" {
			xs = append(xs, f(s))
		}
	}
	return statOf(xs)
}

// firstSuffix keys a resyncd's first pass after its start.
const firstSuffix = "/first"

func trafficFig(ss []*Sample, c, phase string) steadyFig {
	t := func(f func(Traffic) float64) stat {
		return pick(ss, c, phase, func(s *Sample) float64 { return f(s.Traffic) })
	}
	return steadyFig{
		Requests: t(func(t Traffic) float64 { return t.Requests }),
		Lists:    t(func(t Traffic) float64 { return t.Lists }),
		Writes:   t(Traffic.Writes),
		DryRuns:  t(func(t Traffic) float64 { return t.DryRuns }),
		Watches:  t(func(t Traffic) float64 { return t.Watches }),
		Polled:   t(func(t Traffic) float64 { return t.Requests - t.Watches }),
		Other:    t(func(t Traffic) float64 { return t.Requests - t.Watches - t.Lists }),
		Bytes:    t(func(t Traffic) float64 { return t.Bytes }),
		Server:   t(func(t Traffic) float64 { return t.ListSeconds }),
		Pass:     pick(ss, c, phase, func(s *Sample) float64 { return s.PassSeconds }),
		OverServer: pick(ss, c, phase, func(s *Sample) float64 {
			return s.PassSeconds / s.Traffic.ListSeconds
		}),
	}
}

// peakPerRep is the highest peak RSS (or, with heap, peak heap) of c's
// runs in each repetition over the phases in sync, over the repetitions.
func peakPerRep(ss []*Sample, c string, inSync func(phase string) bool, heap bool) stat {
	peak := map[int]float64{}
	for _, s := range ss {
		if s.Contender == c && inSync(s.Phase) && s.Error == "" {
			v := float64(s.PeakRSS)
			if heap {
				v = float64(s.PeakHeap)
			}
			if v > 0 { // 0: not measured (samples from before heaps were)
				peak[s.Rep] = max(peak[s.Rep], v)
			}
		}
	}
	var peaks []float64
	for _, p := range peak {
		peaks = append(peaks, p)
	}
	return statOf(peaks)
}

// inSync are the phases that keep a cluster of parents only in sync;
// amongOthers those with unrelated objects present.
func inSync(phase string) bool { return phase != "cold" && !amongOthers(phase) }

func amongOthers(phase string) bool { return strings.HasPrefix(phase, "others") }

func summarize(res *Results) *summary {
	sum := &summary{res: res}
	for _, n := range res.Sizes {
		if z, ok := sizeOf(res, n); ok {
			z.Targets = targets(z)
			sum.sizes = append(sum.sizes, z)
		}
	}
	if res.FixedN > 0 {
		if z, ok := sizeOf(res, res.FixedN); ok {
			sum.fixed = &z
		}
	}
	return sum
}

// sizeOf is the figures of every contender at N; ok is false where none
// ran (-only of graph depth alone).
func sizeOf(res *Results, n int) (_ sizeSummary, ok bool) {
	names := []string{resyncdName, resyncdServerName, resyncdGraphName, resyncdTwoName, resyncdOneNSName, crName, cr8Name, floorName, listName,
		resyncdName + baselineSuffix, resyncdGraphName + baselineSuffix}
	var ss []*Sample
	for _, s := range res.Samples {
		if s.N == n {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		return sizeSummary{}, false
	}
	z := sizeSummary{N: n, Cold: map[string]stat{}, ColdFailed: map[string]int{}, ColdLimit: map[string]string{}, Steady: map[string]steadyFig{}, ColdRSS: map[string]stat{}, SyncRSS: map[string]stat{}, SyncHeap: map[string]stat{}, Drift: map[string]driftFig{}}
	for _, c := range names {
		z.Cold[c] = pick(ss, c, "cold", func(s *Sample) float64 { return s.Seconds })
		for _, s := range ss {
			if s.Contender == c && s.Phase == "cold" && s.Error != "" {
				z.ColdFailed[c]++
				if m := ranOut.FindStringSubmatch(s.Error); m != nil {
					z.ColdLimit[c] = m[1]
				}
			}
		}
		z.Steady[c] = trafficFig(ss, c, "steady")
		if c == resyncdName || c == resyncdServerName || c == resyncdGraphName || c == resyncdTwoName {
			z.Steady[c+firstSuffix] = trafficFig(ss, c, "first")
		}
		z.ColdRSS[c] = pick(ss, c, "cold", func(s *Sample) float64 { return float64(s.PeakRSS) })
		z.SyncRSS[c] = peakPerRep(ss, c, inSync, false)
		z.SyncHeap[c] = peakPerRep(ss, c, inSync, true)
		d := func(f func(*Sample) float64) stat { return pick(ss, c, "drift", f) }
		z.Drift[c] = driftFig{
			Drifted:      d(func(s *Sample) float64 { return float64(s.Drifted) }),
			ChildWrites:  d(func(s *Sample) float64 { return s.Traffic.ChildWrites }),
			StatusWrites: d(func(s *Sample) float64 { return s.Traffic.StatusWrites }),
			StillDrifted: d(func(s *Sample) float64 { return float64(s.StillDrifted) }),
			AgainWrites:  pick(ss, c, "again", func(s *Sample) float64 { return s.Traffic.Writes() }),
		}
	}
	return z, true
}

// ranOut finds, in a run's error, the time it had to converge.
var ranOut = regexp.MustCompile(errNotConverged.Error() + ` in (\S+)`)

func ratio(a, b stat) float64 { return a.Median / b.Median }

// measured is cs without the contenders that did not run at z.N (make
// bench runs only those a target is on above -all-up-to, bench-scale
// those it names).
func (z sizeSummary) measured(cs ...string) []string {
	return slices.DeleteFunc(cs, func(c string) bool {
		return z.SyncRSS[c].Count == 0 && z.Cold[c].Count == 0 && z.ColdFailed[c] == 0 && z.Steady[c].Pass.Count == 0
	})
}

// requestsGot is the steady pass's requests but WATCHes: the median
// pass's and, where another pass's differ, the most of any, which the
// target is judged on; and any WATCH the API server counted beside them,
// which the target is not judged on: resyncd opens none, and the server
// counts other clients' requests to the same collections too.
func requestsGot(st steadyFig) string {
	got := fmt.Sprintf("%.0f requests, %.0f LIST, %.0f writes", st.Polled.Median, st.Lists.Median, st.Writes.Median)
	if st.Polled.Max != st.Polled.Median || st.Lists.Max != st.Lists.Median || st.Writes.Max != st.Writes.Median {
		got += fmt.Sprintf("; at most %.0f requests, %.0f LIST, %.0f writes", st.Polled.Max, st.Lists.Max, st.Writes.Max)
	}
	if st.Watches.Max > 0 {
		got += fmt.Sprintf("; beside them %.0f WATCH in a pass, not resyncd's", st.Watches.Max)
	}
	return got
}

func targets(z sizeSummary) []target {
	var ts []target
	st := z.Steady[resyncdName]
	limit := 3*math.Ceil(float64(z.N)/500) + 3
	ts = append(ts, target{
		What: "steady pass: requests, all LIST, no write",
		Want: fmt.Sprintf("≤ %.0f, all LIST, 0 writes", limit),
		Got:  requestsGot(st),
		Met:  st.Polled.Max <= limit && st.Other.Max == 0 && st.Writes.Max == 0,
	})
	rf := ratio(z.Cold[resyncdName], z.Cold[floorName])
	ts = append(ts, target{What: "cold convergence against the raw-SSA floor", Want: "≤ 1.1×",
		Got: fmt.Sprintf("%s (controller-runtime, 1 worker: %s; 8 workers: %s)", times(z.Cold[resyncdName], z.Cold[floorName]),
			times(z.Cold[resyncdName], z.Cold[crName]), times(z.Cold[resyncdName], z.Cold[cr8Name])), Met: rf <= 1.1})
	rr := ratio(z.SyncRSS[resyncdName], z.SyncRSS[listName])
	ts = append(ts, target{What: "peak RSS keeping the cluster in sync, against the raw paged LIST", Want: "≤ 1.0×",
		Got: fmt.Sprintf("%s (%s MiB against %s; heap %s MiB against %s)", times(z.SyncRSS[resyncdName], z.SyncRSS[listName]),
			num(mib(z.SyncRSS[resyncdName]), "%.0f"), num(mib(z.SyncRSS[listName]), "%.0f"),
			num(mib(z.SyncHeap[resyncdName]), "%.0f"), num(mib(z.SyncHeap[listName]), "%.0f")), Met: rr <= 1.0})
	rl := ratio(st.Pass, z.Steady[listName].Pass)
	ts = append(ts, target{What: "steady pass against the raw paged LIST", Want: "≤ 1.2×", Got: fmt.Sprintf("%.2f×", rl), Met: rl <= 1.2})
	rs := st.OverServer.Median
	ts = append(ts, target{What: "steady pass against the API server's own time serving its LISTs", Want: "≤ 1.2×",
		Got: fmt.Sprintf("%s over the passes, each against the server's time in it; medians %.3f s against %.3f s",
			spreadTimes(st.OverServer), st.Pass.Median, st.Server.Median), Met: rs <= 1.2})
	ts = append(ts, graphTargets(z)...)
	ts = append(ts, baselineTargets(z)...)
	d := z.Drift[resyncdName]
	ts = append(ts, target{
		What: "drift: child writes = drifted children, all repaired in one pass",
		Want: "writes = drifted, 0 left",
		Got: fmt.Sprintf("%.0f drifted, %.0f child writes, %.0f left, %.0f writes in the pass after",
			d.Drifted.Median, d.ChildWrites.Median, d.StillDrifted.Max, d.AgainWrites.Max),
		Met: d.ChildWrites.Max == d.Drifted.Max && d.ChildWrites.Min == d.Drifted.Min && d.StillDrifted.Max == 0 && d.AgainWrites.Max == 0,
	})
	return ts
}

// graphTargets hold the HttpService graph to the built-in renderer it
// declares again.
func graphTargets(z sizeSummary) []target {
	g, r := z.Steady[resyncdGraphName], z.Steady[resyncdName]
	if g.Pass.Count == 0 {
		return nil // not run (make bench-scale)
	}
	rs, rc, rr := ratio(g.Pass, r.Pass), ratio(z.Cold[resyncdGraphName], z.Cold[resyncdName]), ratio(z.SyncRSS[resyncdGraphName], z.SyncRSS[resyncdName])
	return []target{
		{What: "graph: steady pass against the built-in renderer", Want: "≤ 1.2×, 0 writes",
			Got: fmt.Sprintf("%.2f×, %.0f writes", rs, g.Writes.Max), Met: rs <= 1.2 && g.Writes.Max == 0},
		{What: "graph: cold convergence against the built-in renderer", Want: "≤ 1.1×", Got: fmt.Sprintf("%.2f×", rc), Met: rc <= 1.1},
		{What: "graph: peak RSS in sync against the built-in renderer", Want: "≤ 1.2×", Got: fmt.Sprintf("%.2f×", rr), Met: rr <= 1.2},
	}
}

// baselineTargets hold the build measured to the -baseline build beside
// it, for the built-in renderer and the graph: no worse, within the noise
// of a shared machine.
func baselineTargets(z sizeSummary) []target {
	var ts []target
	for _, c := range []string{resyncdName, resyncdGraphName} {
		b := c + baselineSuffix
		if z.Steady[b].Pass.Count == 0 {
			continue
		}
		rs, rc, rr := ratio(z.Steady[c].Pass, z.Steady[b].Pass), ratio(z.Cold[c], z.Cold[b]), ratio(z.SyncRSS[c], z.SyncRSS[b])
		ts = append(ts,
			target{What: labels[c] + ": steady pass against the baseline build", Want: "≤ 1.1×", Got: fmt.Sprintf("%.2f×", rs), Met: rs <= 1.1},
			target{What: labels[c] + ": cold convergence against the baseline build", Want: "≤ 1.1×", Got: fmt.Sprintf("%.2f×", rc), Met: rc <= 1.1},
			target{What: labels[c] + ": peak RSS in sync against the baseline build", Want: "≤ 1.1×", Got: fmt.Sprintf("%.2f×", rr), Met: rr <= 1.1})
	}
	return ts
}

var labels = map[string]string{
	resyncdName + baselineSuffix:      "resyncd, baseline build",
	resyncdGraphName + baselineSuffix: "resyncd, HttpService as a graph, baseline build",
	resyncdName:                       "resyncd",
	resyncdName + firstSuffix:         "resyncd, first pass after a start",
	resyncdServerName:                 "resyncd, driftCheck server",
	resyncdServerName + firstSuffix:   "resyncd, driftCheck server, first pass",
	resyncdGraphName:                  "resyncd, HttpService as a graph",
	resyncdGraphName + firstSuffix:    "resyncd, HttpService as a graph, first pass",
	resyncdTwoName:                    "resyncd, two clusters of N/2",
	resyncdOneNSName:                  "resyncd, N parents in one namespace",
	crName:                            "controller-runtime",
	cr8Name:                           "controller-runtime, 8 workers",
	floorName:                         "raw-SSA floor",
	listName:                          "raw paged LIST",
}

func num(s stat, format string) string {
	if math.IsNaN(s.Median) {
		return "—"
	}
	return fmt.Sprintf(format, s.Median)
}

func spread(s stat, format string) string {
	if math.IsNaN(s.Median) {
		return "—"
	}
	if s.Min == s.Max {
		return fmt.Sprintf(format, s.Median)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
}

func times(a, b stat) string {
	r := ratio(a, b)
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", r)
}

// spreadTimes is a stat of ratios as spread writes it; "—" where any had
// nothing to be set against (Inf, or NaN, which sorts first).
func spreadTimes(s stat) string {
	if math.IsInf(s.Max, 0) || math.IsNaN(s.Max) || math.IsNaN(s.Min) {
		return "—"
	}
	return spread(s, "%.2f×")
}

func mib(s stat) stat {
	return stat{Median: s.Median / (1 << 20), Min: s.Min / (1 << 20), Max: s.Max / (1 << 20), Count: s.Count}
}

func kib(s stat) stat {
	return stat{Median: s.Median / 1024, Min: s.Min / 1024, Max: s.Max / 1024, Count: s.Count}
}

// tables renders the figures of every size as Markdown tables.
func (sum *summary) tables() string {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	for _, z := range sum.sizes {
		p("### N = %d\n\n", z.N)
		p("Cold convergence: every HttpService new, no child, no status, until every child exists and every status is written.\n\n")
		p("| contender | seconds, median (range) | against the floor | against controller-runtime | against controller-runtime, 8 workers |\n|---|---|---|---|---|\n")
		for _, c := range z.measured(resyncdName, resyncdServerName, resyncdGraphName, crName, cr8Name, floorName) {
			secs := spread(z.Cold[c], "%.1f")
			if f := z.ColdFailed[c]; f > 0 {
				secs += fmt.Sprintf("; %d run(s) failed or did not converge", f)
				if l := z.ColdLimit[c]; l != "" {
					secs += " in " + l
				}
			}
			p("| %s | %s | %s | %s | %s |\n", labels[c], secs, times(z.Cold[c], z.Cold[floorName]), times(z.Cold[c], z.Cold[crName]), times(z.Cold[c], z.Cold[cr8Name]))
		}
		p("\nSteady pass, everything in sync: a pass of a running resyncd, the first pass after a start (nothing remembered),\n")
		p("controller-runtime's restart until every parent is reconciled, and the raw LIST:\n\n")
		p("| contender | requests | LIST | WATCH | writes | dry runs | KiB received | seconds | against the raw LIST | server's LIST seconds | against the server |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range z.measured(resyncdName, resyncdName+firstSuffix, resyncdServerName, resyncdServerName+firstSuffix,
			resyncdGraphName, resyncdGraphName+firstSuffix, resyncdOneNSName, crName, cr8Name, listName) {
			s := z.Steady[c]
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", labels[c], num(s.Requests, "%.0f"), num(s.Lists, "%.0f"), num(s.Watches, "%.0f"),
				num(s.Writes, "%.0f"), num(s.DryRuns, "%.0f"), num(kib(s.Bytes), "%.0f"), spread(s.Pass, "%.2f"), times(s.Pass, z.Steady[listName].Pass),
				num(s.Server, "%.3f"), spreadTimes(s.OverServer))
		}
		p("\nPeak RSS: of the cold process, and of the processes that keep the cluster in sync (resyncd: the `resyncd run`\n")
		p("of the steady and drift passes; controller-runtime: its restarts; the highest in each repetition):\n\n")
		p("| contender | cold, MiB | in sync, MiB | in sync, heap, MiB | in sync, against the raw LIST | in sync, against controller-runtime |\n|---|---|---|---|---|---|\n")
		for _, c := range z.measured(resyncdName, resyncdServerName, resyncdGraphName, resyncdOneNSName, crName, cr8Name, floorName, listName) {
			p("| %s | %s | %s | %s | %s | %s |\n", labels[c], spread(mib(z.ColdRSS[c]), "%.0f"), spread(mib(z.SyncRSS[c]), "%.0f"),
				spread(mib(z.SyncHeap[c]), "%.0f"), times(z.SyncRSS[c], z.SyncRSS[listName]), times(z.SyncRSS[c], z.SyncRSS[crName]))
		}
		if z.Steady[resyncdName+baselineSuffix].Pass.Count+z.Steady[resyncdGraphName+baselineSuffix].Pass.Count > 0 {
			p("\nA/B: the build measured against the -baseline build, side by side in this run:\n\n")
			p("| contender | steady pass, seconds | baseline | ratio | cold, seconds | baseline | ratio | in sync, MiB | baseline | ratio |\n|---|---|---|---|---|---|---|---|---|---|\n")
			for _, c := range []string{resyncdName, resyncdGraphName} {
				b := c + baselineSuffix
				if z.Steady[b].Pass.Count == 0 {
					continue
				}
				p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", labels[c], spread(z.Steady[c].Pass, "%.2f"), spread(z.Steady[b].Pass, "%.2f"), times(z.Steady[c].Pass, z.Steady[b].Pass),
					spread(z.Cold[c], "%.1f"), spread(z.Cold[b], "%.1f"), times(z.Cold[c], z.Cold[b]),
					spread(mib(z.SyncRSS[c]), "%.0f"), spread(mib(z.SyncRSS[b]), "%.0f"), times(z.SyncRSS[c], z.SyncRSS[b]))
			}
		}
		p("\nDrift: %s of the children changed by another writer (Deployments scaled, Services' targetPort changed), then one run:\n\n", pct(sum.res.Drift))
		p("| contender | drifted | child writes | status writes | left drifted | writes in the pass after |\n|---|---|---|---|---|---|\n")
		for _, c := range z.measured(resyncdName, resyncdServerName, resyncdGraphName, crName, cr8Name) {
			d := z.Drift[c]
			p("| %s | %s | %s | %s | %s | %s |\n", labels[c], num(d.Drifted, "%.0f"), spread(d.ChildWrites, "%.0f"), spread(d.StatusWrites, "%.0f"),
				spread(d.StillDrifted, "%.0f"), spread(d.AgainWrites, "%.0f"))
		}
		if len(z.measured(resyncdTwoName)) > 0 {
			twoClusters(p, z)
		}
		p("\nTargets:\n\n%s\n", targetTable(z.Targets))
	}
	return b.String()
}

// twoClusters renders one resyncd keeping two clusters of N/2 against one
// of N.
func twoClusters(p func(string, ...any), z sizeSummary) {
	one, two := z.Steady[resyncdName], z.Steady[resyncdTwoName]
	p("\nTwo clusters: one resyncd keeps N/2 parents in each of two control planes, against one cluster of N\n")
	p("(its pass is its slower cluster's; requests and bytes are both API servers'):\n\n")
	p("| | one cluster of N | two clusters of N/2 | two against one |\n|---|---|---|---|\n")
	p("| cold convergence, seconds | %s | %s | %s |\n", spread(z.Cold[resyncdName], "%.1f"), spread(z.Cold[resyncdTwoName], "%.1f"), times(z.Cold[resyncdTwoName], z.Cold[resyncdName]))
	p("| steady pass, seconds | %s | %s | %s |\n", spread(one.Pass, "%.2f"), spread(two.Pass, "%.2f"), times(two.Pass, one.Pass))
	p("| steady pass, requests | %s | %s | %s |\n", num(one.Requests, "%.0f"), num(two.Requests, "%.0f"), times(two.Requests, one.Requests))
	p("| steady pass, KiB received | %s | %s | %s |\n", num(kib(one.Bytes), "%.0f"), num(kib(two.Bytes), "%.0f"), times(two.Bytes, one.Bytes))
	p("| peak RSS cold, MiB | %s | %s | %s |\n", spread(mib(z.ColdRSS[resyncdName]), "%.0f"), spread(mib(z.ColdRSS[resyncdTwoName]), "%.0f"), times(z.ColdRSS[resyncdTwoName], z.ColdRSS[resyncdName]))
	p("| peak RSS in sync, MiB | %s | %s | %s |\n", spread(mib(z.SyncRSS[resyncdName]), "%.0f"), spread(mib(z.SyncRSS[resyncdTwoName]), "%.0f"), times(z.SyncRSS[resyncdTwoName], z.SyncRSS[resyncdName]))
}

// targetTable renders targets as a Markdown table, each marked met or
// not.
func targetTable(targets []target) string {
	var b strings.Builder
	b.WriteString("| target | wanted | measured | met |\n|---|---|---|---|\n")
	for _, t := range targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.What, t.Want, t.Got, met)
	}
	return b.String()
}

// scale renders, when the run has more than one N, what a steady pass
// costs per parent at each N and what each parent more costs between
// two Ns: a per-parent figure that grows with N is a term that grows
// faster than linearly.
func (sum *summary) scale() string {
	if len(sum.sizes) < 2 {
		return ""
	}
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("### Scale\n\n")
	p("Per parent at each N (steady pass, the bytes the API server sent for it, peak RSS in sync), and the slope\n")
	p("to the next N: what each parent more adds. A per-parent figure that grows with N grows faster than linearly.\n\n")
	p("| contender | N | pass, µs a parent | slope, µs a parent | KiB a parent | slope, KiB a parent | RSS in sync, MiB | slope, KiB a parent |\n|---|---|---|---|---|---|---|---|\n")
	// f formats v, or "—" when the figures behind it are missing.
	f := func(format string, v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "—"
		}
		return fmt.Sprintf(format, v)
	}
	for _, c := range []string{resyncdName, resyncdOneNSName, listName, crName} {
		if c == resyncdOneNSName && !slices.ContainsFunc(sum.sizes, func(z sizeSummary) bool { return z.SyncRSS[c].Count > 0 }) {
			continue
		}
		for i, z := range sum.sizes {
			n := float64(z.N)
			st, rss := z.Steady[c], z.SyncRSS[c]
			slopePass, slopeBytes, slopeRSS := "", "", ""
			if i+1 < len(sum.sizes) {
				y := sum.sizes[i+1]
				dn := float64(y.N - z.N)
				slopePass = f("%.0f", (y.Steady[c].Pass.Median-st.Pass.Median)/dn*1e6)
				slopeBytes = f("%.2f", (y.Steady[c].Bytes.Median-st.Bytes.Median)/dn/1024)
				slopeRSS = f("%.1f", (y.SyncRSS[c].Median-rss.Median)/dn/1024)
			}
			p("| %s | %d | %s | %s | %s | %s | %s | %s |\n", labels[c], z.N, f("%.0f", st.Pass.Median/n*1e6), slopePass,
				f("%.2f", st.Bytes.Median/n/1024), slopeBytes, f("%.0f", rss.Median/(1<<20)), slopeRSS)
		}
	}
	p("\n")
	if ts := sum.scaleTargets(); len(ts) > 0 {
		p("Targets:\n\n%s\n", targetTable(ts))
	}
	return b.String()
}

// rssSlopeLimit is the most, in KiB, that each parent more may add to
// resyncd's peak RSS in sync from N = 5,000 on: what stays between passes
// is tens of bytes a child, and a pass holds one namespace.
const rssSlopeLimit = 1.5

// scaleTargets are the targets of the slope of resyncd's peak RSS in sync
// between each two Ns from 5,000 on.
func (sum *summary) scaleTargets() []target {
	var ts []target
	for i := 0; i+1 < len(sum.sizes); i++ {
		z, y := sum.sizes[i], sum.sizes[i+1]
		if z.N < 5000 {
			continue
		}
		slope := (y.SyncRSS[resyncdName].Median - z.SyncRSS[resyncdName].Median) / float64(y.N-z.N) / 1024
		ts = append(ts, target{What: fmt.Sprintf("peak RSS in sync: slope from N = %d to %d", z.N, y.N),
			Want: fmt.Sprintf("≤ %.1f KiB a parent", rssSlopeLimit), Got: fmt.Sprintf("%.2f KiB a parent", slope),
			Met: !math.IsNaN(slope) && slope <= rssSlopeLimit})
	}
	return ts
}

func pct(f float64) string { return fmt.Sprintf("%g%%", f*100) }

// markdown is docs/benchmarks.md: how the figures were made, then the figures.
func (sum *summary) markdown(jsonPath string, plots []figure) string {
	r := sum.res
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("%s", docIntro)
	p("## Latest run\n\n")
	p("- Date: %s; %d repetitions of each measurement, figures are medians; the bench took %.0f s.\n", r.Date, r.Reps, r.Seconds)
	p("- Machine: %d CPUs (%s), %s memory, Linux %s.\n", r.Machine.CPUs, r.Machine.Model, r.Machine.Memory, r.Machine.Kernel)
	p("- Versions: %s; resyncd %s (commit %s); %s; controller-runtime %s.\n", r.Versions.KubeAPIServer, r.Versions.Resyncd,
		r.Versions.Commit, r.Versions.Go, r.Versions.ControllerRuntime)
	if jsonPath != "" {
		p("- Every sample: [`%s`](../%s).\n", filepath.ToSlash(jsonPath), filepath.ToSlash(jsonPath))
	}
	p("\n%s", plotsSection(plots))
	p("%s", sum.fixedPart())
	p("%s", sum.tables())
	p("%s", sum.scale())
	p("%s", sum.tradeOff())
	p("%s", sum.graphDepth())
	p("%s", sum.ring())
	p("%s", sum.kro())
	return b.String()
}
