package graph

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// APIVersion and Kind are what a graph file declares itself as.
const (
	APIVersion = "resyncd.io/v1alpha1"
	Kind       = "Graph"
)

// ParentVar is the variable that holds the parent in every expression.
const ParentVar = "schema"

// idPattern is what kro allows as a resource id: a CEL identifier in
// lowerCamelCase.
var idPattern = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// reserved are identifiers CEL or the graph already uses.
var reserved = map[string]bool{ParentVar: true, "in": true, "as": true, "break": true, "const": true,
	"continue": true, "else": true, "for": true, "function": true, "if": true, "import": true, "let": true,
	"loop": true, "package": true, "namespace": true, "return": true, "var": true, "void": true, "while": true,
	"true": true, "false": true, "null": true, EachVar: true}

// file is a graph file as read, before its expressions are compiled.
type file struct {
	path      string
	name      string
	resources []*resource
	// status is the template of the parent's status fields.
	status *tmpl
	line   int // of spec.status, for messages
	// schema: spec.schema declares the parent kind (kro's SimpleSchema),
	// which ParseSchema reads.
	schema bool
}

// resource is one child of the graph.
type resource struct {
	id         string
	line       int
	apiVersion string
	kind       string
	template   *tmpl
	// external is set instead of template for an object the graph reads
	// and never writes (externalRef).
	external    *externalRef
	includeWhen []*expr
	readyWhen   []*expr
	// deps are the ids of the other resources its template refers to.
	deps []string
	// namespace is the template's metadata.namespace as written (a name,
	// or a string with expressions), at nsLine; empty: the parent's.
	namespace string
	nsLine    int
	// clusterScoped says the kind is cluster-scoped: its objects have no
	// namespace.
	clusterScoped bool
	// forEach makes the resource a collection: one child for each
	// combination of its iterators' items (collection.go).
	forEach []*iterator
}

// externalRef is what a resource's externalRef names: one object by name,
// or the objects a label selector selects (selector).
type externalRef struct {
	// metadata is the template of its metadata: name, namespace, selector.
	metadata *tmpl
	selector bool
	// namespace says metadata sets a namespace; nsText is it as written,
	// at nsLine, and nsExpr says it has expressions: the parent's spec
	// may then choose where the reference reads.
	namespace bool
	nsText    string
	nsLine    int
	nsExpr    bool
	line      int
}

// where names the resource in messages, as kro's users know it.
func (r *resource) where() string { return "resources[" + r.id + "]" }

// problems collects what is wrong with a graph file, each with its line.
type problems struct {
	path string
	list []problem
}

type problem struct {
	line int
	text string
}

func (ps *problems) add(line int, where, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	loc := ps.path
	if line > 0 {
		loc += ":" + strconv.Itoa(line)
	}
	if where != "" {
		msg = where + ": " + msg
	}
	ps.list = append(ps.list, problem{line, loc + ": " + msg})
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	slices.SortStableFunc(ps.list, func(a, b problem) int { return cmp.Compare(a.line, b.line) })
	e := &Error{}
	for _, p := range ps.list {
		e.Problems = append(e.Problems, p.text)
	}
	return e
}

// Error lists every problem found in a graph file.
type Error struct {
	// Problems are "FILE:LINE: WHERE: MESSAGE", in the order of the file.
	Problems []string
}

func (e *Error) Error() string { return strings.Join(e.Problems, "\n") }

