package shard

import (
	"fmt"
	"math"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apiserver/pkg/sharding"
)

func TestHashIsTheServers(t *testing.T) {
	for _, ns := range []string{"", "default", "team-01", "kube-system"} {
		if got, want := fmt.Sprintf("%016x", Hash(ns)), apisharding.HashField(ns); got != want {
			t.Errorf("Hash(%q) = %s, the API server's %s", ns, got, want)
		}
	}
}

// TestLayoutSpreadsSequentialNames: names that differ in their last
// characters share FNV-1a's high bits, yet each slot of their layout
// holds as many as the others, give or take one.
func TestLayoutSpreadsSequentialNames(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		n       int
	}{{"team-%02d", 30}, {"tenant-%04d", 1000}, {"ns%d", 64}, {"a%d", 3}, {"x%d", 1}} {
		t.Run(fmt.Sprintf(tc.pattern, tc.n), func(t *testing.T) {
			var namespaces []string
			for i := range tc.n {
				namespaces = append(namespaces, fmt.Sprintf(tc.pattern, i))
			}
			l := LayoutOf(namespaces)
			if want := min(tc.n, MaxSlots); l.Slots() != want {
				t.Errorf("%d slots, want %d", l.Slots(), want)
			}
			counts := l.Counts(namespaces)
			if lo, hi := slices.Min(counts), slices.Max(counts); hi-lo > 1 {
				t.Errorf("slots hold %d to %d namespaces, want at most one apart: %v", lo, hi, counts)
			}
			if l.Stale(namespaces) {
				t.Error("a fresh layout is stale")
			}
			// Every slot's range holds its namespaces, and the ranges tile
			// the hash space.
			for _, ns := range namespaces {
				r := l.Range(l.SlotOf(ns))
				if h := Hash(ns); h < r.Lo || h > r.Hi {
					t.Errorf("%s (%016x) is in slot %d, %s", ns, h, l.SlotOf(ns), r)
				}
			}
			all := Part{Layout: l, Slots: l.All()}.Ranges()
			if len(all) != 1 || all[0] != (Range{0, math.MaxUint64}) {
				t.Errorf("the slots together cover %v, want the whole hash space", all)
			}
		})
	}
}

func TestLayoutStale(t *testing.T) {
	few := []string{"team-01", "team-02", "team-03"}
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf("team-%02d", i))
	}
	if !LayoutOf(few).Stale(many) {
		t.Error("a layout cut by 3 namespaces is not stale for 40")
	}
	if LayoutOf(many).Stale(append(slices.Clone(many), "team-40", "team-41")) {
		t.Error("a layout cut by 40 namespaces is stale with two more")
	}
	if Whole().Layout.Stale(nil) {
		t.Error("the one slot of no namespace is stale")
	}
}

// TestSelectorIsTheServers: the API server's parser reads each part's
// selector into ranges that select exactly the namespaces Part.Has does.
func TestSelectorIsTheServers(t *testing.T) {
	var namespaces []string
	for i := range 300 {
		namespaces = append(namespaces, fmt.Sprintf("ns-%03d", i))
	}
	l := LayoutOf(namespaces[:200]) // the other 100 fall where they fall
	for _, slots := range []Set{1, 0b1011, l.All() &^ 1, l.All() &^ (1 << 63), 0xaaaa_aaaa_aaaa_aaaa & l.All()} {
		p := Part{Layout: l, Slots: slots}
		t.Run(p.String(), func(t *testing.T) {
			sel, err := sharding.Parse(p.Selector())
			if err != nil {
				t.Fatalf("the API server refuses %q: %v", p.Selector(), err)
			}
			for _, ns := range namespaces {
				obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
				match, err := sel.Matches(obj)
				if err != nil {
					t.Fatal(err)
				}
				if match != p.Has(ns) {
					t.Errorf("%s: the server selects it: %t, Has: %t", ns, match, p.Has(ns))
				}
			}
		})
	}
	if got := Whole().Selector(); got != "" {
		t.Errorf("the whole cluster's selector is %q, want none", got)
	}
	if got := (Part{Layout: l}).Selector(); got != "" {
		t.Errorf("no slot's selector is %q, want none", got)
	}
}

func TestRangeText(t *testing.T) {
	r := Range{Lo: 0x10, Hi: math.MaxUint64}
	b, _ := r.MarshalText()
	var back Range
	if err := back.UnmarshalText(b); err != nil || back != r {
		t.Errorf("%s read back as %v, %v", b, back, err)
	}
	for _, bad := range []string{"", "1", "x:1", "5:4"} {
		if err := back.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q read as a range", bad)
		}
	}
}
