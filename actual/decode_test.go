package actual

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// TestDecodeListNumbers: an item decoded from a page holds the same values
// as k8s.io/apimachinery/pkg/util/json gives it, the decoder of
// client-go's unstructured objects: whole numbers int64, the others, and
// those too large for int64, float64, at every depth.
func TestDecodeListNumbers(t *testing.T) {
	item := `{"apiVersion":"v1","kind":"Widget","metadata":{"name":"w","generation":3},
"spec":{"replicas":2,"ratio":0.5,"big":12345678901234567890,"exp":1e3,"neg":-7,"zero":-0,
"list":[1,2.5,{"deep":[[4]]}],"null":null,"text":"9","flag":true}}`
	var got []map[string]any
	_, err := decodeList(strings.NewReader(`{"kind":"WidgetList","apiVersion":"v1","metadata":{"continue":"c"},"items":[`+item+`]}`),
		func(u *unstructured.Unstructured) error {
			got = append(got, u.Object)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	if err := utiljson.Unmarshal([]byte(item), &want); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d items", len(got))
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("(-util/json +decodeList):\n%s", diff)
	}
}
