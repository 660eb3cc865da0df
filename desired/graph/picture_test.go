package graph

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPicture: the dependency graph of a file names every resource in
// apply order with what decides its existence, count and readiness, and
// the resources and parent each one reads; Dot and Mermaid draw exactly
// those arrows.
func TestPicture(t *testing.T) {
	r, err := Load("../../docs/examples/webapp.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := Picture{Name: "webapp", Nodes: []Node{
		{ID: "config", APIVersion: "v1", Kind: "ConfigMap", ReadsParent: true},
		{ID: "deployment", APIVersion: "apps/v1", Kind: "Deployment", Reads: []string{"config"}, ReadsParent: true,
			ReadyWhen: []string{"deployment.status.?availableReplicas.orValue(0) == deployment.spec.replicas"}},
		{ID: "service", APIVersion: "v1", Kind: "Service", ReadsParent: true, IncludeWhen: []string{"schema.spec.expose"}},
	}, Status: []string{"config", "deployment", "service"}, StatusReadsParent: true}
	got := r.Picture()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the WebApp graph (-want +got):\n%s", diff)
	}
	dot := got.Dot()
	lines := strings.Split(dot, "\n\t")
	for _, line := range []string{
		`digraph "webapp" {`,
		`"deployment" [label="deployment\nDeployment.apps\nreadyWhen deployment.status.?availableReplicas.orValue(0) == deployment.spec.replicas"];`,
		`"service" [label="service\nService\nincludeWhen schema.spec.expose"];`,
		`"config" -> "deployment";`, `schema -> "service";`, `"deployment" -> "status";`,
	} {
		if !slices.Contains(lines, line) && !strings.HasPrefix(dot, line+"\n") {
			t.Errorf("dot has no line %s:\n%s", line, dot)
		}
	}
	if n := strings.Count(dot, " -> "); n != 8 {
		t.Errorf("dot has %d arrows, want 8 (3 from schema, config → deployment, 4 into status):\n%s", n, dot)
	}
	mm := got.Mermaid()
	if n := strings.Count(mm, " --> "); !strings.HasPrefix(mm, "flowchart LR\n") || n != 8 || !strings.Contains(mm, "  r0 --> r1\n") {
		t.Errorf("mermaid: %d arrows, want 8 and config (r0) → deployment (r1):\n%s", n, mm)
	}

	// docs/graphs.md shows this picture: it must be what render prints.
	doc, err := os.ReadFile("../../docs/graphs.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```mermaid\n"+mm+"```\n") {
		t.Errorf("docs/graphs.md does not show the WebApp's picture as render --format mermaid prints it:\n%s", mm)
	}

	// Collections are stacks, external references dashed and read only.
	r, err = Load("../../testdata/kro/external-config.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	pic := r.Picture()
	if n := pic.Nodes[1]; n.ID != "teamConfigs" || !n.External || !n.Selector {
		t.Errorf("teamConfigs: %+v, want an external reference by selector", n)
	}
	if dot := pic.Dot(); !strings.Contains(dot, "\t\"platform\" -> \"settings\" [style=dashed];\n") ||
		!strings.Contains(dot, "\"platform\" [label=\"platform\\nConfigMap\\nexternalRef (read only)\", style=dashed];") {
		t.Errorf("the external reference is not dashed:\n%s", dot)
	}
	r, err = Load("../../testdata/kro/fan-out.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	pic = r.Picture()
	if n := pic.Nodes[0]; n.ID != "configs" || len(n.ForEach) != 2 || n.ForEach[0] != "region: schema.spec.regions" {
		t.Errorf("configs: %+v, want a collection over region and tier", n)
	}
	if mm := pic.Mermaid(); !strings.Contains(mm, "  r0[[\"configs<br>ConfigMap<br>forEach region: schema.spec.regions<br>") {
		t.Errorf("the collection is not a stacked box:\n%s", mm)
	}
}

// TestQuoting: an expression with quotes and backslashes stays one label.
func TestQuoting(t *testing.T) {
	if got, want := dotQuote(`a "b" \n`+"\n"), `"a \"b\" \\n\n"`; got != want {
		t.Errorf("dotQuote = %s, want %s", got, want)
	}
	if got, want := mermaidQuote(`x == "y"`), `"x == #quot;y#quot;"`; got != want {
		t.Errorf("mermaidQuote = %s, want %s", got, want)
	}
}
