package main

import (
	"bytes"
	"fmt"
	"math"
)

// fixedLimit is the most resyncd's peak RSS may be, in MiB, keeping a
// handful of parents in sync: the part of its memory that does not grow
// with what it manages.
const fixedLimit = 35

// fixedPart renders resyncd's memory with -fixed-n parents beside the raw
// LIST's, and its target.
func (sum *summary) fixedPart() string {
	z := sum.fixed
	if z == nil {
		return ""
	}
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("### The fixed part, at N = %d\n\n", z.N)
	p("resyncd keeping %d parents in sync (a cold `resyncd once`, then the steady and drift passes of one `resyncd run`),\n", z.N)
	p("and the raw LIST beside its steady passes: with so few parents, their memory is what a process of each holds\n")
	p("whatever it manages (see What bounds each figure):\n\n")
	p("| contender | cold, MiB | in sync, MiB | in sync, heap, MiB | in sync, against the raw LIST |\n|---|---|---|---|---|\n")
	for _, c := range z.measured(resyncdName, listName) {
		p("| %s | %s | %s | %s | %s |\n", labels[c], spread(mib(z.ColdRSS[c]), "%.0f"), spread(mib(z.SyncRSS[c]), "%.0f"),
			spread(mib(z.SyncHeap[c]), "%.0f"), times(z.SyncRSS[c], z.SyncRSS[listName]))
	}
	p("\nTarget:\n\n%s\n", targetTable([]target{fixedTarget(*z)}))
	return b.String()
}

// fixedTarget holds resyncd's peak RSS in sync with a handful of parents
// to fixedLimit.
func fixedTarget(z sizeSummary) target {
	rss := mib(z.SyncRSS[resyncdName])
	return target{
		What: fmt.Sprintf("peak RSS keeping %d parents in sync (the fixed part)", z.N),
		Want: fmt.Sprintf("≤ %d MiB", fixedLimit),
		Got: fmt.Sprintf("%s MiB (heap %s MiB; the raw LIST %s MiB)", spread(rss, "%.0f"),
			num(mib(z.SyncHeap[resyncdName]), "%.0f"), num(mib(z.SyncRSS[listName]), "%.0f")),
		Met: !math.IsNaN(rss.Median) && rss.Median <= fixedLimit,
	}
}
