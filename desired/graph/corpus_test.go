package graph

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/internal/golden"
)

// corpus lists the graph files of testdata/kro, each with an instance in
// testdata/kro/instances written the way a kro user writes one: the
// defaults of its schema left out.
func corpus(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "kro", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no graph in testdata/kro: %v", err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".yaml"))
	}
	return names
}

// TestCorpusRenders: every graph of the corpus loads offline, and its
// instance, with the schema's defaults applied, renders to the children
// of testdata/kro/rendered (those that wait for a live child are named
// there, not rendered).
func TestCorpusRenders(t *testing.T) {
	for _, name := range corpus(t) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "kro")
			r, err := Load(filepath.Join(dir, name+".yaml"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "instances", name+".yaml"))
			if err != nil {
				t.Fatalf("every graph of the corpus has an instance: %v", err)
			}
			parent := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(data, &parent.Object); err != nil {
				t.Fatal(err)
			}
			parent.SetNamespace("corpus")
			parent.SetUID("7d0c6a58-5b1e-4c1f-9a43-0f6f1c2b9e11")
			r.Default(parent)
			g, err := r.Render(parent, nil)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			out.WriteString("# " + parent.GetKind() + " " + parent.GetName() + ", defaulted:\n")
			spec, err := yaml.Marshal(parent.Object["spec"])
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString(indent(string(spec)))
			for _, w := range g.Waiting {
				out.WriteString("# waiting: " + w.ID + ": " + w.Message + "\n")
			}
			for _, c := range g.Children {
				b, err := yaml.Marshal(c.Object)
				if err != nil {
					t.Fatal(err)
				}
				out.WriteString("---\n" + string(b))
			}
			golden.Check(t, filepath.Join(dir, "rendered", name+".yaml"), out.String())
		})
	}
}

// indent comments out a block of YAML.
func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("#   " + l)
		}
	}
	return b.String()
}
