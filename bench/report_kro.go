package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"
)

// The kro figure's targets, against kro with its chart's defaults.
const (
	kroRSSTarget      = 0.5 // resyncd's peak RSS against kro's
	kroColdTarget     = 1.0 // resyncd's cold convergence against kro's
	kroChurnCPUTarget = 0.5 // resyncd's own CPU under churn against kro's
)

func init() {
	labels[kroName] = "kro, its chart's defaults"
	labels[kroTunedName] = "kro, its tuning page's settings"
}

// kroFigs is one N's figures, by contender: its largest RSS over the
// figure (at convergence, in the quiet window, under churn), its cold
// samples by graph, its quiet and churn windows.
type kroFigs struct {
	at    *KroAt
	fast  string // resyncd at the shorter interval
	slow  string // resyncd at the longer
	rss   map[string]float64
	cold  map[string]*KroCold // contender/graph
	quiet map[string]*ChurnSample
	churn map[string]*ChurnSample
}

func kroFigsOf(kr *KroRun, at *KroAt) kroFigs {
	f := kroFigs{at: at, rss: map[string]float64{}, cold: map[string]*KroCold{}, quiet: map[string]*ChurnSample{}, churn: map[string]*ChurnSample{}}
	for name, iv := range kr.Intervals {
		if f.fast == "" || iv < kr.Intervals[f.fast] {
			f.fast = name
		}
		if f.slow == "" || iv > kr.Intervals[f.slow] {
			f.slow = name
		}
	}
	peak := func(c string, v int64) { f.rss[c] = math.Max(f.rss[c], float64(v)) }
	for _, c := range at.Cold {
		f.cold[c.Contender+"/"+c.Graph] = c
		if c.Graph == kroFlat.name {
			peak(c.Contender, c.PeakRSS)
		}
	}
	for _, w := range at.Quiet {
		f.quiet[w.Contender] = w
		peak(w.Contender, w.PeakRSS)
	}
	if at.Churn != nil {
		for _, w := range at.Churn.Windows {
			f.churn[w.Contender] = w
			peak(w.Contender, w.PeakRSS)
		}
	}
	return f
}

// kroRatio is a/b: NaN where either is not measured, 1 where both are 0
// (the same), +Inf where only b is.
func kroRatio(a, b float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.NaN()
	case a == 0 && b == 0:
		return 1
	case b == 0:
		return math.Inf(1)
	}
	return a / b
}

func ratioOr(r float64) string {
	switch {
	case math.IsNaN(r):
		return "—"
	case math.IsInf(r, 1):
		return "∞"
	}
	return fmt.Sprintf("%.2f×", r)
}

// hourly is v over a window of s seconds, scaled to an hour.
func hourly(v, s float64) float64 { return v / s * 3600 }

// coldSeconds is a cold run's seconds, NaN if it failed or is missing.
func (f kroFigs) coldSeconds(c, graph string) float64 {
	if s := f.cold[c+"/"+graph]; s != nil && s.Error == "" {
		return s.Seconds
	}
	return math.NaN()
}

func (f kroFigs) targets() []target {
	var ts []target
	if f.cold[kroName+"/"+kroFlat.name] != nil || f.cold[f.fast+"/"+kroFlat.name] != nil {
		ts = f.flatTargets()
	}
	if c := f.cold[f.fast+"/"+kroChain.name]; c != nil {
		theirs := "kro's: not run here (make bench-kro runs it)"
		if f.cold[kroName+"/"+kroChain.name] != nil {
			theirs = "kro " + seconds(f.coldSeconds(kroName, kroChain.name)) + " s"
		}
		ts = append(ts, target{What: "the four-deep chain converges in one pass under resyncd", Want: "1 pass",
			Got: fmt.Sprintf("%d (%s s; %s)", c.Passes, seconds(f.coldSeconds(f.fast, kroChain.name)), theirs),
			Met: c.Error == "" && c.Passes == 1})
	}
	return ts
}

