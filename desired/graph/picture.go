package graph

import (
	"fmt"
	"slices"
	"strings"
)

// Picture is the dependency graph of a graph file, for drawing: the
// parent, every resource in apply order with the resources it reads, and
// the parent's status.
type Picture struct {
	// Name is the graph's metadata.name.
	Name string
	// Nodes are the resources, a resource after those it reads.
	Nodes []Node
	// Status lists the resources the parent's status fields read, and
	// StatusReadsParent says they read the parent.
	Status            []string
	StatusReadsParent bool
}

// Node is one resource of a Picture.
type Node struct {
	ID, APIVersion, Kind string
	// External: an externalRef, read and never written; Selector: it
	// selects a list by labels rather than naming one object.
	External, Selector bool
	// ForEach are the iterators of a collection, `name: ${…}` each.
	ForEach []string
	// IncludeWhen and ReadyWhen are the expressions as written.
	IncludeWhen, ReadyWhen []string
	// Reads are the ids of the resources its expressions read, sorted;
	// ReadsParent says they read the parent (schema).
	Reads       []string
	ReadsParent bool
}

// Picture returns the dependency graph of the loaded file.
func (r *Renderer) Picture() Picture {
	p := Picture{Name: r.name}
	for _, res := range r.resources {
		n := Node{ID: res.id, APIVersion: res.apiVersion, Kind: res.kind, External: res.external != nil,
			Selector: res.external != nil && res.external.selector}
		for _, it := range res.forEach {
			n.ForEach = append(n.ForEach, it.name+": "+it.expr.src)
		}
		for _, e := range res.includeWhen {
			n.IncludeWhen = append(n.IncludeWhen, e.src)
		}
		for _, e := range res.readyWhen {
			n.ReadyWhen = append(n.ReadyWhen, e.src)
		}
		n.Reads, n.ReadsParent = readsOf(r, res.expressions(), res.id)
		p.Nodes = append(p.Nodes, n)
	}
	if r.status != nil {
		p.Status, p.StatusReadsParent = readsOf(r, r.status.expressions(), "")
	}
	return p
}

// readsOf returns the resources of r that exprs read, but self, sorted, and
// whether they read the parent.
func readsOf(r *Renderer, exprs []*expr, self string) ([]string, bool) {
	var ids []string
	parent := false
	for _, e := range exprs {
		for _, ref := range e.refs {
			switch {
			case ref == ParentVar:
				parent = true
			case ref != self && !slices.Contains(ids, ref) && r.has(ref):
				ids = append(ids, ref)
			}
		}
	}
	slices.Sort(ids)
	return ids, parent
}

func (r *Renderer) has(id string) bool {
	return slices.ContainsFunc(r.resources, func(res *resource) bool { return res.id == id })
}

// Dot is the picture in Graphviz's language (`dot -Tsvg`): an arrow from
// what is read to what reads it; a collection drawn as a stack, an
// external reference dashed, includeWhen and readyWhen in the label.
func (p Picture) Dot() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n\trankdir=LR;\n\tnode [shape=box, fontname=\"Helvetica\"];\n", dotQuote(p.Name))
	fmt.Fprintf(&b, "\tschema [label=%s, shape=ellipse];\n", dotQuote("schema\n(the parent)"))
	for _, n := range p.Nodes {
		attrs := []string{"label=" + dotQuote(strings.Join(n.lines(), "\n"))}
		if n.External {
			attrs = append(attrs, "style=dashed")
		}
		if len(n.ForEach) > 0 {
			attrs = append(attrs, "shape=box3d")
		}
		fmt.Fprintf(&b, "\t%s [%s];\n", dotQuote(n.ID), strings.Join(attrs, ", "))
	}
	if len(p.Status) > 0 || p.StatusReadsParent {
		fmt.Fprintf(&b, "\tstatus [label=%s, shape=ellipse];\n", dotQuote("status\n(the parent's)"))
	}
	external := map[string]bool{}
	for _, n := range p.Nodes {
		external[n.ID] = n.External
	}
	edge := func(from, to string) {
		style := ""
		if external[from] {
			style = " [style=dashed]"
		}
		fmt.Fprintf(&b, "\t%s -> %s%s;\n", dotQuote(from), dotQuote(to), style)
	}
	for _, n := range p.Nodes {
		if n.ReadsParent {
			fmt.Fprintf(&b, "\tschema -> %s;\n", dotQuote(n.ID))
		}
		for _, d := range n.Reads {
			edge(d, n.ID)
		}
	}
	if p.StatusReadsParent {
		b.WriteString("\tschema -> status;\n")
	}
	for _, d := range p.Status {
		edge(d, "status")
	}
	b.WriteString("}\n")
	return b.String()
}

// Mermaid is the picture as a Mermaid flowchart (GitHub draws it in a
// ```mermaid block): the same arrows; a collection drawn as a subroutine
// box, an external reference as a rounded one.
func (p Picture) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	b.WriteString("  schema([\"schema<br>(the parent)\"])\n")
	for i, n := range p.Nodes {
		label := mermaidQuote(strings.Join(n.lines(), "<br>"))
		switch {
		case n.External:
			fmt.Fprintf(&b, "  r%d(%s)\n", i, label)
		case len(n.ForEach) > 0:
			fmt.Fprintf(&b, "  r%d[[%s]]\n", i, label)
		default:
			fmt.Fprintf(&b, "  r%d[%s]\n", i, label)
		}
	}
	if len(p.Status) > 0 || p.StatusReadsParent {
		b.WriteString("  status([\"status<br>(the parent's)\"])\n")
	}
	index := map[string]int{}
	for i, n := range p.Nodes {
		index[n.ID] = i
	}
	for i, n := range p.Nodes {
		if n.ReadsParent {
			fmt.Fprintf(&b, "  schema --> r%d\n", i)
		}
		for _, d := range n.Reads {
			fmt.Fprintf(&b, "  r%d %s r%d\n", index[d], mermaidArrow(p.Nodes[index[d]]), i)
		}
	}
	if p.StatusReadsParent {
		b.WriteString("  schema --> status\n")
	}
	for _, d := range p.Status {
		fmt.Fprintf(&b, "  r%d %s status\n", index[d], mermaidArrow(p.Nodes[index[d]]))
	}
	return b.String()
}

// mermaidArrow is the arrow from n: dotted from an external reference.
func mermaidArrow(n Node) string {
	if n.External {
		return "-.->"
	}
	return "-->"
}

// lines are the label of a node: its id and kind, then what decides
// whether it exists, how many there are and when it is ready.
func (n Node) lines() []string {
	kind := n.Kind
	if g, _, found := strings.Cut(n.APIVersion, "/"); found {
		kind += "." + g
	}
	out := []string{n.ID, kind}
	switch {
	case n.Selector:
		out = append(out, "externalRef (selector, read only)")
	case n.External:
		out = append(out, "externalRef (read only)")
	}
	for _, f := range n.ForEach {
		out = append(out, "forEach "+f)
	}
	for _, w := range n.IncludeWhen {
		out = append(out, "includeWhen "+w)
	}
	for _, w := range n.ReadyWhen {
		out = append(out, "readyWhen "+w)
	}
	return out
}

// dotQuote quotes s as a Graphviz string.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// mermaidQuote quotes s as a Mermaid label: in double quotes, which it
// spells as an entity inside them.
func mermaidQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, "#quot;") + `"`
}
