package graph

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// tmpl is a template: a YAML value whose strings may hold expressions.
type tmpl struct {
	// value is the template with its literal values decoded; the strings
	// that hold expressions are replaced by what slots produce.
	value any
	// slots are the strings that hold expressions, in document order.
	slots []*slot
}

// slot is a string of a template that holds at least one expression.
type slot struct {
	// path leads from the template's root to the string: keys and indices.
	path  []any
	where string
	line  int
	parts []part
	// name says the string is the template's metadata.name or
	// metadata.namespace: what identifies the object, evaluated on its
	// own when only that is needed; field says which of the two.
	name  bool
	field identity
}

// identity is the field of a template's metadata that a slot fills, if
// it is one of those that identify the object.
type identity int

const (
	identityNone identity = iota
	identityName
	identityNamespace
)

// standalone says the string is one expression and nothing else: the
// value keeps the expression's type.
func (s *slot) standalone() bool { return len(s.parts) == 1 && s.parts[0].expr != nil }

// part is a piece of a string: literal text or an expression.
type part struct {
	text string
	expr *expr
}

// newTemplate decodes n and finds the expressions in its strings.
func newTemplate(n *yaml.Node, where string, ps *problems) *tmpl {
	t := &tmpl{}
	t.value = t.walk(n, nil, where, ps)
	return t
}

func (t *tmpl) walk(n *yaml.Node, path []any, where string, ps *problems) any {
	switch n.Kind {
	case yaml.AliasNode:
		return t.walk(n.Alias, path, where, ps)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if strings.Contains(k, "${") {
				ps.add(n.Content[i].Line, where, "key %q holds an expression; only values may", k)
				continue
			}
			m[k] = t.walk(n.Content[i+1], append(path[:len(path):len(path)], k), where+"."+k, ps)
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			l[i] = t.walk(c, append(path[:len(path):len(path)], i), fmt.Sprintf("%s[%d]", where, i), ps)
		}
		return l
	}
	var v any
	if err := n.Decode(&v); err != nil {
		ps.add(n.Line, where, "%v", err)
		return nil
	}
	switch x := v.(type) {
	case int:
		return int64(x)
	case string:
		if !strings.Contains(x, "${") {
			return x
		}
		parts, err := split(x)
		if err != nil {
			ps.add(n.Line, where, "%v", err)
			return x
		}
		s := &slot{path: path, where: where, line: n.Line, parts: parts}
		switch pathString(path) {
		case "metadata.name":
			s.name, s.field = true, identityName
		case "metadata.namespace":
			s.name, s.field = true, identityNamespace
		}
		for _, p := range parts {
			if p.expr != nil {
				p.expr.line, p.expr.where = n.Line, where
			}
		}
		t.slots = append(t.slots, s)
		return x
	}
	return v
}

// split cuts a string into literal text and the expressions of its
// "${…}"; braces and quotes inside an expression are matched, so
// "${ {'a': 1}['a'] }" is one expression.
func split(s string) ([]part, error) {
	var parts []part
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			if s != "" {
				parts = append(parts, part{text: s})
			}
			return parts, nil
		}
		if i > 0 {
			parts = append(parts, part{text: s[:i]})
		}
		end, err := closing(s[i+2:])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		src := strings.TrimSpace(s[i+2 : i+2+end])
		if src == "" {
			return nil, fmt.Errorf("%q: empty expression ${}", s)
		}
		parts = append(parts, part{expr: &expr{src: src}})
		s = s[i+2+end+1:]
	}
}

// closing returns the index of the "}" that ends an expression.
func closing(s string) (int, error) {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			if depth == 0 {
				return i, nil
			}
			depth--
		}
	}
	return 0, fmt.Errorf("an expression \"${\" is not closed by \"}\"")
}

// pathString spells a template path as messages do: spec.ports[0].port.
func pathString(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch x := p.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(x)
		case int:
			b.WriteString("[" + strconv.Itoa(x) + "]")
		}
	}
	return b.String()
}