// flatTargets are the targets on the flat graph's figures.
func (f kroFigs) flatTargets() []target {
	var ts []target
	resyncdRSS := math.Max(f.rss[f.fast], f.rss[f.slow])
	r := math.NaN()
	if resyncdRSS > 0 && f.rss[kroName] > 0 {
		r = resyncdRSS / f.rss[kroName]
	}
	ts = append(ts, target{What: "peak RSS against kro's", Want: fmt.Sprintf("≤ %.1f×", kroRSSTarget),
		Got: fmt.Sprintf("%s (%.0f MiB against %.0f; tuned kro %.0f)", ratioOr(r), resyncdRSS/(1<<20), f.rss[kroName]/(1<<20), f.rss[kroTunedName]/(1<<20)),
		Met: r <= kroRSSTarget})
	if q, k := f.quiet[f.slow], f.quiet[kroName]; q != nil && k != nil {
		r := kroRatio(q.APIServerCPU, k.APIServerCPU)
		ts = append(ts, target{What: "API server CPU in the quiet window, resyncd at " + shortDuration(secondsDuration(q.Interval)) + ", against kro's",
			Want: "≤ 1.0×", Got: fmt.Sprintf("%s (%.2f s against %.2f)", ratioOr(r), q.APIServerCPU, k.APIServerCPU), Met: r <= 1})
		bq, bk := hourly(q.Traffic.Bytes, q.Seconds), hourly(k.Traffic.Bytes, k.Seconds)
		r = kroRatio(bq, bk)
		ts = append(ts, target{What: "bytes the API server sent an hour, quiet, resyncd at " + shortDuration(secondsDuration(q.Interval)) + ", against kro's",
			Want: "≤ 1.0×", Got: fmt.Sprintf("%s (%.1f MiB against %.1f)", ratioOr(r), bq/(1<<20), bk/(1<<20)), Met: r <= 1})
	}
	rc := kroRatio(f.coldSeconds(f.fast, kroFlat.name), f.coldSeconds(kroName, kroFlat.name))
	ts = append(ts, target{What: "cold convergence against kro's", Want: fmt.Sprintf("≤ %.1f×", kroColdTarget),
		Got: fmt.Sprintf("%s (%s s against %s; tuned kro %s s)", ratioOr(rc), seconds(f.coldSeconds(f.fast, kroFlat.name)),
			seconds(f.coldSeconds(kroName, kroFlat.name)), seconds(f.coldSeconds(kroTunedName, kroFlat.name))), Met: rc <= kroColdTarget})
	if k := f.churn[kroName]; k != nil {
		for _, c := range []string{f.fast, f.slow} {
			w := f.churn[c]
			if w == nil {
				continue
			}
			every := shortDuration(secondsDuration(w.Interval))
			r := kroRatio(w.APIServerCPU, k.APIServerCPU)
			ts = append(ts, target{What: "under churn, API server CPU against kro's, resyncd at " + every, Want: "≤ 1.0×",
				Got: fmt.Sprintf("%s (%.2f s against %.2f)", ratioOr(r), w.APIServerCPU, k.APIServerCPU), Met: r <= 1})
			r = kroRatio(w.ProcessCPU, k.ProcessCPU)
			ts = append(ts, target{What: "under churn, resyncd's own CPU against kro's, resyncd at " + every, Want: fmt.Sprintf("≤ %.1f×", kroChurnCPUTarget),
				Got: fmt.Sprintf("%s (%.2f s against %.2f)", ratioOr(r), w.ProcessCPU, k.ProcessCPU), Met: r <= kroChurnCPUTarget})
		}
	}
	return ts
}

