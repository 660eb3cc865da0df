package engine

import (
	"cmp"
	"slices"
)

// The memory keeps an entry for every child and for every idle parent
// between passes, so it keeps them the way a map would not: in slices
// sorted by key, found by binary search. A Go map holds its entries half
// to seven-eighths full, and an idle parent's children in an allocation
// of their own; these tables hold them packed. What a pass adds that the
// last did not have waits in a small map until the pass's sweep merges
// it in.

func compareKeys(a, b memoKey) int {
	if c := cmp.Compare(a.a, b.a); c != 0 {
		return c
	}
	return cmp.Compare(a.b, b.b)
}

// memoSlot is one entry of a memoTable.
type memoSlot struct {
	key   memoKey
	entry memoEntry
}

// memoTable maps a child's version to what reducing it found.
type memoTable struct {
	sorted []memoSlot
	added  map[memoKey]memoEntry
}

func (t *memoTable) find(k memoKey) (int, bool) {
	return slices.BinarySearchFunc(t.sorted, k, func(s memoSlot, k memoKey) int { return compareKeys(s.key, k) })
}

func (t *memoTable) get(k memoKey) (memoEntry, bool) {
	if i, ok := t.find(k); ok {
		return t.sorted[i].entry, true
	}
	e, ok := t.added[k]
	return e, ok
}

func (t *memoTable) set(k memoKey, e memoEntry) {
	if i, ok := t.find(k); ok {
		t.sorted[i].entry = e
		return
	}
	if t.added == nil {
		t.added = map[memoKey]memoEntry{}
	}
	t.added[k] = e
}

func (t *memoTable) len() int { return len(t.sorted) + len(t.added) }

// sweep keeps the entries stamped with pass, and only those.
func (t *memoTable) sweep(pass uint8) {
	t.sorted = slices.DeleteFunc(t.sorted, func(s memoSlot) bool { return s.entry.pass != pass })
	var add []memoSlot
	for k, e := range t.added {
		if e.pass == pass {
			add = append(add, memoSlot{k, e})
		}
	}
	t.added = nil
	t.sorted = mergeSorted(t.sorted, add, func(s memoSlot) memoKey { return s.key })
}

// idleSlot is one parent of an idleTable: its children are
// children[at:at+n] of the table.
type idleSlot struct {
	key  memoKey
	at   uint32
	n    uint32
	pass uint8
}

// idleTable maps an idle parent's version to the children it compared.
type idleTable struct {
	sorted   []idleSlot
	children []idleChild
	added    map[memoKey]idleParent
}

func (t *idleTable) find(k memoKey) (int, bool) {
	return slices.BinarySearchFunc(t.sorted, k, func(s idleSlot, k memoKey) int { return compareKeys(s.key, k) })
}

// get returns the parent of version k; its children are the table's, not
// to be changed.
func (t *idleTable) get(k memoKey) (idleParent, bool) {
	if p, ok := t.added[k]; ok {
		return p, true
	}
	if i, ok := t.find(k); ok {
		s := t.sorted[i]
		return idleParent{pass: s.pass, children: t.children[s.at : s.at+s.n : s.at+s.n]}, true
	}
	return idleParent{}, false
}

// set keeps p as the parent of version k. The children of one found in
// place stay where they are when they are the same; others wait in added.
func (t *idleTable) set(k memoKey, p idleParent) {
	if i, ok := t.find(k); ok {
		s := &t.sorted[i]
		if slices.Equal(t.children[s.at:s.at+s.n], p.children) {
			s.pass = p.pass
			delete(t.added, k)
			return
		}
		s.pass = p.pass + 1 // superseded: the sweep drops it
	}
	if t.added == nil {
		t.added = map[memoKey]idleParent{}
	}
	t.added[k] = p
}

func (t *idleTable) len() int {
	n := len(t.added)
	for _, s := range t.sorted {
		if _, ok := t.added[s.key]; !ok {
			n++
		}
	}
	return n
}

// sweep keeps the parents stamped with pass, and only those, with their
// children packed again in a slice of their own.
func (t *idleTable) sweep(pass uint8) {
	keep := slices.DeleteFunc(t.sorted, func(s idleSlot) bool { return s.pass != pass })
	n := 0
	for _, s := range keep {
		n += int(s.n)
	}
	var add []idleSlot
	for k, p := range t.added {
		if p.pass == pass {
			add = append(add, idleSlot{key: k, n: uint32(len(p.children)), pass: pass})
			n += len(p.children)
		}
	}
	children := make([]idleChild, 0, n)
	for i := range keep {
		s := &keep[i]
		children = append(children, t.children[s.at:s.at+s.n]...)
		s.at = uint32(len(children)) - s.n
	}
	for i := range add {
		s := &add[i]
		children = append(children, t.added[s.key].children...)
		s.at = uint32(len(children)) - s.n
	}
	t.sorted, t.children, t.added = mergeSorted(keep, add, func(s idleSlot) memoKey { return s.key }), children, nil
}

// mergeSorted returns sorted with add merged in, in key order; add is
// sorted here. It merges from the end into sorted's own array, grown once,
// and gives the array back if it has grown to far more than it holds.
func mergeSorted[S any](sorted, add []S, key func(S) memoKey) []S {
	if len(add) == 0 {
		return shrink(sorted)
	}
	slices.SortFunc(add, func(a, b S) int { return compareKeys(key(a), key(b)) })
	i, j := len(sorted)-1, len(add)-1
	sorted = slices.Grow(sorted, len(add))[:len(sorted)+len(add)]
	for w := len(sorted) - 1; j >= 0; w-- {
		if i >= 0 && compareKeys(key(sorted[i]), key(add[j])) > 0 {
			sorted[w] = sorted[i]
			i--
		} else {
			sorted[w] = add[j]
			j--
		}
	}
	return shrink(sorted)
}

// shrink gives back most of what s does not use, once that is more than a
// quarter of it.
func shrink[S any](s []S) []S {
	if cap(s)-len(s) > len(s)/4+64 {
		return slices.Clip(slices.Clone(s))
	}
	return s
}
