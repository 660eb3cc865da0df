package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		interval time.Duration
		failures int
		want     time.Duration
	}{
		{30 * time.Second, 0, 30 * time.Second},
		{30 * time.Second, 1, 30 * time.Second},
		{30 * time.Second, 2, time.Minute},
		{30 * time.Second, 4, 4 * time.Minute},
		{30 * time.Second, 5, 4 * time.Minute}, // 8 intervals at most
		{time.Minute, 4, maxBackoff},
		{time.Minute, 50, maxBackoff},
		{10 * time.Minute, 3, 10 * time.Minute}, // never less than the interval
	} {
		if got := Backoff(c.interval, c.failures); got != c.want {
			t.Errorf("Backoff(%s, %d) = %s, want %s", c.interval, c.failures, got, c.want)
		}
	}
}

// TestEveryProbes: after passes that fail in a row, the wait grows and
// is cut into intervals with a probe after each; the next pass starts
// when the probe answers. The order of calls, not their timing, is checked.
func TestEveryProbes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		answer int // the probe call that first succeeds; 0: none
		want   string
	}{
		{"never answers", 0, "f f p f p p p f"},
		{"answers again", 2, "f f p f p f"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var calls []string
			probes, passes := 0, 0
			probe := func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, "p")
				probes++
				if c.answer > 0 && probes >= c.answer {
					return nil
				}
				return errors.New("no answer")
			}
			every(ctx, 2*time.Millisecond, nil, probe, func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, "f")
				if passes++; passes == strings.Count(c.want, "f") {
					cancel()
				}
				return errors.New("refused")
			})
			if got := strings.Join(calls, " "); got != c.want {
				t.Errorf("calls %q, want %q", got, c.want)
			}
		})
	}
}
