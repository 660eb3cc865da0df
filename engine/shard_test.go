package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/shard"
)

// fixedShard owns the same part on every pass, and counts the passes
// that hold it.
type fixedShard struct {
	part     shard.Part
	acquired int
	released int
}

func (f *fixedShard) Acquire(string) (shard.Part, func()) {
	f.acquired++
	return f.part, func() { f.released++ }
}

// TestShardSplitsTheWork: two engines over one store, each with half the
// namespace hash space and a reader that, like a server without sharded
// LISTs, returns everything: each writes the children, statuses and
// prunes of its own namespaces only, skips the others' parents, and never
// prunes the children of a parent it does not own.
func TestShardSplitsTheWork(t *testing.T) {
	cfg := testConfig()
	w := newMemWriter(cfg.FieldManager)
	var namespaces []string
	for i := range 12 {
		namespaces = append(namespaces, fmt.Sprintf("team-%02d", i))
	}
	layout := shard.LayoutOf(namespaces)
	half := shard.Part{Layout: layout, Slots: 0b1010_1010_1010}
	a := newMemPassOn(t, cfg, w, &fixedShard{part: half})
	b := newMemPassOn(t, cfg, w, &fixedShard{part: shard.Part{Layout: layout, Slots: layout.All() &^ half.Slots}})
	none := newMemPassOn(t, cfg, w, &fixedShard{part: shard.Part{Layout: layout}})
	inA := map[string]bool{}
	for _, ns := range namespaces {
		inA[ns] = half.Has(ns)
		a.parent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})
	}
	countA := 0
	for _, in := range inA {
		if in {
			countA++
		}
	}
	if countA == 0 || countA == len(inA) {
		t.Fatalf("%d of %d namespaces in the first half: the test needs both halves used", countA, len(inA))
	}
	// writesIn fails on a write outside the owner's namespaces and returns
	// how many it made.
	writesIn := func(who string, owned bool) int {
		t.Helper()
		calls := w.log()
		for _, c := range calls {
			ns := strings.Split(strings.Fields(c)[len(strings.Fields(c))-1], "/")[1]
			if inA[ns] != owned {
				t.Errorf("%s wrote %s, in a namespace it does not own", who, c)
			}
		}
		return len(calls)
	}
	if rep := none.sync(); rep.Parents != 0 || rep.Foreign != 0 || writesIn("a replica that owns nothing", true)+writesIn("", false) != 0 {
		t.Errorf("a replica that owns nothing read %d parents (%d foreign) or wrote", rep.Parents, rep.Foreign)
	}
	repA := a.sync()
	if n := writesIn("A", true); n != 3*countA { // Deployment, Service, status
		t.Errorf("A made %d writes, want %d", n, 3*countA)
	}
	repB := b.sync()
	if n := writesIn("B", false); n != 3*(len(inA)-countA) {
		t.Errorf("B made %d writes, want %d", n, 3*(len(inA)-countA))
	}
	if diff := cmp.Diff([]int{countA, len(inA) - countA, len(inA) - countA, countA}, []int{repA.Parents, repA.Foreign, repB.Parents, repB.Foreign}); diff != "" {
		t.Errorf("parents, foreign of A then B (-want +got):\n%s", diff)
	}
	// A parent of B's is deleted: A leaves its children, B prunes them.
	var gone string
	for ns, in := range inA {
		if !in {
			gone = ns
			break
		}
	}
	w.remove(httpServices, gone, "web")
	if rep := a.sync(); rep.Deleted != 0 || rep.Orphaned != 0 {
		t.Errorf("A deleted %d and saw %d orphans of a parent it does not own", rep.Deleted, rep.Orphaned)
	}
	writesIn("A", true)
	if rep := b.sync(); rep.Deleted != 2 {
		t.Errorf("B deleted %d children of its parent gone, want 2", rep.Deleted)
	}
	writesIn("B", false)
	for _, s := range []*memPass{a, b, none} {
		f := s.engine.shard.(*fixedShard)
		if f.acquired == 0 || f.acquired != f.released {
			t.Errorf("%d passes acquired the shard, %d released it", f.acquired, f.released)
		}
	}
}

// TestShardOwnsByParentNamespace: a child placed in another namespace is
// the replica's whose slots hold its parent's namespace.
func TestShardOwnsByParentNamespace(t *testing.T) {
	layout := shard.LayoutOf([]string{"team-a", "shared"})
	rs := &resourceState{part: shard.Part{Layout: layout, Slots: 1 << layout.SlotOf("team-a")}}
	child := &unstructured.Unstructured{}
	child.SetNamespace("shared")
	child.SetLabels(map[string]string{desired.LabelParentNamespace: "team-a"})
	if !rs.owns(child) {
		t.Errorf("a child of a parent in team-a, placed in shared, is not owned with team-a's slot")
	}
	child.SetLabels(nil)
	if rs.owns(child) {
		t.Errorf("a child in shared without the parent-namespace label is owned with team-a's slot")
	}
}
