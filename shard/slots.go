package shard

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
)

// MaxSlots is the most slots a cluster's namespaces are cut into: the
// units of work that move between replicas. 64 keeps a slot set one word
// and a replica's LIST selector a few dozen ranges at most, and is fine
// enough that a replica joining three others takes about a quarter of the
// namespaces.
const MaxSlots = 64

// Hash is the FNV-1a 64 hash of a namespace's name, as the API server's
// shardRange() computes it over object.metadata.namespace ("" for a
// cluster-scoped object).
func Hash(namespace string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(namespace))
	return h.Sum64()
}

// Layout cuts the hash space of a cluster's namespaces into slots: slot i
// holds the hashes from Bounds[i-1] (0 for the first) up to, not
// including, Bounds[i] (2^64 for the last). FNV-1a's high bits hardly
// depend on a name's last characters (team-01 … team-30 share their top
// 20 bits), so equal ranges of the hash space would put such namespaces
// in one slot: the bounds are cut where the namespaces are (LayoutOf).
// The zero Layout is one slot: the whole cluster.
type Layout struct {
	// Bounds are the first hashes of slots 1 to Slots()-1, ascending.
	Bounds []uint64
}

// LayoutOf cuts the hash space so that each slot holds as many of
// namespaces as the others, give or take one: min(len, MaxSlots) slots,
// each cut half-way between two neighbouring namespaces.
func LayoutOf(namespaces []string) Layout {
	hashes := make([]uint64, 0, len(namespaces))
	for _, ns := range namespaces {
		hashes = append(hashes, Hash(ns))
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	n := len(hashes)
	k := min(n, MaxSlots)
	var l Layout
	for i := 1; i < k; i++ {
		r := i * n / k // the first namespace of slot i
		lo, hi := hashes[r-1], hashes[r]
		l.Bounds = append(l.Bounds, lo+(hi-lo)/2+1)
	}
	return l
}

// Slots is the number of slots of l.
func (l Layout) Slots() int { return len(l.Bounds) + 1 }

// All is every slot of l.
func (l Layout) All() Set { return Set(math.MaxUint64 >> (64 - l.Slots())) }

// SlotOf returns the slot of namespace.
func (l Layout) SlotOf(namespace string) int {
	h := Hash(namespace)
	return sort.Search(len(l.Bounds), func(i int) bool { return l.Bounds[i] > h })
}

// Range returns the hashes of slot i.
func (l Layout) Range(i int) Range {
	r := Range{Hi: math.MaxUint64}
	if i > 0 {
		r.Lo = l.Bounds[i-1]
	}
	if i < len(l.Bounds) {
		r.Hi = l.Bounds[i] - 1
	}
	return r
}

// Counts returns how many of namespaces each slot holds.
func (l Layout) Counts(namespaces []string) []int {
	out := make([]int, l.Slots())
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(namespaces))) {
		out[l.SlotOf(ns)]++
	}
	return out
}

// Stale reports whether l spreads namespaces so much worse than a fresh
// LayoutOf would that it is worth moving work to cut it again: its fullest
// slot holds more than twice, and one more than, the fresh one's.
func (l Layout) Stale(namespaces []string) bool {
	return slices.Max(l.Counts(namespaces)) > 2*slices.Max(LayoutOf(namespaces).Counts(namespaces))+1
}

// Equal reports whether l and o cut the same slots.
func (l Layout) Equal(o Layout) bool { return slices.Equal(l.Bounds, o.Bounds) }

// Set is a set of slots of a Layout, bit i for slot i.
type Set uint64

// Len is the number of slots in s.
func (s Set) Len() int { return bits.OnesCount64(uint64(s)) }

// Range is the hashes from Lo to Hi, both included.
type Range struct{ Lo, Hi uint64 }

// String writes r as the half-open range of the API server's shardRange,
// in its hex: 0x0000000000000000-0x4000000000000000.
func (r Range) String() string { return hexStart(r.Lo) + "-" + hexEnd(r.Hi) }

// Overlaps reports whether r and o share a hash.
func (r Range) Overlaps(o Range) bool { return r.Lo <= o.Hi && o.Lo <= r.Hi }

// Within reports whether every hash of r is in one of rs.
func (r Range) Within(rs []Range) bool {
	for _, o := range rs {
		if o.Lo <= r.Lo && r.Hi <= o.Hi {
			return true
		}
	}
	return false
}

func hexStart(h uint64) string { return fmt.Sprintf("0x%016x", h) }

// hexEnd is the exclusive end after hi: 2^64, with 17 digits, after the
// last hash.
func hexEnd(hi uint64) string {
	if hi == math.MaxUint64 {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", hi+1)
}

// Part is what a replica owns of a cluster: some slots of a layout.
type Part struct {
	Layout Layout
	Slots  Set
}

// Whole is the part of a replica that does all the work.
func Whole() Part { return Part{Slots: Layout{}.All()} }

// IsWhole reports whether p is every namespace.
func (p Part) IsWhole() bool { return p.Slots == p.Layout.All() }

// Has reports whether p holds namespace.
func (p Part) Has(namespace string) bool {
	return p.IsWhole() || p.Slots&(1<<p.Layout.SlotOf(namespace)) != 0
}

// Fraction is the share of the slots p holds, 0 to 1.
func (p Part) Fraction() float64 { return float64(p.Slots.Len()) / float64(p.Layout.Slots()) }

// Ranges returns the hashes of p's slots, neighbours merged, in order.
func (p Part) Ranges() []Range {
	var out []Range
	for i := range p.Layout.Slots() {
		if p.Slots&(1<<i) == 0 {
			continue
		}
		r := p.Layout.Range(i)
		if n := len(out); n > 0 && out[n-1].Hi != math.MaxUint64 && out[n-1].Hi+1 == r.Lo {
			out[n-1].Hi = r.Hi
			continue
		}
		out = append(out, r)
	}
	return out
}

// String lists the ranges of p, "none" for none.
func (p Part) String() string {
	if p.Slots == 0 {
		return "none"
	}
	parts := make([]string, 0, 4)
	for _, r := range p.Ranges() {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ",")
}

// Selector is the LIST shardSelector that selects the objects of p's
// namespaces: "" for the whole cluster, which needs none. A part with no
// slot has no selector: a replica that owns nothing of a cluster LISTs
// nothing there.
func (p Part) Selector() string {
	if p.IsWhole() || p.Slots == 0 {
		return ""
	}
	parts := make([]string, 0, 4)
	for _, r := range p.Ranges() {
		parts = append(parts, fmt.Sprintf("shardRange(object.metadata.namespace, '%s', '%s')", hexStart(r.Lo), hexEnd(r.Hi)))
	}
	return strings.Join(parts, " || ")
}
