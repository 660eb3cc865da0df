package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/gobuffalo/flect"
	"go.yaml.in/yaml/v3"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kinds a graph file may declare itself as besides resyncd's Graph:
// kro's, under both of the names kro has given it.
const (
	KroAPIVersion = "kro.run/v1alpha1"
	KroKind       = "ResourceGraphDefinition"
	KroOldKind    = "ResourceGroup"
)

// DefaultGroup is the API group of a parent kind whose spec.schema names
// none, as kro has it.
const DefaultGroup = "kro.run"

// Schema is a graph's spec.schema, as kro defines it: the parent kind and
// the SimpleSchema of its spec, from which its CRD is made.
type Schema struct {
	// Group is the parent kind's API group; empty: DefaultGroup.
	Group string
	// APIVersion is the version of the parent kind, as v1alpha1.
	APIVersion string
	// Kind is the parent kind.
	Kind string
	// Scope is Namespaced (also when empty) or Cluster.
	Scope extv1.ResourceScope
	// Spec is the SimpleSchema of the parent's spec (see ParseSimpleSchema).
	Spec map[string]any
	// Types are the custom types Spec may use.
	Types map[string]any
	// Status is the template of the parent's status fields: values in which
	// "${…}" are expressions.
	Status map[string]any
	// AdditionalPrinterColumns are the CRD's columns; none: resyncd's Ready
	// and Age.
	AdditionalPrinterColumns []extv1.CustomResourceColumnDefinition
	// ShortNames and Categories go to the CRD's names.
	ShortNames, Categories []string
	// Labels and Annotations go to the CRD's metadata.
	Labels, Annotations map[string]string
	// Resources are the ids of the graph's resources: the variables a
	// status expression may read besides schema.
	Resources []string
}

// GroupVersionKind is the parent kind.
func (s *Schema) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: s.group(), Version: s.APIVersion, Kind: s.Kind}
}

// GroupVersionResource is the parent kind's resource, named as kro names
// it: the plural of the lowercased kind (flect's, which knows irregular
// English plurals).
func (s *Schema) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: s.group(), Version: s.APIVersion, Resource: flect.Pluralize(strings.ToLower(s.Kind))}
}

func (s *Schema) group() string {
	if s.Group == "" {
		return DefaultGroup
	}
	return s.Group
}

