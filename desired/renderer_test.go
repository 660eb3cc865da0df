package desired

import (
	"testing"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestSpecPolicy: spec.priority and spec.paused as the parent sets them;
// what it leaves out, or sets to a value of another type, is the zero
// Policy's.
func TestSpecPolicy(t *testing.T) {
	tests := []struct {
		name string
		spec map[string]any
		want Policy
	}{
		{"both", map[string]any{"priority": int64(-5), "paused": true}, Policy{Priority: -5, Paused: true}},
		{"priority only", map[string]any{"priority": int64(1000)}, Policy{Priority: 1000}},
		{"neither", map[string]any{"image": "nginx"}, Policy{}},
		{"no spec", nil, Policy{}},
		{"not of their types", map[string]any{"priority": "high", "paused": "yes"}, Policy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SpecPolicy(fixture.HTTPService("shop", "web", tt.spec)); got != tt.want {
				t.Errorf("SpecPolicy = %+v, want %+v", got, tt.want)
			}
		})
	}
}
