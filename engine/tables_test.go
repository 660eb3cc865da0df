package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTables: over passes that read some entries again, change some and
// add new ones, each table answers as a map swept the same way would, and
// holds after each sweep only what its pass stamped, in key order.
func TestTables(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	key := func() memoKey { return memoKey{uint64(r.IntN(300)), uint64(r.IntN(3))} }
	// 400 reads and writes a pass of 900 keys: some entries live for many
	// passes, most are swept.
	memo, wantMemo := &memoTable{}, map[memoKey]memoEntry{}
	idle, wantIdle := &idleTable{}, map[memoKey]idleParent{}
	for i := range 300 {
		pass := uint8(i) // wraps past 255, as the memory's does
		for range 400 {
			k := key()
			switch r.IntN(4) {
			case 0: // read again, as a pass reads an unchanged child
				if e, ok := memo.get(k); ok {
					e.pass = pass
					memo.set(k, e)
					wantMemo[k] = e
				}
				if p, ok := idle.get(k); ok {
					p.pass = pass
					idle.set(k, p)
					wantIdle[k] = p
				}
			default: // new, or changed
				e := memoEntry{position: r.Int32N(5), owned: r.IntN(2) == 0, pass: pass}
				e.fingerprint[0] = byte(r.IntN(256))
				memo.set(k, e)
				wantMemo[k] = e
				children := make([]idleChild, r.IntN(4))
				for i := range children {
					children[i] = idleChild{key: r.Uint64(), version: key()}
				}
				p := idleParent{pass: pass, children: children}
				idle.set(k, p)
				wantIdle[k] = p
			}
			want, in := wantMemo[k]
			if got, ok := memo.get(k); ok != in || got != want {
				t.Fatalf("pass %d: memo %v = %v %v, want %v", pass, k, got, ok, wantMemo[k])
			}
			if got, _ := idle.get(k); got.pass != wantIdle[k].pass || !slices.Equal(got.children, wantIdle[k].children) {
				t.Fatalf("pass %d: idle %v = %v, want %v", pass, k, got, wantIdle[k])
			}
		}
		memo.sweep(pass)
		idle.sweep(pass)
		for k, e := range wantMemo {
			if e.pass != pass {
				delete(wantMemo, k)
			}
		}
		for k, p := range wantIdle {
			if p.pass != pass {
				delete(wantIdle, k)
			}
		}
		if memo.len() != len(wantMemo) || len(memo.added) != 0 || !slices.IsSortedFunc(memo.sorted, func(a, b memoSlot) int { return compareKeys(a.key, b.key) }) {
			t.Fatalf("pass %d: memo holds %d (%d in order: %v), want %d", pass, memo.len(), len(memo.sorted), len(memo.added) == 0, len(wantMemo))
		}
		if idle.len() != len(wantIdle) || len(idle.added) != 0 || !slices.IsSortedFunc(idle.sorted, func(a, b idleSlot) int { return compareKeys(a.key, b.key) }) {
			t.Fatalf("pass %d: idle holds %d, want %d", pass, idle.len(), len(wantIdle))
		}
		n := 0
		for k, want := range wantMemo {
			if got, ok := memo.get(k); !ok || got != want {
				t.Fatalf("pass %d, swept: memo %v = %v %v, want %v", pass, k, got, ok, want)
			}
		}
		for k, want := range wantIdle {
			got, ok := idle.get(k)
			if !ok || got.pass != want.pass || !slices.Equal(got.children, want.children) {
				t.Fatalf("pass %d, swept: idle %v = %v %v, want %v", pass, k, got, ok, want)
			}
			n += len(want.children)
		}
		if len(idle.children) != n {
			t.Fatalf("pass %d: idle packs %d children, want %d", pass, len(idle.children), n)
		}
	}
}
