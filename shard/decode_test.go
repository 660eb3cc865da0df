package shard

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClaimsRoundTrip(t *testing.T) {
	in := map[string]claims{"east": {Held: []Range{{0, 9}, {20, math.MaxUint64}}, Pending: []Range{{10, 19}}}, "west": {}}
	out, err := decodeClaims(encodeClaims(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("claims read back (-want +got):\n%s", diff)
	}
	if _, err := decodeClaims(`{"east":{"held":["9:1"]}}`); err == nil {
		t.Error("a range that ends before it starts was read")
	}
}

func TestLayoutsRoundTrip(t *testing.T) {
	in := map[string]Layout{"east": LayoutOf([]string{"a", "b", "c", "d"}), "west": {}}
	if diff := cmp.Diff(in, decodeLayouts(encodeLayouts(in)), cmp.Comparer(Layout.Equal)); diff != "" {
		t.Errorf("layouts read back (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`{"east":["5","3"]}`, `{"east":["0"]}`, `{"east":["zz"]}`} {
		if got := decodeLayouts(bad); len(got) != 0 {
			t.Errorf("%s read as %v, want left out", bad, got)
		}
	}
}

// FuzzDecode: what another replica's Lease holds never panics the ring,
// and every range it reads is well formed.
func FuzzDecode(f *testing.F) {
	f.Add(encodeClaims(map[string]claims{"east": {Held: []Range{{1, 2}}}}))
	f.Add(encodeLayouts(map[string]Layout{"east": LayoutOf([]string{"a", "b"})}))
	f.Add(`{"x":{"held":["ffffffffffffffff:ffffffffffffffff"]}}`)
	f.Fuzz(func(t *testing.T, v string) {
		if cl, err := decodeClaims(v); err == nil {
			for _, c := range cl {
				for _, r := range append(c.Held, c.Pending...) {
					if r.Lo > r.Hi {
						t.Errorf("%q: range %v ends before it starts", v, r)
					}
				}
			}
		}
		for c, l := range decodeLayouts(v) {
			for i := range l.Slots() {
				if r := l.Range(i); r.Lo > r.Hi {
					t.Errorf("%q: cluster %s slot %d is %v", v, c, i, r)
				}
			}
		}
	})
}