// read parses a graph file and checks its shape; expressions are only
// split out of their strings here, not compiled.
func read(path string, data []byte, ps *problems) *file {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		ps.add(0, "", "not YAML: %v", err)
		return nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		ps.add(0, "", "is empty or not a mapping; a graph file starts with apiVersion: %s, kind: %s", APIVersion, Kind)
		return nil
	}
	root := doc.Content[0]
	f := &file{path: path}
	// status is what kro's controller reports of an RGD: a file exported
	// from a cluster has it, and it says nothing of the graph.
	top := fields(root, ps, "", "apiVersion", "kind", "metadata", "spec", "status")
	switch av, kind := scalar(top["apiVersion"]), scalar(top["kind"]); {
	case av == APIVersion && kind == Kind, av == KroAPIVersion && (kind == KroKind || kind == KroOldKind):
	case av != APIVersion && av != KroAPIVersion:
		ps.add(line(top["apiVersion"], root), "apiVersion", "is %q, must be %s (resyncd's Graph) or %s (kro's %s)", av, APIVersion, KroAPIVersion, KroKind)
	default:
		ps.add(line(top["kind"], root), "kind", "is %q, must be %s for %s, %s or %s for %s", kind, Kind, APIVersion, KroKind, KroOldKind, KroAPIVersion)
	}
	if md := top["metadata"]; md != nil {
		// The rest of the object's metadata (labels, annotations, the
		// namespace or finalizers of a file exported from a cluster) is
		// the object's, not the graph's.
		f.name = scalar(fields(md, nil, "metadata")["name"])
	}
	spec := top["spec"]
	if spec == nil {
		ps.add(root.Line, "spec", "is missing: a graph lists its children in spec.resources")
		return f
	}
	sf := fields(spec, ps, "spec", "resources", "status", "schema")
	status := sf["status"]
	if sch := sf["schema"]; sch != nil {
		// kro keeps the status under spec.schema, next to the parent kind
		// and the SimpleSchema of its CRD (ParseSchema reads those).
		sc := fields(sch, nil, "spec.schema")
		f.schema = sc["apiVersion"] != nil || sc["kind"] != nil || sc["spec"] != nil
		if sc["status"] != nil {
			if status != nil {
				ps.add(sc["status"].Line, "spec.schema.status", "and spec.status are both set; keep one")
			}
			status = sc["status"]
		}
	}
	if status != nil {
		f.line = status.Line
		if status.Kind != yaml.MappingNode {
			ps.add(status.Line, "spec.status", "must be a mapping of status fields to values")
		} else {
			f.status = newTemplate(status, "spec.status", ps)
		}
	}
	res := sf["resources"]
	switch {
	case res != nil && res.Kind != yaml.SequenceNode && (res.Kind != yaml.ScalarNode || res.Tag != "!!null"):
		ps.add(res.Line, "spec.resources", "must be a list of resources")
		return f
	case res == nil || len(res.Content) == 0:
		// A parent kind with a status only, or with a schema only: kro
		// allows both, for a kind that publishes values computed from its
		// own spec, or that only holds data; its parents get their
		// conditions.
		if f.status == nil && !f.schema {
			ps.add(line(res, spec), "spec.resources", "lists no resource, and the graph declares neither a parent kind (spec.schema) nor status fields: it would do nothing")
		}
		return f
	}
	seen := map[string]int{}
	for i, n := range res.Content {
		r := readResource(n, i, ps)
		if r == nil {
			continue
		}
		if first, dup := seen[r.id]; dup {
			ps.add(r.line, r.where(), "id %q is used by resources[%d] already; ids must be unique", r.id, first)
			continue
		}
		seen[r.id] = i
		f.resources = append(f.resources, r)
	}
	checkIterators(f, ps)
	return f
}

