package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

var durationType = reflect.TypeFor[time.Duration]()

// checkNode compares a YAML node with the Go type it decodes into: unknown
// and repeated keys, and scalars of the wrong kind, are problems, and are
// taken out of n. It records the line of every key it sees.
func checkNode(ps *problems, n *yaml.Node, t reflect.Type, path string) {
	if n == nil || n.Tag == "!!null" {
		return
	}
	switch {
	case t.Kind() == reflect.Struct:
		checkMapping(ps, n, t, path)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			ps.addAt(n.Line, path, "is a %s, want a list", nodeKind(n))
			return
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			ps.lines[p] = item.Line
			checkNode(ps, item, t.Elem(), p)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			ps.addAt(n.Line, path, "is a %s, want a single value", nodeKind(n))
			return
		}
		if msg := checkScalar(n.Value, n.Tag, t); msg != "" {
			ps.addAt(n.Line, path, "%s", msg)
		}
	}
}

func checkMapping(ps *problems, n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		ps.addAt(n.Line, path, "is a %s, want a mapping of keys", nodeKind(n))
		return
	}
	fields := fieldsOf(t)
	seen := map[string]bool{}
	drop := map[int]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := joinKey(path, k.Value)
		if seen[k.Value] {
			ps.addAt(k.Line, p, "is set twice")
			drop[i] = true
			continue
		}
		seen[k.Value] = true
		ps.lines[p] = k.Line
		f, ok := fields[k.Value]
		if !ok {
			ps.addAt(k.Line, p, "unknown key%s", suggest(k.Value, fields))
			drop[i] = true
			continue
		}
		before := len(ps.list)
		checkNode(ps, v, f.Type, p)
		if len(ps.list) > before && (v.Kind == yaml.ScalarNode || kindOf(f.Type) != v.Kind) {
			drop[i] = true
		}
	}
	// What is reported here is left out of the document that is decoded
	// next (its default stands in), so that one run reports every problem
	// of the file, those of the values too.
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !drop[i] {
			kept = append(kept, n.Content[i], n.Content[i+1])
		} else if ps.reported != nil {
			ps.reported[joinKey(path, n.Content[i].Value)] = true
		}
	}
	n.Content = kept
}

// kindOf is the kind of YAML node a value of Go type t is written as.
func kindOf(t reflect.Type) yaml.Kind {
	switch t.Kind() {
	case reflect.Struct:
		return yaml.MappingNode
	case reflect.Slice:
		return yaml.SequenceNode
	default:
		return yaml.ScalarNode
	}
}

// checkScalar returns what is wrong with value as a t, or "".
func checkScalar(value, tag string, t reflect.Type) string {
	if t == durationType {
		if _, err := time.ParseDuration(value); err != nil {
			return fmt.Sprintf("%q is not a duration (for example 30s, 5m, 1h)", value)
		}
		return ""
	}
	switch t.Kind() {
	case reflect.Bool:
		if _, err := strconv.ParseBool(value); err != nil || (tag != "" && tag != "!!bool" && tag != "!!str") {
			return fmt.Sprintf("%q is not true or false", value)
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Sprintf("%q is not a whole number", value)
		}
		if t.Kind() == reflect.Int32 && (n < math.MinInt32 || n > math.MaxInt32) {
			return fmt.Sprintf("%d is out of range", n)
		}
	case reflect.Float64:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return fmt.Sprintf("%q is not a number", value)
		}
	}
	return ""
}

// fieldsOf maps the mapstructure names of t's fields to the fields.
func fieldsOf(t reflect.Type) map[string]reflect.StructField {
	m := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if name := f.Tag.Get("mapstructure"); name != "" && name != "-" {
			m[name] = f
		}
	}
	return m
}

// scalarKeys lists the key paths of every scalar below v that an
// environment variable or flag may set, with the value v holds there (its
// type is the key's type). Lists (resources) are left out: they come only
// from the file.
func scalarKeys(v reflect.Value, prefix string, out map[string]reflect.Value) {
	for name, f := range fieldsOf(v.Type()) {
		key := joinKey(prefix, name)
		fv := v.FieldByIndex(f.Index)
		switch fv.Kind() {
		case reflect.Struct:
			scalarKeys(fv, key, out)
		case reflect.Slice:
		default:
			out[key] = fv
		}
	}
}

func suggest(key string, fields map[string]reflect.StructField) string {
	best, bestDist := "", 3
	for name := range fields {
		if strings.EqualFold(name, key) {
			return fmt.Sprintf(" (did you mean %q? keys are case-sensitive)", name)
		}
		if d := distance(strings.ToLower(key), strings.ToLower(name)); d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	default:
		return "single value"
	}
}
