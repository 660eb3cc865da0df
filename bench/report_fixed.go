package main

import (
	"bytes"
	"fmt"
	"math"
)

// fixedLimit is the bound the fixed part was first held to, in MiB: kept
// in the record, though only leaving client-go's leader election and
// events behind would reach it.
const fixedLimit = 35

// fixedAgainstList is the most resyncd's peak RSS may be keeping a
// handful of parents in sync, against the raw LIST's with as many: a
// process of the same client-go clients and nothing else.
const fixedAgainstList = 1.1

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
	p("\nTargets:\n\n%s\n", targetTable(fixedTargets(*z)))
	return b.String()
}

// fixedTargets hold resyncd's peak RSS in sync with a handful of parents
// to fixedAgainstList times the raw LIST's, and, for the record, to
// fixedLimit.
func fixedTargets(z sizeSummary) []target {
	rss, list := mib(z.SyncRSS[resyncdName]), mib(z.SyncRSS[listName])
	r := ratio(rss, list)
	return []target{{
		What: fmt.Sprintf("peak RSS keeping %d parents in sync (the fixed part), against the raw LIST's with as many", z.N),
		Want: fmt.Sprintf("≤ %.1f×", fixedAgainstList),
		Got: fmt.Sprintf("%s (%s MiB against %s; heap %s MiB against %s)", ratioText(r), spread(rss, "%.0f"), num(list, "%.0f"),
			num(mib(z.SyncHeap[resyncdName]), "%.0f"), num(mib(z.SyncHeap[listName]), "%.0f")),
		Met: r <= fixedAgainstList,
	}, {
		What: "the same in MiB, the bound first set (kept for the record)",
		Want: fmt.Sprintf("≤ %d MiB", fixedLimit),
		Got:  fmt.Sprintf("%s MiB", spread(rss, "%.0f")),
		Met:  !math.IsNaN(rss.Median) && rss.Median <= fixedLimit,
	}}
}

// fixedRSS is the fixed part's peak RSS in bytes; 0 when the run did
// not measure it.
func (sum *summary) fixedRSS() float64 {
	if sum.fixed == nil || math.IsNaN(sum.fixed.SyncRSS[resyncdName].Median) {
		return 0
	}
	return sum.fixed.SyncRSS[resyncdName].Median
}
