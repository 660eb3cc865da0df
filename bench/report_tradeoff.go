package main

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"
)

// tradeOff renders the trade-off against watching: unrelated objects,
// the server's cost over time, and how long drift lives.
func (sum *summary) tradeOff() string {
	to := sum.res.TradeOff
	if to == nil {
		return ""
	}
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("### The trade-off against watching, at N = %d\n\n", to.N)
	sum.others(p, to)
	windows(p, to)
	latency(p, to)
	churnReport(p, to)
	return b.String()
}

// othersRSSTarget is the most resyncd's peak RSS among the unrelated
// objects may be, against controller-runtime's.
const othersRSSTarget = 0.4

func (sum *summary) others(p func(string, ...any), to *TradeOff) {
	var ss []*Sample
	for _, s := range sum.res.Samples {
		if s.N == to.N {
			ss = append(ss, s)
		}
	}
	var z sizeSummary
	for _, y := range sum.sizes {
		if y.N == to.N {
			z = y
		}
	}
	if z.SyncRSS == nil {
		return
	}
	p("**Among unrelated objects.** %d Deployments and %d Services of another team (%d× N), made by another client\n", to.Others, to.Others, to.Others/max(to.N, 1))
	p("and never touched by the contenders, in the same cluster as the N parents; each contender keeps the parents in sync\n")
	p("with and without them (resyncd: passes of one `resyncd run`; controller-runtime: restarts until every parent is\n")
	p("reconciled; the raw LIST beside resyncd). Requests and bytes are a steady pass's, or a restart's:\n\n")
	p("| contender | peak RSS without, MiB | with, MiB | heap without, MiB | with, MiB | requests without | with | KiB received without | with |\n")
	p("|---|---|---|---|---|---|---|---|---|\n")
	with := map[string]stat{}
	for _, c := range []string{resyncdName, crName, cr8Name, listName} {
		with[c] = peakPerRep(ss, c, amongOthers, false)
		heapWith := peakPerRep(ss, c, amongOthers, true)
		before, after := z.Steady[c], trafficFig(ss, c, "others")
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", labels[c], spread(mib(z.SyncRSS[c]), "%.0f"), spread(mib(with[c]), "%.0f"),
			spread(mib(z.SyncHeap[c]), "%.0f"), spread(mib(heapWith), "%.0f"), num(before.Requests, "%.0f"), num(after.Requests, "%.0f"),
			num(kib(before.Bytes), "%.0f"), num(kib(after.Bytes), "%.0f"))
	}
	r, r8 := ratio(with[resyncdName], with[crName]), ratio(with[resyncdName], with[cr8Name])
	met := "met"
	if !(r <= othersRSSTarget) {
		met = "not met"
	}
	p("\nTarget: resyncd's peak RSS among them ≤ %.1f× controller-runtime's (resyncd's fixed part bounds it near ⅓): %.2f× (8 workers: %.2f×), %s.\n\n",
		othersRSSTarget, r, r8, met)
}

// passes is the passes resyncd made in the window, or a dash for a
// contender that makes none.
func (w *WindowSample) passes() string {
	if w.Interval > 0 {
		return fmt.Sprint(w.Passes)
	}
	return "—"
}

// windowFig is one window scaled to an hour.
type windowFig struct {
	w                   *WindowSample
	cpuHour, aboveIdle  float64 // kube-apiserver and etcd, CPU seconds an hour
	requests, bytesHour float64
}

func windows(p func(string, ...any), to *TradeOff) {
	if len(to.Windows) == 0 {
		return
	}
	figs := map[string]windowFig{}
	var idle *WindowSample
	for _, w := range to.Windows {
		if w.Contender == "idle" {
			idle = w
		}
	}
	for _, w := range to.Windows {
		h := 3600 / w.Seconds
		f := windowFig{w: w, cpuHour: (w.APIServerCPU + w.EtcdCPU) * h, requests: w.Traffic.Requests * h, bytesHour: w.Traffic.Bytes * h}
		f.aboveIdle = math.NaN()
		if idle != nil && idle.Error == "" && w.Error == "" {
			f.aboveIdle = f.cpuHour - (idle.APIServerCPU+idle.EtcdCPU)*3600/idle.Seconds
		}
		figs[w.Contender] = f
	}
	p("**What keeping N parents in sync costs the API server over time.** Each contender on its own control plane\n")
	p("(etcd and kube-apiserver), all side by side over the same %.0f-second window with everything in sync, beside an idle\n", to.Windows[0].Seconds)
	p("control plane holding the same objects with no client at all; CPU is each server process's user and system time\n")
	p("(/proc/PID/stat), scaled to an hour; requests and bytes are those to the four collections:\n\n")
	p("| contender | passes in the window | kube-apiserver CPU, s | etcd CPU, s | CPU s an hour | above the idle server, CPU s an hour | requests an hour | MiB sent an hour |\n")
	p("|---|---|---|---|---|---|---|---|\n")
	for _, w := range to.Windows {
		f := figs[w.Contender]
		name := "no client (idle server)"
		if w.Contender != "idle" {
			name = tradeOffLabel(w.Contender, w.Interval)
		}
		if w.Contender == crName {
			name += ", idle (watches open)"
		}
		if w.Error != "" {
			p("| %s | failed: %s | | | | | | |\n", name, w.Error)
			continue
		}
		p("| %s | %s | %.2f | %.2f | %.0f | %s | %.0f | %.1f |\n", name, w.passes(), w.APIServerCPU, w.EtcdCPU, f.cpuHour,
			signed(f.aboveIdle), f.requests, f.bytesHour/(1<<20))
	}
	p("\n%s\n\n", breakEven(to, figs))
}