func readResource(n *yaml.Node, i int, ps *problems) *resource {
	where := fmt.Sprintf("resources[%d]", i)
	rf := fields(n, ps, where, "id", "template", "includeWhen", "readyWhen", "externalRef", "forEach")
	r := &resource{id: scalar(rf["id"]), line: n.Line}
	switch {
	case r.id == "":
		ps.add(n.Line, where+".id", "must be set: the name other expressions refer to this resource by")
		return nil
	case !idPattern.MatchString(r.id):
		ps.add(line(rf["id"], n), where+".id", "%q is not an identifier in lowerCamelCase (a letter, then letters and digits)", r.id)
		return nil
	case reserved[r.id]:
		ps.add(line(rf["id"], n), where+".id", "%q is a reserved word", r.id)
		return nil
	}
	where = r.where()
	t, x := rf["template"], rf["externalRef"]
	switch {
	case t != nil && x != nil:
		ps.add(x.Line, where, "sets both template and externalRef; a resource is either a child to write (template) or an object to read (externalRef)")
		if t.Kind == yaml.MappingNode {
			readTemplate(t, where, r, ps) // for its problems too
		}
	case x != nil:
		r.external = readExternalRef(x, where+".externalRef", r, ps)
		if r.external == nil {
			return nil
		}
	case t == nil || t.Kind != yaml.MappingNode:
		ps.add(n.Line, where+".template", "must be the child object to create (or set externalRef, an object to read)")
		return nil
	default:
		readTemplate(t, where, r, ps)
	}
	r.includeWhen = conditions(rf["includeWhen"], where+".includeWhen", ps)
	r.readyWhen = conditions(rf["readyWhen"], where+".readyWhen", ps)
	r.forEach = readForEach(rf["forEach"], x != nil, where+".forEach", ps)
	return r
}

// readTemplate reads the template of a child to write.
func readTemplate(t *yaml.Node, where string, r *resource, ps *problems) {
	tf := fields(t, nil, "", "apiVersion", "kind", "metadata")
	r.apiVersion, r.kind = scalar(tf["apiVersion"]), scalar(tf["kind"])
	if r.apiVersion == "" || r.kind == "" || strings.Contains(r.apiVersion+r.kind, "${") {
		ps.add(t.Line, where+".template", "must set apiVersion and kind, without expressions: they say what resyncd lists and may write")
	}
	md := tf["metadata"]
	if md == nil || md.Kind != yaml.MappingNode {
		ps.add(t.Line, where+".template.metadata", "must set name")
	} else {
		mf := fields(md, nil, "", "name", "namespace", "ownerReferences", "generateName")
		if mf["name"] == nil {
			ps.add(md.Line, where+".template.metadata.name", "must be set")
		}
		if m := mf["namespace"]; m != nil {
			if m.Kind != yaml.ScalarNode || m.Value == "" {
				ps.add(m.Line, where+".template.metadata.namespace", "must be a namespace name or an expression, \"${…}\"; leave it out for the parent's namespace")
			} else {
				r.namespace, r.nsLine = m.Value, m.Line
			}
		}
		if m := mf["generateName"]; m != nil {
			ps.add(m.Line, where+".template.metadata.generateName", "is not supported: a child needs a name that stays the same from pass to pass")
		}
		if m := mf["ownerReferences"]; m != nil {
			ps.add(m.Line, where+".template.metadata.ownerReferences", "resyncd sets the controller reference to the parent; remove it")
		}
	}
	r.template = newTemplate(t, where+".template", ps)
}

