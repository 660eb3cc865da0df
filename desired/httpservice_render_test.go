package desired

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/internal/golden"
)

func readParent(t testing.TB, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRenderGolden renders every parent in testdata/render and compares the
// children with NAME.golden (go test -update rewrites them).
func TestRenderGolden(t *testing.T) {
	inputs, err := filepath.Glob("../testdata/render/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			parent := readParent(t, in)
			g, err := HTTPService{}.Render(parent, nil)
			if err != nil {
				t.Fatal(err)
			}
			Stamp(g, parent) // as the engine applies them
			var docs []string
			for _, c := range g.Children {
				b, err := yaml.Marshal(c.Object)
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(b))
			}
			got := strings.Join(docs, "---\n")
			golden.Check(t, strings.TrimSuffix(in, ".yaml")+".golden", got)
		})
	}
}

func TestRenderInvalid(t *testing.T) {
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "resyncd.io/v1alpha1", "kind": "HttpService",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u1"},
			"spec":     map[string]any{"image": "nginx", "port": int64(80)},
		}}
	}
	tests := []struct {
		name  string
		edit  func(u *unstructured.Unstructured)
		field string
		msg   string
	}{
		{"no spec", func(u *unstructured.Unstructured) { delete(u.Object, "spec") }, "spec", "is missing"},
		{"name with a dot", func(u *unstructured.Unstructured) { u.SetName("web.v2") }, "metadata.name", `"web.v2" cannot name the Service`},
		{"name starting with a digit", func(u *unstructured.Unstructured) { u.SetName("2web") }, "metadata.name", `"2web" cannot name the Service`},
		{"image with space", func(u *unstructured.Unstructured) { spec(u)["image"] = "nginx latest" }, "spec.image", "contains white space"},
		{"port", func(u *unstructured.Unstructured) { spec(u)["port"] = int64(0) }, "spec.port", "0 is not a port"},
		{"wrong type", func(u *unstructured.Unstructured) { spec(u)["port"] = "eighty" }, "spec", "port"},
		{"autoscaling without cpu request", func(u *unstructured.Unstructured) {
			spec(u)["autoscaling"] = map[string]any{"maxReplicas": int64(3)}
		}, "spec.autoscaling", "spec.resources.requests.cpu must be set"},
		{"min above max", func(u *unstructured.Unstructured) {
			spec(u)["resources"] = map[string]any{"requests": map[string]any{"cpu": "1"}}
			spec(u)["autoscaling"] = map[string]any{"minReplicas": int64(5), "maxReplicas": int64(3)}
		}, "spec.autoscaling.minReplicas", "5 is above maxReplicas (3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := base()
			tt.edit(u)
			_, err := HTTPService{}.Render(u, nil)
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InvalidError", err)
			}
			if ie.Field != tt.field || !strings.Contains(ie.Message, tt.msg) {
				t.Errorf("got %s: %s; want %s: …%s…", ie.Field, ie.Message, tt.field, tt.msg)
			}
		})
	}
}

func spec(u *unstructured.Unstructured) map[string]any { return u.Object["spec"].(map[string]any) }

// FuzzRender: no spec makes Render panic; every child it renders is in
// the parent's namespace and carries no identity of its own, and once
// stamped is labelled and owned by the parent.
func FuzzRender(f *testing.F) {
	inputs, _ := filepath.Glob("../testdata/render/*.yaml")
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil || u.Object == nil {
			return
		}
		g, err := HTTPService{}.Render(u, nil)
		if err != nil {
			return
		}
		for _, c := range g.Children {
			if len(c.GetOwnerReferences()) > 0 || c.GetLabels()[LabelManagedBy] != "" {
				t.Errorf("%s sets identity the engine stamps: %v, %v", c.GetKind(), c.GetLabels(), c.GetOwnerReferences())
			}
		}
		Stamp(g, u)
		for _, c := range g.Children {
			if c.GetNamespace() != u.GetNamespace() || c.GetName() != u.GetName() {
				t.Errorf("%s %s/%s is not named after its parent %s/%s", c.GetKind(), c.GetNamespace(), c.GetName(), u.GetNamespace(), u.GetName())
			}
			if c.GetLabels()[LabelManagedBy] != ManagedByValue || c.GetLabels()[LabelParent] != u.GetName() {
				t.Errorf("%s lacks resyncd's labels: %v", c.GetKind(), c.GetLabels())
			}
			if refs := c.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != u.GetUID() {
				t.Errorf("%s owner references = %v", c.GetKind(), refs)
			}
		}
	})
}
