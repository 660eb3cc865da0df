package main

import (
	"context"
	"fmt"
)

// measureFixed measures resyncd keeping n parents (a handful) in sync: a
// cold run, then one `resyncd run` of steady and drift passes with the
// raw LIST beside it. With so few parents, what the process holds is what
// every resyncd holds whatever it manages: the executable's pages, the
// runtime, the schemas tier 1 reads, its clients.
func (b *bench) measureFixed(ctx context.Context, res *Results, n, reps int, drift float64) error {
	rs := contenderNamed(resyncdName)
	progress("N=%d fixed part", n)
	s, err := b.cold(ctx, rs, n, 1, 1)
	if s != nil {
		res.Samples = append(res.Samples, s)
	}
	if err != nil {
		return fmt.Errorf("fixed part: %w", err)
	}
	samples, err := b.passes(ctx, rs, n, reps, drift)
	res.Samples = append(res.Samples, samples...)
	if err != nil {
		return fmt.Errorf("fixed part: %w", err)
	}
	res.FixedN = n
	return nil
}