// breakEven says at which interval polling costs the server what the
// idle watches do, from the first interval's cost per pass.
func breakEven(to *TradeOff, figs map[string]windowFig) string {
	cr, ok := figs[crName]
	var first windowFig
	for _, w := range to.Windows {
		if w.Interval > 0 && w.Passes > 0 {
			first = figs[w.Contender]
			break
		}
	}
	if !ok || first.w == nil || math.IsNaN(first.aboveIdle) || math.IsNaN(cr.aboveIdle) {
		return "Too few figures for a break-even interval."
	}
	perPass := first.aboveIdle * first.w.Seconds / 3600 / float64(first.w.Passes)
	s := fmt.Sprintf("A resyncd pass at N = %d costs the server %.2f CPU seconds above idle (from the %s interval: %s CPU s an hour over %d passes in %.0f s). ",
		to.N, perPass, shortDuration(secondsDuration(first.w.Interval)), signed(first.aboveIdle), first.w.Passes, first.w.Seconds)
	if cr.aboveIdle <= 0 {
		return s + fmt.Sprintf("controller-runtime's open watches cost nothing measurable above the idle server (%s CPU s an hour, within the "+
			"window's noise): at this N, polling costs more than a quiet watch at every interval, %.1f CPU s an hour at 5 minutes; "+
			"a watch's cost comes with change (every event of every watched object, unrelated ones included) and at its start "+
			"(a LIST of every object of its kinds), which this quiet window does not show.", signed(cr.aboveIdle), perPass*12)
	}
	iv := perPass / (cr.aboveIdle / 3600)
	return s + fmt.Sprintf("controller-runtime's open watches cost %.1f CPU s an hour above it: polling costs the same at an interval of %s at this N; "+
		"a pass's cost grows with N, so the break-even interval grows in proportion.", cr.aboveIdle, shortDuration(secondsDuration(iv).Round(time.Second)))
}

func latency(p func(string, ...any), to *TradeOff) {
	if len(to.Latency) == 0 {
		return
	}
	p("**How long drift lives.** Children picked at random are changed (as in the drift figures) at random moments over\n")
	p("a span, while the contender runs as it would in production; a watch of the bench's own sees the drifted object\n")
	p("and then the repaired one in the API server; the figure is the time between:\n\n")
	latencyTable(p, to.Latency)
}

// latencyTable renders drift latencies: each contender's changes, those
// repaired, and how long they lived.
func latencyTable(p func(string, ...any), ls []*LatencySample) {
	p("| contender | changes | repaired | p50, s | p99, s | max, s |\n|---|---|---|---|---|---|\n")
	for _, l := range ls {
		name := tradeOffLabel(l.Contender, l.Interval)
		if l.Error != "" {
			p("| %s | failed: %s | | | | |\n", name, l.Error)
			continue
		}
		p("| %s | %d | %d | %s | %s | %s |\n", name, len(l.Seconds)+l.Unrepaired, len(l.Seconds),
			seconds(quantile(l.Seconds, 0.5)), seconds(quantile(l.Seconds, 0.99)), seconds(quantile(l.Seconds, 1)))
	}
	p("\n")
}

// churnReport renders the trade-off under churn: each plane's cost over
// the window, the crossover, and the drift latency meanwhile.
func churnReport(p func(string, ...any), to *TradeOff) {
	ch := to.Churn
	if ch == nil || len(ch.Windows) == 0 {
		return
	}
	p("**Under churn.** The same N parents in sync, on a control plane of each contender's own with %d unrelated\n", ch.Objects)
	if ch.DeploymentsOnly {
		p("Deployments, while another client writes an annotation to each in turn, once\n")
	} else {
		p("Deployments and as many Services, while another client writes an annotation to each Deployment in turn, once\n")
	}
	p("every %.0f s (N/10): %.1f writes a second asked for. Side by side over the same %.0f-second window, once the churn\n", ch.PeriodSeconds, float64(ch.Objects)/ch.PeriodSeconds, ch.Windows[0].Seconds)
	p("has gone on for a while; CPU is user and system time (/proc/PID/stat), peak RSS the largest sampled each second; bytes are what\n")
	p("the API server sent of the four collections (LIST pages and watch events):\n\n")
	churnTable(p, ch.Windows)
	p("\n%s\n\n", churnCrossover(to))
	if len(ch.Latency) > 0 {
		p("Drift injected meanwhile, as above:\n\n")
		latencyTable(p, ch.Latency)
	}
}

