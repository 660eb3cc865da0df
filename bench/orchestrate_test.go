package main

import "testing"

// TestColds: above -cold-reps-up-to only the contenders of the cold
// target repeat, and only up to -target-cold-reps-up-to.
func TestColds(t *testing.T) {
	b := &bench{coldMax: 2000, targetColdMax: 5000}
	byName := map[string]contender{}
	for _, c := range contenders() {
		byName[c.Name] = c
	}
	for _, tc := range []struct {
		name string
		n    int
		want int
	}{
		{resyncdName, 1000, 3}, {crName, 1000, 3}, {resyncdServerName, 2000, 3},
		{resyncdName, 5000, 3}, {floorName, 5000, 3}, {crName, 5000, 1}, {resyncdServerName, 5000, 1},
		{resyncdName, 20000, 1}, {floorName, 20000, 1},
	} {
		if got := b.colds(byName[tc.name], tc.n, 3); got != tc.want {
			t.Errorf("%s at N = %d: %d cold runs, want %d", tc.name, tc.n, got, tc.want)
		}
	}
}