// What kro's API allows of a kind and a version.
var (
	kindPattern    = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]{0,62}$`)
	versionPattern = regexp.MustCompile(`^v[0-9]+(alpha[0-9]+|beta[0-9]+)?$`)
)

// ReadSchema reads the spec.schema of the graph file at path: a
// ResourceGraphDefinition (or ResourceGroup) of kro.run/v1alpha1, or a
// resyncd Graph. The error, an *Error when the file is at fault, names the
// file, the line and the field of every problem, the SimpleSchema's
// included.
func ReadSchema(path string) (*Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read graph: %w", err)
	}
	return ParseSchema(path, data)
}

// ParseSchema is ReadSchema of a file's content; path names it in
// messages.
func ParseSchema(path string, data []byte) (*Schema, error) {
	ps := &problems{path: path}
	s := parseSchema(data, ps)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// parseSchema is ParseSchema adding its problems to ps; nil when it found
// no spec.schema to read.
func parseSchema(data []byte, ps *problems) *Schema {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		ps.add(0, "", "not YAML: %v", err)
		return nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		ps.add(0, "", "is empty or not a mapping; a graph file starts with apiVersion and kind")
		return nil
	}
	root := doc.Content[0]
	top := fields(root, nil, "")
	av, kind := scalar(top["apiVersion"]), scalar(top["kind"])
	switch {
	case av == KroAPIVersion && (kind == KroKind || kind == KroOldKind), av == APIVersion && kind == Kind:
	default:
		ps.add(root.Line, "apiVersion, kind", "are %q, %q; a graph file is a %s %s (or %s) or a %s %s",
			av, kind, KroAPIVersion, KroKind, KroOldKind, APIVersion, Kind)
		return nil
	}
	spec := top["spec"]
	if spec == nil || spec.Kind != yaml.MappingNode {
		ps.add(root.Line, "spec", "must be a mapping with schema and resources")
		return nil
	}
	sf := fields(spec, nil, "")
	sch := sf["schema"]
	if sch == nil {
		ps.add(spec.Line, "spec.schema", "is missing: the parent kind and its CRD are declared there (apiVersion, kind, spec)")
		return nil
	}
	s := readSchema(sch, ps)
	if s == nil {
		return nil
	}
	if s.Status == nil && sf["status"] != nil {
		// resyncd's Graph may keep the status beside the schema.
		decodeInto(sf["status"], "spec.status", &s.Status, ps)
	}
	if res := sf["resources"]; res != nil && res.Kind == yaml.SequenceNode {
		for _, r := range res.Content {
			if id := scalar(fields(r, nil, "")["id"]); id != "" {
				s.Resources = append(s.Resources, id)
			}
		}
	}
	if s.Spec != nil || s.Types != nil {
		if _, err := ParseSimpleSchema(s.Spec, s.Types); err != nil {
			var se *SchemaError
			if !errors.As(err, &se) {
				ps.add(lineAt(sch, nil), "spec.schema", "%v", err)
				return s
			}
			for _, p := range se.Problems {
				ps.add(lineAt(sch, p.Path), "spec.schema."+p.Field(), "%s", p.Message)
			}
		}
	}
	return s
}

// readSchema reads the fields of spec.schema.
func readSchema(n *yaml.Node, ps *problems) *Schema {
	const where = "spec.schema"
	// validation is in RGDs written for kro before 0.7, which never applied
	// it; it is read and ignored, as kro did.
	f := fields(n, ps, where, "apiVersion", "kind", "group", "scope", "spec", "types", "status",
		"additionalPrinterColumns", "shortNames", "categories", "metadata", "validation")
	if n.Kind != yaml.MappingNode {
		return nil
	}
	s := &Schema{APIVersion: scalar(f["apiVersion"]), Kind: scalar(f["kind"]), Group: scalar(f["group"])}
	switch {
	case f["kind"] == nil:
		ps.add(n.Line, where+".kind", "is missing: the parent kind, as WebApplication")
	case !kindPattern.MatchString(s.Kind):
		ps.add(f["kind"].Line, where+".kind", "%q is not a kind: an upper-case letter, then up to 62 letters and digits", s.Kind)
	}
	switch {
	case f["apiVersion"] == nil:
		ps.add(n.Line, where+".apiVersion", "is missing: the parent kind's version, as v1alpha1")
	case !versionPattern.MatchString(s.APIVersion):
		ps.add(f["apiVersion"].Line, where+".apiVersion", "%q is not a version such as v1, v1alpha1 or v2beta1 (the group goes in spec.schema.group)", s.APIVersion)
	}
	if g := f["group"]; g != nil && s.Group == "" {
		ps.add(g.Line, where+".group", "is empty; leave it out for %s", DefaultGroup)
	}
	switch sc := scalar(f["scope"]); sc {
	case "", string(extv1.NamespaceScoped):
		s.Scope = extv1.NamespaceScoped
	case string(extv1.ClusterScoped):
		s.Scope = extv1.ClusterScoped
	default:
		ps.add(f["scope"].Line, where+".scope", "is %q, must be Namespaced or Cluster", sc)
	}
	decodeInto(f["spec"], where+".spec", &s.Spec, ps)
	decodeInto(f["types"], where+".types", &s.Types, ps)
	decodeInto(f["status"], where+".status", &s.Status, ps)
	decodeInto(f["shortNames"], where+".shortNames", &s.ShortNames, ps)
	decodeInto(f["categories"], where+".categories", &s.Categories, ps)
	if c := f["additionalPrinterColumns"]; c != nil {
		readColumns(c, where+".additionalPrinterColumns", s, ps)
	}
	if md := f["metadata"]; md != nil {
		mf := fields(md, ps, where+".metadata", "labels", "annotations")
		decodeInto(mf["labels"], where+".metadata.labels", &s.Labels, ps)
		decodeInto(mf["annotations"], where+".metadata.annotations", &s.Annotations, ps)
	}
	return s
}

// readColumns reads the printer columns, refusing a key the CRD's columns
// do not have.
func readColumns(n *yaml.Node, where string, s *Schema, ps *problems) {
	if n.Kind != yaml.SequenceNode {
		ps.add(n.Line, where, "must be a list of columns (name, type, jsonPath)")
		return
	}
	for i, c := range n.Content {
		w := fmt.Sprintf("%s[%d]", where, i)
		cf := fields(c, ps, w, "name", "type", "format", "description", "priority", "jsonPath")
		var m map[string]any
		if c.Kind != yaml.MappingNode || !decodeInto(c, w, &m, ps) {
			continue
		}
		// The column's fields are named as in JSON, which YAML's decoder
		// does not read from the struct.
		var col extv1.CustomResourceColumnDefinition
		if b, err := json.Marshal(m); err != nil || json.Unmarshal(b, &col) != nil {
			ps.add(c.Line, w, "is not a column: name and type are strings, priority an integer")
			continue
		}
		for _, k := range []string{"name", "type", "jsonPath"} {
			if cf[k] == nil {
				ps.add(c.Line, w+"."+k, "is missing")
			}
		}
		s.AdditionalPrinterColumns = append(s.AdditionalPrinterColumns, col)
	}
}

// decodeInto decodes n, when set, into out, reporting a value of the
// wrong shape; it says whether out was set.
func decodeInto[T any](n *yaml.Node, where string, out *T, ps *problems) bool {
	if n == nil {
		return false
	}
	var v T
	if err := n.Decode(&v); err != nil {
		ps.add(n.Line, where, "%s", strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
		return false
	}
	if m, ok := any(&v).(*map[string]any); ok {
		*m = jsonValues(*m).(map[string]any)
	}
	*out = v
	return true
}

// jsonValues makes YAML's ints the int64 of decoded JSON.
func jsonValues(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonValues(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonValues(e)
		}
	case int:
		return int64(x)
	}
	return v
}

// lineAt finds the line of the key path leads to from n, or of the
// nearest one above it.
func lineAt(n *yaml.Node, path []string) int {
	line := n.Line
	for _, k := range path {
		var next *yaml.Node
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				line, next = n.Content[i].Line, n.Content[i+1]
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return line
}