// churnTable renders each plane's cost over a churn window.
func churnTable(p func(string, ...any), ws []*ChurnSample) {
	p("| contender | churn writes a second | passes | contender CPU, s | contender peak RSS, MiB | kube-apiserver CPU, s | etcd CPU, s | MiB sent |\n")
	p("|---|---|---|---|---|---|---|---|\n")
	for _, w := range ws {
		name := tradeOffLabel(w.Contender, w.Interval)
		if w.Error != "" {
			p("| %s | failed: %s | | | | | | |\n", name, w.Error)
			continue
		}
		p("| %s | %.1f | %s | %.2f | %.0f | %.2f | %.2f | %.2f |\n", name, float64(w.Writes)/w.Seconds, w.passes(), w.ProcessCPU,
			float64(w.PeakRSS)/(1<<20), w.APIServerCPU, w.EtcdCPU, w.Traffic.Bytes/(1<<20))
	}
}

// churnNoise is how far apart two control planes doing the same work may
// be: a few percent, seen between idle ones.
const churnNoise = 0.05

// churnCrossover compares the contenders under churn, and, from the quiet
// window beside it, says at what rate of unrelated change a watch starts
// to cost the API server more than polling at resyncd's interval.
func churnCrossover(to *TradeOff) string {
	ch := to.Churn
	var rs, cr *ChurnSample
	for _, w := range ch.Windows {
		switch {
		case w.Error != "":
		case w.Interval > 0 && rs == nil:
			rs = w
		case w.Contender == crName:
			cr = w
		}
	}
	if rs == nil || cr == nil || rs.ProcessCPU <= 0 || cr.ProcessCPU <= 0 {
		return "Too few figures to compare."
	}
	rate := float64(rs.Writes) / rs.Seconds
	s := fmt.Sprintf("At %.1f changes a second, resyncd used %.2f× the CPU of controller-runtime (1 worker) and %.2f× its peak RSS; "+
		"its API server used %.2f× the CPU and sent %.2f× the bytes.", rate, rs.ProcessCPU/cr.ProcessCPU,
		float64(rs.PeakRSS)/float64(max(cr.PeakRSS, 1)), rs.APIServerCPU/cr.APIServerCPU, rs.Traffic.Bytes/max(cr.Traffic.Bytes, 1))
	hour := func(api, etcd, secs float64) float64 { return (api + etcd) * 3600 / secs }
	var quietRS, quietCR *WindowSample
	for _, w := range to.Windows {
		switch {
		case w.Error != "":
		case w.Interval == rs.Interval:
			quietRS = w
		case w.Contender == crName:
			quietCR = w
		}
	}
	if quietRS == nil || quietCR == nil {
		return s
	}
	// The server's CPU an hour under the watch less under polling, quiet
	// and at rate: a line through the two.
	d0 := hour(quietCR.APIServerCPU, quietCR.EtcdCPU, quietCR.Seconds) - hour(quietRS.APIServerCPU, quietRS.EtcdCPU, quietRS.Seconds)
	d1 := hour(cr.APIServerCPU, cr.EtcdCPU, cr.Seconds) - hour(rs.APIServerCPU, rs.EtcdCPU, rs.Seconds)
	churnHour := hour(rs.APIServerCPU, rs.EtcdCPU, rs.Seconds)
	s += fmt.Sprintf(" The servers' CPU an hour, the watch's less polling's at %s: %+.0f s quiet, %+.0f s at this rate (of %.0f s).",
		shortDuration(secondsDuration(rs.Interval)), d0, d1, churnHour)
	switch {
	case math.Abs(d1) < churnNoise*churnHour:
		return s + fmt.Sprintf(" Under churn the difference is within the %.0f%% two control planes differ by: at this rate of unrelated change "+
			"a watch and polling cost the server the same, most of its CPU being the churn's own writes; the crossover is about here.", churnNoise*100)
	case d1 <= d0:
		return s + " The churn did not make the watch cost the server more against polling: no crossover from these two points."
	case d0 >= 0:
		return s + " The watch cost the server more even in the quiet window."
	default:
		where := "beyond the rate measured: extrapolated"
		if d1 > 0 {
			where = "between the two"
		}
		return s + fmt.Sprintf(" On the line through the two, the watch costs the server what polling does at about %.0f unrelated changes a second "+
			"(%s); above it, polling is the cheaper.", rate*-d0/(d1-d0), where)
	}
}

// tradeOffLabel names a contender of the trade-off: resyncd by its
// interval.
func tradeOffLabel(contender string, interval float64) string {
	if interval > 0 {
		return fmt.Sprintf("resyncd, interval %s", shortDuration(secondsDuration(interval)))
	}
	return labels[contender]
}

// quantile is the nearest-rank q-quantile of xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func seconds(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

func signed(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%+.0f", v)
}

func secondsDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
