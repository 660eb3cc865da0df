package main

import (
	"bytes"
	"fmt"
	"math"
)

// depthFig is one graph's figures over the runs that converged.
type depthFig struct {
	g                      depthGraph
	passes, secs, passSecs stat
	// failed counts the runs that did not converge; firstError says why
	// the first did.
	failed     int
	firstError string
}

func depthFigs(gd *GraphDepth) []depthFig {
	var out []depthFig
	for _, g := range depthGraphs {
		f := depthFig{g: g}
		var passes, secs, passSecs []float64
		for _, r := range gd.Runs {
			if r.Graph != g.name {
				continue
			}
			if r.Error != "" {
				if f.failed++; f.firstError == "" {
					f.firstError = r.Error
				}
				continue
			}
			n, s, ps := r.converging()
			passes, secs, passSecs = append(passes, float64(n)), append(secs, s), append(passSecs, ps)
		}
		f.passes, f.secs, f.passSecs = statOf(passes), statOf(secs), statOf(passSecs)
		out = append(out, f)
	}
	return out
}

// graphDepth renders what depth costs a graph's convergence.
func (sum *summary) graphDepth() string {
	gd := sum.res.GraphDepth
	if gd == nil {
		return ""
	}
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("### Graph depth, at N = %d\n\n", gd.N)
	p("N WebApps, new, converged by `resyncd once` run again until a pass writes nothing, under a graph one deep\n")
	p("(`testdata/graphs/flat.yaml`: four children, each reading only the parent) and under one four deep\n")
	p("(`testdata/graphs/chain.yaml`: the same children, each reading the live fields of the one before, the last the\n")
	p("Service's clusterIP); passes and seconds are those of the passes that wrote, wall time from exec to exit, and the\n")
	p("passes' durations as resyncd timed them:\n\n")
	p("| graph | depth | passes to converge | seconds, median (range) | resyncd's pass seconds | ms a parent | against depth 1 |\n")
	p("|---|---|---|---|---|---|---|\n")
	figs := depthFigs(gd)
	flat := figs[0]
	for _, f := range figs {
		passes := spread(f.passes, "%.0f")
		if f.failed > 0 {
			passes += fmt.Sprintf("; %d run(s) did not converge: %s", f.failed, f.firstError)
		}
		perParent := stat{Median: f.secs.Median / float64(max(gd.N, 1)) * 1000}
		p("| `%s.yaml` | %d | %s | %s | %s | %s | %s |\n", f.g.name, f.g.depth, passes, spread(f.secs, "%.1f"),
			spread(f.passSecs, "%.1f"), num(perParent, "%.2f"), times(f.secs, flat.secs))
	}
	p("\n%s\n\n", depthVerdict(figs))
	return b.String()
}

// depthVerdict says in a sentence what the figures mean.
func depthVerdict(figs []depthFig) string {
	for _, f := range figs {
		if f.failed > 0 {
			return fmt.Sprintf("At depth %d the graph did not converge in %d of its runs: a finding, not a figure.", f.g.depth, f.failed)
		}
	}
	flat, chain := figs[0], figs[len(figs)-1]
	switch {
	case math.IsNaN(chain.passes.Median) || math.IsNaN(flat.passes.Median):
		return "Too few runs converged for a comparison."
	case chain.passes.Max <= flat.passes.Max:
		return fmt.Sprintf("At depth %d the graph converges in as many passes as at depth %d (%s): a child that reads "+
			"another's live fields is rendered from the API server's answer to that write and written in the same job, so depth "+
			"adds no pass, only the parent's renders again after each write another child reads (%s the time).",
			chain.g.depth, flat.g.depth, spread(chain.passes, "%.0f"), times(chain.secs, flat.secs))
	default:
		return fmt.Sprintf("At depth %d the graph takes %s passes where at depth %d it takes %s: children that read "+
			"another's live fields wait for a later pass (%s the time).",
			chain.g.depth, spread(chain.passes, "%.0f"), flat.g.depth, spread(flat.passes, "%.0f"), times(chain.secs, flat.secs))
	}
}
