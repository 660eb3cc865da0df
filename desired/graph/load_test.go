package graph

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestLoadBadGraphs: every invalid-*.yaml graph gives exactly the problems
// listed, all at once, each with its file, line and place.
func TestLoadBadGraphs(t *testing.T) {
	tests := map[string][]string{
		"invalid-shape.yaml": {
			`:6: spec.schema.kind: is missing: the parent kind, as WebApplication`,
			`:6: spec.schema.apiVersion: is missing: the parent kind's version, as v1alpha1`,
			`:8: resources[0].id: "Config" is not an identifier in lowerCamelCase (a letter, then letters and digits)`,
			`:15: resources[config]: id "config" is used by resources[1] already; ids must be unique`,
			`:18: resources[secret]: sets both template and externalRef; a resource is either a child to write (template) or an object to read (externalRef)`,
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
		"invalid-external.yaml": {
			`:8: resources[noName].externalRef.metadata: must set name (one object) or selector (a list of objects)`,
			`:11: resources[both].externalRef.metadata: sets both name and selector; set one: name reads one object, selector a list`,
			`:14: resources[neither].template: must be the child object to create (or set externalRef, an object to read)`,
			`:18: resources[byKind].externalRef: must set apiVersion and kind, without expressions: they say what resyncd lists`,
			`:20: resources[byKind].externalRef.metadata.name: ${schema.spec.name + config.metadata.name} refers to config; an external reference is read before any child is rendered, so it may refer to the parent (schema) only`,
			`:27: resources[badSelector].externalRef.metadata.selector.matchLabels: must be a mapping of label keys to values`,
			`:28: resources[badSelector].externalRef.metadata.selector.matchExpressions[0].operator: is "Equals", must be one of In, NotIn, Exists, DoesNotExist`,
			`:29: resources[badSelector].externalRef.metadata.selector.matchFields: unknown key; known here: matchLabels, matchExpressions`,
			`:30: resources[badSelector].externalRef.metadata.uid: unknown key; known here: name, namespace, selector`,
		},
		"invalid-placement.yaml": {
			`:10: resources[role].template.metadata.namespace: ClusterRole is cluster-scoped: its objects have no namespace; remove it`,
			`:15: resources[config].template.metadata.namespace: "Shared_Things" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`:20: resources[quota].template.metadata.namespace: must be a namespace name or an expression, "${…}"; leave it out for the parent's namespace`,
		},
		"invalid-empty.yaml": {
			`:8: spec.resources: lists no resource, and the graph declares neither a parent kind (spec.schema) nor status fields: it would do nothing`,
		},
		"invalid-foreach.yaml": {
			":7: resources[shape].forEach: must be a list of iterators, each a name and the list it ranges over, as `- region: ${schema.spec.regions}`",
			":11: resources[names].forEach[0]: must map exactly one iterator name to its list, as `- region: ${schema.spec.regions}`",
			":12: resources[names].forEach[1]: iterator \"Zone\" is not an identifier in lowerCamelCase (a letter, then letters and digits)",
			":13: resources[names].forEach[2]: iterator \"item\" is a reserved word",
			":14: resources[names].forEach: iterator \"shape\" is also the id of a resource; rename one",
			":16: resources[names].forEach[5]: iterator \"tier\" is declared twice in this forEach",
			":17: resources[names].forEach[6].port: \"${schema.spec.ports} and more\" must be exactly one expression, \"${…}\", that gives a list",
			":25: resources[lists].forEach[1].zone: ${schema.spec.zones.filter(z, z.startsWith(region))} reads the iterator region: the iterators of a forEach are independent, their items combined as a cartesian product; to range over what depends on another item, make one list of the pairs with map() and flatten()",
			":26: resources[lists].forEach[2].word: ${'abc'} is of type string, but a forEach iterates over a list",
			":27: resources[lists].forEach[3].maybe: ${[omit()]}: omit() leaves a field of a template out; a forEach needs a list",
			":28: resources[lists].forEach[4].again: ${lists.filter(l, l.metadata.name != '')} refers to lists, the collection it makes",
			":31: resources[lists].readyWhen[1]: ${schema.spec.ready} refers to schema; it may refer to each item of the collection (each) only",
			":32: resources[lists].readyWhen[2]: ${lists[0].data.ready == 'yes'} refers to lists; it may refer to each item of the collection (each) only",
			":40: resources[unnamed].forEach: iterator tier is not part of metadata.name: items that differ only in tier would have one name; use every iterator in the name",
			":47: resources[many].forEach: has 11 iterators; at most 10 are allowed",
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

// TestLoadKroRGD: a kro ResourceGraphDefinition loads as it is, its
// spec.schema included; a parent written the kro way, its defaults left
// out, renders once Default applied what the CRD would: without, the
// expressions that read a defaulted field fail.
func TestLoadKroRGD(t *testing.T) {
	r, err := Load("../../testdata/kro/storefront.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Schema(); s == nil || s.GroupVersionKind().String() != "kro.run/v1alpha1, Kind=Storefront" {
		t.Fatalf("schema = %+v, want the Storefront kind of kro.run/v1alpha1", s)
	}
	parent := decode(t, []byte(`{"apiVersion": "kro.run/v1alpha1", "kind": "Storefront",
		"metadata": {"name": "shop", "namespace": "team", "uid": "u-1"}, "spec": {"name": "shop"}}`))
	if _, err := r.Render(parent, nil); err == nil || !strings.Contains(err.Error(), "no such key") {
		t.Errorf("without defaults: err %v, want a missing key", err)
	}
	r.Default(parent)
	g, err := r.Render(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Deployment/shop", "Service/shop"}, kinds(g)); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	dep := g.Children[0].Object
	replicas, _, _ := unstructured.NestedInt64(dep, "spec", "replicas")
	containers, _, _ := unstructured.NestedSlice(dep, "spec", "template", "spec", "containers")
	if replicas != 2 || len(containers) != 1 || containers[0].(map[string]any)["image"] != "nginx:1.27" {
		t.Errorf("Deployment replicas %d, containers %v; want the schema's defaults 2 and nginx:1.27", replicas, containers)
	}
}
