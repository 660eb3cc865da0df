package main

import (
	"bytes"
	"fmt"
	"math"
	"slices"
)

// The ring figure's targets at N = ringTargetN: what each replica of
// three costs against one replica doing all the work.
const (
	ringTargetN     = 20000
	ringBytesTarget = 0.4
	// ringRSSSlack: each replica's peak RSS may be the fixed part, a
	// replica's share of the one replica's growth above it, and this
	// fraction more.
	ringRSSSlack = 0.1
)

// ringPassFig is one process's figures in the ring figure: its steady
// passes (a replica's alone), and its peak RSS and heap over its run.
type ringPassFig struct {
	Name                                 string
	Parents, Requests, Bytes, Pass, Wall stat
	// First is the first pass's seconds: nothing remembered.
	First     stat
	RSS, Heap float64
}

// ringSizeFig is the ring figure at one N.
type ringSizeFig struct {
	N int
	// One is the single replica; Replicas the ring's, in order; Together
	// the ring's passes started at once.
	One      ringPassFig
	Replicas []ringPassFig
	Together ringPassFig
	// Worst is, figure by figure, the largest of the replicas' medians.
	Worst ringPassFig
	// Failed counts the samples left out of the figures; FirstError says
	// why the first was.
	Failed     int
	FirstError string
}

// ringFig is the figures of samples of process name (contender c, and
// replica, unless empty) in phase.
func ringFig(ss []*Sample, name, c, replica, phase string) ringPassFig {
	var of []*Sample
	for _, s := range ss {
		if s.Contender == c && (replica == "" || s.Replica == replica) {
			of = append(of, s)
		}
	}
	f := func(g func(*Sample) float64) stat { return pick(of, c, phase, g) }
	fig := ringPassFig{Name: name,
		Parents:  f(func(s *Sample) float64 { return float64(s.Parents) }),
		Requests: f(func(s *Sample) float64 { return s.Traffic.Requests }),
		Bytes:    f(func(s *Sample) float64 { return s.Traffic.Bytes }),
		Pass:     f(func(s *Sample) float64 { return s.PassSeconds }),
		Wall:     f(func(s *Sample) float64 { return s.Seconds }),
		First:    pick(of, c, "first", func(s *Sample) float64 { return s.PassSeconds }),
	}
	for _, s := range of {
		fig.RSS, fig.Heap = max(fig.RSS, float64(s.PeakRSS)), max(fig.Heap, float64(s.PeakHeap))
	}
	return fig
}

// ringFigs summarises the ring figure at each N.
func ringFigs(rr *RingRun) []ringSizeFig {
	var out []ringSizeFig
	for _, n := range rr.Sizes {
		var ss []*Sample
		z := ringSizeFig{N: n}
		var replicas []string
		for _, s := range rr.Samples {
			if s.N != n {
				continue
			}
			ss = append(ss, s)
			if s.Error != "" {
				if z.Failed++; z.FirstError == "" {
					z.FirstError = s.Error
				}
			}
			if s.Contender == ringThreeName && s.Replica != ringAll && s.Replica != "" && !slices.Contains(replicas, s.Replica) {
				replicas = append(replicas, s.Replica)
			}
		}
		if len(ss) == 0 {
			continue
		}
		slices.Sort(replicas)
		z.One = ringFig(ss, "1 replica, sharding off", ringOneName, "", "steady")
		z.Worst = ringPassFig{Name: "the largest of the " + fmt.Sprint(len(replicas))}
		for _, r := range replicas {
			f := ringFig(ss, r, ringThreeName, r, "steady")
			z.Replicas = append(z.Replicas, f)
			z.Worst.Parents = worse(z.Worst.Parents, f.Parents)
			z.Worst.Requests = worse(z.Worst.Requests, f.Requests)
			z.Worst.Bytes = worse(z.Worst.Bytes, f.Bytes)
			z.Worst.Pass = worse(z.Worst.Pass, f.Pass)
			z.Worst.RSS, z.Worst.Heap = max(z.Worst.RSS, f.RSS), max(z.Worst.Heap, f.Heap)
			z.Worst.First = worse(z.Worst.First, f.First)
		}
		z.Together = ringFig(ss, "the three at once", ringThreeName, ringAll, "together")
		out = append(out, z)
	}
	return out
}

// worse is the one of a and b with the larger median; a zero stat (no
// figure yet) loses.
func worse(a, b stat) stat {
	if a.Count == 0 || math.IsNaN(a.Median) || b.Median > a.Median {
		return b
	}
	return a
}

