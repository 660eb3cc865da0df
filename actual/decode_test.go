package actual

import (
	"bytes"
	"encoding/json"
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

// TestDecodeListAsUtilJSON: the items of a page of Deployments as the API
// server writes them, escapes and managedFields included, decode to what
// k8s.io/apimachinery/pkg/util/json gives each, with the list's kind.
func TestDecodeListAsUtilJSON(t *testing.T) {
	page := benchPage(3)
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(page, &list); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	h, err := decodeList(bytes.NewReader(page), func(u *unstructured.Unstructured) error {
		got = append(got, u.Object)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if h.kind != "DeploymentList" || h.apiVersion != "apps/v1" || h.cont != "abc" {
		t.Errorf("list head %+v", h)
	}
	if len(got) != len(list.Items) {
		t.Fatalf("%d items, want %d", len(got), len(list.Items))
	}
	for i, raw := range list.Items {
		want := map[string]any{}
		if err := utiljson.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		want["kind"], want["apiVersion"] = "Deployment", "apps/v1"
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("item %d (-util/json +decodeList):\n%s", i, diff)
		}
	}
}

// TestDecodeListBroken: a page cut short, or not a list, is an error, not
// fewer items.
func TestDecodeListBroken(t *testing.T) {
	page := benchPage(2)
	for name, body := range map[string]string{
		"cut in an item":   string(page[:len(page)/2]),
		"cut after items":  string(page[:len(page)-1]),
		"items not a list": `{"kind":"DeploymentList","items":{}}`,
		"item not object":  `{"kind":"DeploymentList","items":[1]}`,
		"not an object":    `[]`,
		"bad number":       `{"kind":"DeploymentList","apiVersion":"apps/v1","items":[{"spec":{"n":1e999}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeList(strings.NewReader(body), func(*unstructured.Unstructured) error { return nil }); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestDecodeListCutAnywhere: a page cut at any byte is an error.
func TestDecodeListCutAnywhere(t *testing.T) {
	page := benchPage(2)
	for i := range len(page) {
		if _, err := decodeList(bytes.NewReader(page[:i]), func(*unstructured.Unstructured) error { return nil }); err == nil {
			t.Fatalf("cut after %d of %d bytes: no error", i, len(page))
		}
	}
}