// kro renders the kro figure.
func (sum *summary) kro() string {
	kr := sum.res.Kro
	if kr == nil {
		return ""
	}
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("### Against kro\n\n")
	p("kro %s's controller (`bin/kro`, built from the module proxy) and resyncd serving the same ResourceGraphDefinition\n", kr.Version)
	p("(`testdata/graphs/flat-rgd.yaml`: the WebApp graph, four children an instance; `chain-rgd.yaml` four deep), each on a\n")
	p("control plane of its own. kro runs as its Helm chart runs it (`%s`) and with the settings of its\n", strings.Join(kr.Flags[kroName], " "))
	p("controller-tuning page (`%s`); resyncd with `resourceGraphDefinitions.enabled` and the bench's lifted write limits.\n\n", strings.Join(kr.Flags[kroTunedName], " "))
	for _, at := range kr.At {
		f := kroFigsOf(kr, at)
		p("#### N = %d\n\n", at.N)
		p("Cold convergence: N new instances, the controller started on them, until every instance's children and status are\n")
		p("in place (kro: its own metrics count N instances ACTIVE; resyncd: the pass after which the API server holds them);\n")
		p("peak RSS and heap at that moment; requests, writes and bytes as the API server counted them:\n\n")
		p("| contender | graph | seconds | passes | peak RSS, MiB | heap, MiB | requests | writes | MiB sent |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range at.Cold {
			name := tradeOffLabel(c.Contender, kr.Intervals[c.Contender])
			if c.Error != "" {
				p("| %s | %s | failed: %s | | | | | | |\n", name, c.Graph, c.Error)
				continue
			}
			passes := "—"
			if c.Passes > 0 {
				passes = fmt.Sprint(c.Passes)
			}
			p("| %s | %s | %.1f | %s | %.0f | %.0f | %.0f | %.0f | %.2f |\n", name, c.Graph, c.Seconds, passes, float64(c.PeakRSS)/(1<<20),
				float64(c.PeakHeap)/(1<<20), c.Traffic.Requests, c.Traffic.Writes(), c.Traffic.Bytes/(1<<20))
		}
		for _, c := range at.Cold {
			switch {
			case c.BusyAfter > 0:
				p("\n%s: its process went on using CPU for %.0f s after the cold run ended (every instance ACTIVE and in place);\n"+
					"the next cold run and the quiet window waited until it was idle.\n", labels[c.Contender], c.BusyAfter)
			case c.BusyAfter < 0:
				p("\n%s: its process was still using CPU %s after the cold run ended; the figures after it ran beside that.\n",
					labels[c.Contender], kroSettleMax)
			}
		}
		if len(at.Quiet) > 0 {
			p("\nThe quiet window: the flat planes side by side over the same %.0f seconds with everything in sync; CPU is user and\n", at.Quiet[0].Seconds)
			p("system time (/proc/PID/stat), scaled to an hour; requests and bytes those of the WebApp kind, its children's\n")
			p("kinds and kro's own objects:\n\n")
			p("| contender | passes | contender CPU, s | peak RSS, MiB | kube-apiserver CPU, s | etcd CPU, s | CPU s an hour | requests an hour | MiB sent an hour |\n")
			p("|---|---|---|---|---|---|---|---|---|\n")
			for _, w := range at.Quiet {
				name := tradeOffLabel(w.Contender, w.Interval)
				if w.Error != "" {
					p("| %s | failed: %s | | | | | | | |\n", name, w.Error)
					continue
				}
				p("| %s | %s | %.2f | %.0f | %.2f | %.2f | %.0f | %.0f | %.1f |\n", name, w.passes(), w.ProcessCPU, float64(w.PeakRSS)/(1<<20),
					w.APIServerCPU, w.EtcdCPU, hourly(w.APIServerCPU+w.EtcdCPU, w.Seconds), hourly(w.Traffic.Requests, w.Seconds),
					hourly(w.Traffic.Bytes, w.Seconds)/(1<<20))
			}
		}
		if len(at.Latency) > 0 {
			p("\nHow long drift lives, as in the trade-off against watching:\n\n")
			latencyTable(p, at.Latency)
		}
		if ch := at.Churn; ch != nil && len(ch.Windows) > 0 {
			p("Under churn: %d unrelated Deployments on each plane, each written once every %.0f s (%.1f writes a second),\n", ch.Objects, ch.PeriodSeconds, float64(ch.Objects)/ch.PeriodSeconds)
			p("side by side over the same %.0f seconds:\n\n", ch.Windows[0].Seconds)
			churnTable(p, ch.Windows)
			if len(ch.Latency) > 0 {
				p("\nDrift injected meanwhile:\n\n")
				latencyTable(p, ch.Latency)
			}
		}
		p("\nTargets:\n\n%s\n", targetTable(f.targets()))
	}
	return b.String()
}