// readExternalRef reads an externalRef: apiVersion and kind literal, and
// metadata with exactly one of name and selector, as kro has it.
func readExternalRef(x *yaml.Node, where string, r *resource, ps *problems) *externalRef {
	xf := fields(x, ps, where, "apiVersion", "kind", "metadata")
	if x.Kind != yaml.MappingNode {
		return nil
	}
	r.apiVersion, r.kind = scalar(xf["apiVersion"]), scalar(xf["kind"])
	if r.apiVersion == "" || r.kind == "" || strings.Contains(r.apiVersion+r.kind, "${") {
		ps.add(x.Line, where, "must set apiVersion and kind, without expressions: they say what resyncd lists")
	}
	md := xf["metadata"]
	if md == nil || md.Kind != yaml.MappingNode {
		ps.add(x.Line, where+".metadata", "must set name (one object) or selector (a list of objects)")
		return nil
	}
	mf := fields(md, ps, where+".metadata", "name", "namespace", "selector")
	ext := &externalRef{line: x.Line, namespace: mf["namespace"] != nil}
	switch name, sel := mf["name"], mf["selector"]; {
	case name != nil && sel != nil:
		ps.add(sel.Line, where+".metadata", "sets both name and selector; set one: name reads one object, selector a list")
	case name == nil && sel == nil:
		ps.add(md.Line, where+".metadata", "must set name (one object) or selector (a list of objects)")
	case name != nil && scalar(name) == "":
		ps.add(name.Line, where+".metadata.name", "must be a non-empty string")
	case sel != nil:
		ext.selector = true
		checkSelector(sel, where+".metadata.selector", ps)
	}
	if ns := mf["namespace"]; ns != nil && ns.Kind != yaml.ScalarNode {
		ps.add(ns.Line, where+".metadata.namespace", "must be a string")
	} else if ns != nil {
		ext.nsText, ext.nsLine, ext.nsExpr = ns.Value, ns.Line, strings.Contains(ns.Value, "${")
	}
	ext.metadata = newTemplate(md, where+".metadata", ps)
	return ext
}

// selectorOperators are a label selector's operators.
var selectorOperators = []string{"In", "NotIn", "Exists", "DoesNotExist"}

// checkSelector checks the shape of a label selector: matchLabels, a
// mapping, and matchExpressions, a list of key, operator and values.
// Values may be expressions, so only literals are checked further.
func checkSelector(n *yaml.Node, where string, ps *problems) {
	sf := fields(n, ps, where, "matchLabels", "matchExpressions")
	if n.Kind != yaml.MappingNode {
		return
	}
	if ml := sf["matchLabels"]; ml != nil && ml.Kind != yaml.MappingNode {
		ps.add(ml.Line, where+".matchLabels", "must be a mapping of label keys to values")
	}
	me := sf["matchExpressions"]
	if me == nil {
		return
	}
	if me.Kind != yaml.SequenceNode {
		ps.add(me.Line, where+".matchExpressions", "must be a list of {key, operator, values}")
		return
	}
	for i, c := range me.Content {
		w := fmt.Sprintf("%s.matchExpressions[%d]", where, i)
		cf := fields(c, ps, w, "key", "operator", "values")
		if cf["key"] == nil {
			ps.add(c.Line, w+".key", "must be set")
		}
		op := scalar(cf["operator"])
		if !strings.Contains(op, "${") && !slices.Contains(selectorOperators, op) {
			ps.add(line(cf["operator"], c), w+".operator", "is %q, must be one of %s", op, strings.Join(selectorOperators, ", "))
		}
	}
}

// conditions reads a list of "${…}" strings, each one expression.
func conditions(n *yaml.Node, where string, ps *problems) []*expr {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		ps.add(n.Line, where, "must be a list of expressions, each \"${…}\"")
		return nil
	}
	var out []*expr
	for i, c := range n.Content {
		w := fmt.Sprintf("%s[%d]", where, i)
		parts, err := split(c.Value)
		if c.Kind != yaml.ScalarNode || err != nil || len(parts) != 1 || parts[0].expr == nil {
			ps.add(c.Line, w, "%q must be exactly one expression, \"${…}\"", c.Value)
			continue
		}
		out = append(out, &expr{src: parts[0].expr.src, line: c.Line, where: w})
	}
	return out
}

// fields returns the values of a mapping by key; with ps set, a key not
// in allowed is reported.
func fields(n *yaml.Node, ps *problems, where string, allowed ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		if ps != nil {
			ps.add(n.Line, where, "must be a mapping")
		}
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok && ps != nil {
			key := k
			if where != "" {
				key = where + "." + k
			}
			ps.add(n.Content[i].Line, key, "unknown key; known here: %s", strings.Join(allowed, ", "))
		}
		out[k] = v
	}
	return out
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func line(n, fallback *yaml.Node) int {
	if n != nil {
		return n.Line
	}
	return fallback.Line
}
