package graph

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoadBadGraphs: every invalid-*.yaml graph gives exactly the problems
// listed, all at once, each with its file, line and place.
func TestLoadBadGraphs(t *testing.T) {
	tests := map[string][]string{
		"invalid-shape.yaml": {
			`:6: spec.schema.spec: is not supported: the parent kind's CustomResourceDefinition defines it, resyncd does not generate one; remove it`,
			`:8: resources[0].id: "Config" is not an identifier in lowerCamelCase (a letter, then letters and digits)`,
			`:14: resources[config].template.metadata.namespace: children live in their parent's namespace (an owner reference cannot cross namespaces); remove it`,
			`:15: resources[config]: id "config" is used by resources[1] already; ids must be unique`,
			`:18: resources[3].externalRef: is not supported by resyncd; see docs/graphs.md`,
			`:19: resources[secret].template: must set apiVersion and kind, without expressions: they say what resyncd lists and may write`,
			`:20: resources[secret].readyWhen[0]: "${secret.data.x} and more" must be exactly one expression, "${…}"`,
		},
		"invalid-references.yaml": {
			`:12: resources[second].includeWhen[0]: ${first.data.on == 'yes'} refers to first; it may refer to the parent (schema) only`,
			`:13: resources[second].readyWhen[0]: ${schema.spec.ready} refers to schema; it may refer to the resource itself (second) only`,
			`:17: resources[second].template.metadata.name: ${first.metadata.name +}: at 1:22: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`,
			`:18: resources[second].template.data.z: "${schema.spec.z": an expression "${" is not closed by "}"`,
			`:18: resources[second].template.data.x: ${nosuch.data.x}: at 1:1: undeclared reference to 'nosuch' (in container '')`,
			`:18: resources[second].template.data.y: ${second.data.y} refers to second, the resource it is part of`,
		},
		"invalid-cycle.yaml": {
			`:6: resources[config]: is part of a cycle of references: config → deployment → config`,
		},
	}
	files, err := filepath.Glob("../../testdata/graphs/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("%d invalid-*.yaml graphs, %d cases: every fixture needs its expected errors", len(files), len(tests))
	}
	for name, lines := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("../../testdata/graphs", name)
			_, err := Load(path, Options{})
			if err == nil {
				t.Fatal("no error")
			}
			for i := range lines {
				lines[i] = path + lines[i]
			}
			if diff := cmp.Diff(strings.Join(lines, "\n"), err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
