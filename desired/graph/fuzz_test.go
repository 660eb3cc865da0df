package graph

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/desired"
)

// FuzzParse: no graph file makes Parse panic, and every error it returns
// says something.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/graphs/*.yaml")
	files = append(files, "../../docs/examples/webapp.yaml", "../../testdata/kro/fan-out.yaml")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Parse("fuzz.yaml", data, Options{}); err != nil && err.Error() == "" {
			t.Fatal("an error without a message")
		}
	})
}

// FuzzRender: no parent makes the HttpService, WebApp or FanOut graph panic; an
// error is an *InvalidError (the parent is Stalled), and every child is in
// the parent's namespace with a name.
func FuzzRender(f *testing.F) {
	graphs := []*Renderer{}
	for _, p := range []string{"../../testdata/graphs/httpservice.yaml", "../../docs/examples/webapp.yaml", "../../testdata/kro/fan-out.yaml"} {
		g, err := Load(p, Options{})
		if err != nil {
			f.Fatal(err)
		}
		graphs = append(graphs, g)
	}
	inputs, _ := filepath.Glob("../../testdata/render/*.yaml")
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"metadata": {"name": "a", "namespace": "b"}, "spec": {"image": "x", "config": [{"name": "A", "value": "1"}], "expose": true}}`))
	f.Add([]byte(`{"metadata": {"name": "a", "namespace": "b"}, "spec": {"regions": ["eu", "us"], "tiers": ["web"], "image": "x", "backups": {"enabled": true, "shards": 3}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil || u.Object == nil {
			return
		}
		for _, g := range graphs {
			out, err := g.Render(u, nil)
			if err != nil {
				if !desired.IsInvalid(err) {
					t.Fatalf("%s: %v is not an *InvalidError", g.Name(), err)
				}
				continue
			}
			for _, c := range out.Children {
				if c.GetNamespace() != u.GetNamespace() || c.GetName() == "" {
					t.Errorf("%s: %s %s/%s is not a named child in %q", g.Name(), c.GetKind(), c.GetNamespace(), c.GetName(), u.GetNamespace())
				}
			}
			if _, err := g.Status(u, desired.Observation{}); err != nil {
				t.Errorf("%s: status: %v", g.Name(), err)
			}
		}
	})
}
