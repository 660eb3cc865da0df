package shard

import (
	"fmt"
	"testing"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// unit is one cluster's slot; a whole cluster is all of them.
type unit struct {
	cluster string
	slot    int
}

// owners maps each unit of work to its member, failing on a unit owned
// twice or not at all; slots is the number of slots of a split cluster.
func owners(t *testing.T, clusters, members []string, slots int) map[unit]string {
	t.Helper()
	whole, groups := Groups(clusters, members)
	out := map[unit]string{}
	add := func(u unit, m string) {
		if o, ok := out[u]; ok {
			t.Fatalf("%v owned by %s and %s", u, o, m)
		}
		out[u] = m
	}
	for _, c := range clusters {
		g := groups[c]
		if whole {
			if len(g) != 1 {
				t.Fatalf("whole clusters, but %s has the group %v", c, g)
			}
			for i := range slots {
				add(unit{c, i}, g[0])
			}
			continue
		}
		for m, s := range Split(c, slots, g) {
			for i := range slots {
				if s&(1<<i) != 0 {
					add(unit{c, i}, m)
				}
			}
		}
	}
	if want := len(clusters) * slots; len(out) != want {
		t.Fatalf("%d units owned, want %d", len(out), want)
	}
	return out
}

func TestGroupsCoverAndBalance(t *testing.T) {
	for _, tc := range []struct{ clusters, members, slots int }{
		{1, 1, 64}, {1, 2, 64}, {1, 3, 35}, {1, 4, 64}, {1, 7, 64}, {2, 3, 64}, {2, 5, 10}, {3, 3, 64}, {5, 2, 64}, {50, 3, 64}, {50, 7, 64},
	} {
		t.Run(fmt.Sprintf("%dclusters-%dmembers-%dslots", tc.clusters, tc.members, tc.slots), func(t *testing.T) {
			clusters, members := names("c", tc.clusters), names("replica", tc.members)
			work := map[string]int{} // slots per member
			clustersOf := map[string]map[string]bool{}
			for u, m := range owners(t, clusters, members, tc.slots) {
				work[m]++
				if clustersOf[m] == nil {
					clustersOf[m] = map[string]bool{}
				}
				clustersOf[m][u.cluster] = true
			}
			if tc.clusters >= tc.members {
				lo, hi := tc.clusters/tc.members, (tc.clusters+tc.members-1)/tc.members
				for _, m := range members {
					if n := work[m] / tc.slots; n < lo || n > hi || work[m]%tc.slots != 0 {
						t.Errorf("%s owns %d slots, want %d..%d whole clusters", m, work[m], lo, hi)
					}
				}
				return
			}
			// Each member talks to one cluster; a group splits its slots
			// evenly.
			_, groups := Groups(clusters, members)
			for _, m := range members {
				if len(clustersOf[m]) != 1 {
					t.Errorf("%s works on %d clusters, want 1", m, len(clustersOf[m]))
				}
			}
			for c, g := range groups {
				lo, hi := tc.slots/len(g), (tc.slots+len(g)-1)/len(g)
				for _, m := range g {
					if work[m] < lo || work[m] > hi {
						t.Errorf("%s owns %d slots of %s, want %d..%d", m, work[m], c, lo, hi)
					}
				}
			}
			lo, hi := tc.members/tc.clusters, (tc.members+tc.clusters-1)/tc.clusters
			for c, g := range groups {
				if len(g) < lo || len(g) > hi {
					t.Errorf("%s has %d members, want %d..%d", c, len(g), lo, hi)
				}
			}
		})
	}
}

// TestGroupsMoveLittle: a member joining takes about its share, and the
// others keep the rest.
func TestGroupsMoveLittle(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6} {
		for _, clusters := range []int{1, 20} {
			t.Run(fmt.Sprintf("%dto%d-%dclusters", n, n+1, clusters), func(t *testing.T) {
				cs := names("cluster", clusters)
				before := owners(t, cs, names("pod", n), MaxSlots)
				after := owners(t, cs, names("pod", n+1), MaxSlots)
				moved := 0
				for k, o := range before {
					if a, ok := after[k]; ok && a != o {
						moved++
					}
				}
				frac := float64(moved) / float64(len(before))
				// One unit of slack: whole clusters move by twentieths.
				units := float64(clusters)
				if clusters < n+1 {
					units *= MaxSlots
				}
				if bound := 1/float64(n+1) + 0.1 + 1/units; frac > bound {
					t.Errorf("%.2f of the work moved when a member joined, want at most %.2f", frac, bound)
				}
				t.Logf("%d → %d members, %d clusters: %.3f moved", n, n+1, clusters, frac)
			})
		}
	}
}
