package shard

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
)

// Groups says which members work on which cluster: a pure function of
// the two sets, so that every replica that sees the same members and
// clusters comes to the same answer. Clusters and members are names, in
// any order.
//
// With at least as many clusters as members, whole is true: each cluster
// has one member, and each member whole clusters (no two members talk to
// one cluster), as even in number as the counts allow. With fewer
// clusters, each member works on one cluster, each cluster has a group of
// members as even in size as the counts allow, and Split divides the
// cluster's slots within its group. A member joining or leaving moves
// about 1/N of the clusters or slots, not all of them.
func Groups(clusters, members []string) (whole bool, groups map[string][]string) {
	groups = map[string][]string{}
	if len(members) == 0 || len(clusters) == 0 {
		return len(clusters) >= len(members), groups
	}
	if len(clusters) >= len(members) {
		for c, m := range spread("cluster", clusters, members) {
			groups[c] = []string{m}
		}
		return true, groups
	}
	for m, c := range spread("member", members, clusters) {
		groups[c] = append(groups[c], m)
	}
	for _, g := range groups {
		slices.Sort(g)
	}
	return false, groups
}

// Split divides the slots of cluster, cut in slots slots, between the
// members of its group.
func Split(cluster string, slots int, group []string) map[string]Set {
	names := make([]string, slots)
	index := make(map[string]int, slots)
	for i := range names {
		names[i] = strconv.Itoa(i)
		index[names[i]] = i
	}
	out := make(map[string]Set, len(group))
	for slot, m := range spread(cluster, names, group) {
		out[m] |= 1 << index[slot]
	}
	return out
}

// spread gives each item a bin. The bins take turns, in the order of
// their names, each taking the free item it scores best, as Maglev
// hashing fills its table: every bin ends with floor(items/bins) items
// or one more, and one bin joining or leaving moves few items besides
// its own share. salt keeps the scores of one spread apart from
// another's.
func spread(salt string, items, bins []string) map[string]string {
	bins = slices.Sorted(slices.Values(bins))
	prefs := make([][]string, len(bins)) // per bin: items, best first
	for i, b := range bins {
		order := slices.Clone(items)
		scores := make(map[string]uint64, len(items))
		for _, it := range items {
			scores[it] = score(salt, it, b)
		}
		slices.SortFunc(order, func(x, y string) int { return cmp.Or(cmp.Compare(scores[y], scores[x]), cmp.Compare(x, y)) })
		prefs[i] = order
	}
	next := make([]int, len(bins)) // per bin: the first of its prefs not yet looked at
	out := make(map[string]string, len(items))
	for len(out) < len(items) {
		for i, b := range bins {
			for next[i] < len(items) {
				it := prefs[i][next[i]]
				next[i]++
				if _, taken := out[it]; !taken {
					out[it] = b
					break
				}
			}
			if len(out) == len(items) {
				break
			}
		}
	}
	return out
}

func score(salt, item, bin string) uint64 {
	h := fnv.New64a()
	for _, s := range []string{salt, item, bin} {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	// FNV's low bits mix poorly for inputs that differ only at the end:
	// finish with a 64-bit mixer (splitmix64's) so scores spread evenly.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