// ringTargets are the ring figure's targets at N: each replica's bytes a
// steady pass against the single replica's, and its peak RSS against the
// fixed part (fixed, bytes; the same run's resyncd with a handful of
// parents) plus its share of what the single replica holds above it,
// and ringRSSSlack more. Memory that does not grow with the parents
// cannot be shared, so the bound is on the part that does.
func ringTargets(z ringSizeFig, fixed float64) []target {
	bytesRatio := ratio(z.Worst.Bytes, z.One.Bytes)
	replicas := len(z.Replicas)
	rss := target{What: fmt.Sprintf("peak RSS, each of %d replicas", replicas),
		Want: fmt.Sprintf("≤ (the fixed part + 1/%d of one replica's growth above it) × %.1f", replicas, 1+ringRSSSlack)}
	if fixed > 0 && z.One.RSS > 0 && replicas > 0 {
		bound := (fixed + (z.One.RSS-fixed)/float64(replicas)) * (1 + ringRSSSlack)
		rss.Got = fmt.Sprintf("%.0f MiB against a bound of %.0f (the fixed part %.0f MiB, one replica %.0f)",
			z.Worst.RSS/(1<<20), bound/(1<<20), fixed/(1<<20), z.One.RSS/(1<<20))
		rss.Met = z.Worst.RSS <= bound
	} else {
		rss.Got = fmt.Sprintf("%s MiB; the fixed part not measured in this run (-fixed-n)", mibText(z.Worst.RSS))
	}
	return []target{
		{What: fmt.Sprintf("bytes a steady pass, each of %d replicas against one", replicas),
			Want: fmt.Sprintf("≤ %.1f×", ringBytesTarget), Got: ratioText(bytesRatio), Met: bytesRatio <= ringBytesTarget},
		rss,
	}
}

// mibText is bytes b in MiB; "—" when not measured.
func mibText(b float64) string {
	if b <= 0 || math.IsNaN(b) {
		return "—"
	}
	return fmt.Sprintf("%.0f", b/(1<<20))
}

// ratioText is r as the report writes ratios; "—" when not measured.
func ratioText(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", r)
}

// ring renders one replica against three sharing the work.
func (sum *summary) ring() string {
	rr := sum.res.Ring
	if rr == nil {
		return ""
	}
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("### Replicas sharing the work\n\n")
	p("N HttpServices over N/%d namespaces (`team-0001`, `team-0002`, …), in sync, kept by one `resyncd run` (sharding\n", parentsPerRingNS)
	p("off), then by %d `resyncd run`s sharing the work in a ring of Leases (`sharding.enabled`), formed before the\n", ringReplicas)
	p("parents were loaded, on the same API server with its sharded LIST on. Each replica's pass is started alone, so\n")
	p("that the API server's counts are its own: its first (nothing remembered), then steady passes; then the %d at\n", ringReplicas)
	p("once. Bytes are what the server sent, gzipped above 128 KiB a response. Peak RSS and heap are over each\n")
	p("process's whole run.\n\n")
	for _, z := range ringFigs(rr) {
		p("#### N = %d\n\n", z.N)
		p("| process | parents a pass | requests | KiB received | pass seconds, median (range) | first pass, seconds | peak RSS, MiB | peak heap, MiB |\n")
		p("|---|---|---|---|---|---|---|---|\n")
		row := func(f ringPassFig) {
			rss, heap := "—", "—"
			if f.RSS > 0 {
				rss = fmt.Sprintf("%.0f", f.RSS/(1<<20))
			}
			if f.Heap > 0 {
				heap = fmt.Sprintf("%.0f", f.Heap/(1<<20))
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Name, num(f.Parents, "%.0f"), num(f.Requests, "%.0f"),
				num(kib(f.Bytes), "%.0f"), spread(f.Pass, "%.2f"), num(f.First, "%.2f"), rss, heap)
		}
		row(z.One)
		for _, f := range z.Replicas {
			row(f)
		}
		row(z.Worst)
		t := z.Together
		p("\nThe %d replicas' passes started at once: %s s until the last ended (its own pass %s s), %s requests and %s KiB\n",
			len(z.Replicas), spread(t.Wall, "%.2f"), spread(t.Pass, "%.2f"), num(t.Requests, "%.0f"), num(kib(t.Bytes), "%.0f"))
		p("in all, against %s s, %s requests and %s KiB for the one replica.\n\n", spread(z.One.Pass, "%.2f"), num(z.One.Requests, "%.0f"), num(kib(z.One.Bytes), "%.0f"))
		p("Each replica (the largest figure of the %d) against the one replica: requests %s, bytes %s, pass %s, peak RSS %s.\n\n",
			len(z.Replicas), times(z.Worst.Requests, z.One.Requests), times(z.Worst.Bytes, z.One.Bytes), times(z.Worst.Pass, z.One.Pass),
			ratioText(z.Worst.RSS/z.One.RSS))
		if z.Failed > 0 {
			p("%d sample(s) left out of the figures: %s.\n\n", z.Failed, z.FirstError)
		}
		which := "the target holds at N = 20,000; here for reference"
		if z.N == ringTargetN {
			which = "at this N"
		}
		p("Targets (%s):\n\n%s\n", which, targetTable(ringTargets(z, sum.fixedRSS())))
	}
	return b.String()
}
