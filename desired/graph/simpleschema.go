package graph

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// SchemaError lists what is wrong with a SimpleSchema, each problem with
// the field it is about.
type SchemaError struct {
	// Problems are in the order of their paths.
	Problems []SchemaProblem
}

// SchemaProblem is one thing wrong with a SimpleSchema.
type SchemaProblem struct {
	// Path leads from spec.schema to the field: [spec ingress host] or
	// [types Server port].
	Path []string
	// Message says what is wrong and what the field may be instead.
	Message string
}

// Field spells the problem's path as kubectl explain does: spec.ingress.host.
func (p SchemaProblem) Field() string { return strings.Join(p.Path, ".") }

func (e *SchemaError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Field() + ": " + p.Message
	}
	return strings.Join(lines, "\n")
}

// ParseSimpleSchema turns kro's SimpleSchema into the OpenAPI schema of a
// parent's spec. spec maps each field to a type string ("integer |
// default=1 minimum=0") or to a mapping of nested fields; types maps the
// names of custom types to the same, and spec and other types may use
// them by name. The error, a *SchemaError, lists every problem found.
//
// The schema is kro's: float is OpenAPI's number, object keeps unknown
// fields, a custom type is expanded where it is used, an object whose
// fields have defaults and none is required defaults to {} so that its
// fields' defaults apply when it is left out, uniqueItems is
// x-kubernetes-list-type set (CRDs refuse uniqueItems itself) and
// immutable is the validation rule self == oldSelf.
func ParseSimpleSchema(spec, types map[string]any) (*extv1.JSONSchemaProps, error) {
	p := &simpleParser{raw: types, custom: map[string]*customType{}}
	for _, name := range sortedKeys(types) {
		p.customType(name)
	}
	s := p.object([]string{"spec"}, spec)
	if len(p.problems) > 0 {
		slices.SortStableFunc(p.problems, func(a, b SchemaProblem) int { return slices.Compare(a.Path, b.Path) })
		return nil, &SchemaError{Problems: p.problems}
	}
	return s, nil
}

// maxTypeDepth bounds how deeply []/map[string] may nest in one type
// string, as kro does.
const maxTypeDepth = 16

// simpleParser builds the schemas of one SimpleSchema.
type simpleParser struct {
	raw    map[string]any
	custom map[string]*customType
	// stack are the custom types being built, outermost first, to name a
	// cycle.
	stack    []string
	problems []SchemaProblem
}

// customType is a type of the types section, built once.
type customType struct {
	schema *extv1.JSONSchemaProps
	// required says the type is an alias marked required=true: every field
	// of the type is required.
	required bool
	// building is set while its schema is built, to find cycles.
	building bool
	// failed says the type has problems of its own, reported once.
	failed bool
}

func (p *simpleParser) add(path []string, format string, args ...any) {
	p.problems = append(p.problems, SchemaProblem{Path: slices.Clone(path), Message: fmt.Sprintf(format, args...)})
}

// customType builds the named type of the types section, once.
func (p *simpleParser) customType(name string) *customType {
	if ct := p.custom[name]; ct != nil {
		return ct
	}
	ct := &customType{building: true}
	p.custom[name] = ct
	p.stack = append(p.stack, name)
	before := len(p.problems)
	path := []string{"types", name}
	switch v := p.raw[name].(type) {
	case string:
		holder := &extv1.JSONSchemaProps{}
		ct.schema = p.field(path, v, holder)
		ct.required = len(holder.Required) > 0
	case map[string]any:
		ct.schema = p.object(path, v)
	default:
		p.add(path, "is %s; a type is a type string (\"string | default=x\") or a mapping of fields", describeValue(v))
	}
	p.stack = p.stack[:len(p.stack)-1]
	ct.building = false
	ct.failed = ct.schema == nil || len(p.problems) > before
	return ct
}

// object builds the schema of a mapping of fields.
func (p *simpleParser) object(path []string, fields map[string]any) *extv1.JSONSchemaProps {
	s := &extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{}}
	defaulted := false
	for _, name := range sortedKeys(fields) {
		fp := append(path[:len(path):len(path)], name)
		var fs *extv1.JSONSchemaProps
		switch v := fields[name].(type) {
		case string:
			fs = p.field(fp, v, s)
		case map[string]any:
			fs = p.object(fp, v)
		default:
			p.add(fp, "is %s; a field is a type string (\"integer | default=1\") or a mapping of nested fields", describeValue(v))
		}
		if fs == nil {
			continue
		}
		s.Properties[name] = *fs
		defaulted = defaulted || fs.Default != nil
	}
	s.Required = slices.Compact(slices.Sorted(slices.Values(s.Required)))
	if len(s.Required) == 0 {
		s.Required = nil
		if defaulted {
			// Without a default of its own the object stays absent when
			// left out, and so do its fields' defaults.
			s.Default = &extv1.JSON{Raw: []byte("{}")}
		}
	}
	return s
}

// field builds the schema of a field written as a type string with
// markers; a required marker adds the field to parent's required.
func (p *simpleParser) field(path []string, text string, parent *extv1.JSONSchemaProps) *extv1.JSONSchemaProps {
	typeText, markerText, hasMarkers := strings.Cut(text, "|")
	t, err := parseSimpleType(typeText, 0)
	if err != nil {
		p.add(path, "type %q: %v", strings.TrimSpace(typeText), err)
		return nil
	}
	s, required, ok := p.schemaOf(path, t)
	if !ok {
		return nil
	}
	name := path[len(path)-1]
	if required {
		parent.Required = append(parent.Required, name)
	}
	if !hasMarkers {
		return s
	}
	markers, err := parseMarkers(markerText)
	if err != nil {
		p.add(path, "markers %q: %v", strings.TrimSpace(markerText), err)
		return nil
	}
	for _, m := range markers {
		if err := applyMarker(s, m, name, parent); err != nil {
			p.add(path, "%s=%s: %v", m.key, m.value, err)
			return nil
		}
	}
	if len(s.XListMapKeys) > 0 && (s.XListType == nil || *s.XListType != "map") {
		p.add(path, "listMapKey needs listType=map")
		return nil
	}
	if err := checkDefault(s); err != nil {
		p.add(path, "%v", err)
		return nil
	}
	return s
}

// simpleType is a parsed type string.
type simpleType struct {
	// openAPI is the OpenAPI type of a scalar, "object" for object; empty
	// for the others.
	openAPI string
	// list and dict hold the element type of []T and map[string]T.
	list, dict *simpleType
	// custom names a type of the types section.
	custom string
}

// typeHints name SimpleSchema's type for names people reach for first.
var typeHints = map[string]string{
	"number": "float", "double": "float", "float64": "float", "float32": "float",
	"int": "integer", "int32": "integer", "int64": "integer",
	"bool": "boolean", "str": "string", "map": "map[string]T", "array": "[]T", "list": "[]T",
}

func parseSimpleType(text string, depth int) (*simpleType, error) {
	if depth > maxTypeDepth {
		return nil, fmt.Errorf("nests deeper than %d levels", maxTypeDepth)
	}
	text = strings.TrimSpace(text)
	switch text {
	case "":
		return nil, fmt.Errorf("is empty: a field needs a type (string, integer, boolean, float, object, []T, map[string]T or a type of types)")
	case "string", "integer", "boolean":
		return &simpleType{openAPI: text}, nil
	case "float":
		return &simpleType{openAPI: "number"}, nil
	case "object":
		return &simpleType{openAPI: "object"}, nil
	}
	if elem, ok := strings.CutPrefix(text, "[]"); ok {
		if strings.TrimSpace(elem) == "" {
			return nil, fmt.Errorf("[] needs an element type, as in []string")
		}
		e, err := parseSimpleType(elem, depth+1)
		return &simpleType{list: e}, err
	}
	if strings.HasPrefix(text, "map[") {
		val, ok := strings.CutPrefix(text, "map[string]")
		if !ok {
			return nil, fmt.Errorf("a map's keys must be strings, as in map[string]integer")
		}
		if strings.TrimSpace(val) == "" {
			return nil, fmt.Errorf("map[string] needs a value type, as in map[string]string")
		}
		v, err := parseSimpleType(val, depth+1)
		return &simpleType{dict: v}, err
	}
	return &simpleType{custom: text}, nil
}

// schemaOf builds the schema of t, expanding custom types; required says
// t is an alias marked required=true. Problems are reported at path.
func (p *simpleParser) schemaOf(path []string, t *simpleType) (*extv1.JSONSchemaProps, bool, bool) {
	switch {
	case t.list != nil:
		e, _, ok := p.schemaOf(path, t.list)
		if !ok {
			return nil, false, false
		}
		return &extv1.JSONSchemaProps{Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: e}}, false, true
	case t.dict != nil:
		v, _, ok := p.schemaOf(path, t.dict)
		if !ok {
			return nil, false, false
		}
		return &extv1.JSONSchemaProps{Type: "object", AdditionalProperties: &extv1.JSONSchemaPropsOrBool{Allows: true, Schema: v}}, false, true
	case t.openAPI == "object":
		yes := true
		return &extv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}, false, true
	case t.openAPI != "":
		return &extv1.JSONSchemaProps{Type: t.openAPI}, false, true
	}
	if _, ok := p.raw[t.custom]; !ok {
		msg := fmt.Sprintf("unknown type %q: not a SimpleSchema type (string, integer, boolean, float, object, []T, map[string]T) nor one of types", t.custom)
		if hint, ok := typeHints[t.custom]; ok {
			msg += "; SimpleSchema spells it " + hint
		} else if names := sortedKeys(p.raw); len(names) > 0 {
			msg += " (" + strings.Join(names, ", ") + ")"
		}
		p.add(path, "%s", msg)
		return nil, false, false
	}
	if ct := p.custom[t.custom]; ct != nil && ct.building {
		i := slices.Index(p.stack, t.custom)
		cycle := append(slices.Clone(p.stack[i:]), t.custom)
		p.add(path, "types refer to each other in a cycle: %s; break it with an inline mapping or object", strings.Join(cycle, " → "))
		return nil, false, false
	}
	ct := p.customType(t.custom)
	if ct.failed {
		return nil, false, false // reported where the type is declared
	}
	return ct.schema.DeepCopy(), ct.required, true
}

// marker is one key=value after a type's "|".
type marker struct {
	key, value string
}

// markerKeys are the markers kro knows.
var markerKeys = []string{"required", "default", "description", "minimum", "maximum", "validation", "enum",
	"immutable", "pattern", "uniqueItems", "minLength", "maxLength", "minItems", "maxItems", "listType", "listMapKey"}

// parseMarkers splits the markers of a type string: key=value pairs apart
// by white space, where a value may be a "quoted string" (\" and \\
// escape) or a JSON value whose brackets and braces hold spaces.
func parseMarkers(text string) ([]marker, error) {
	var tokens []string
	var cur strings.Builder
	inQuote, escaped, depth := false, false, 0
	for _, c := range text {
		switch {
		case escaped:
			escaped = false
		case inQuote && c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
		case inQuote:
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("%q closes a bracket that is not open", c)
			}
		case unicode.IsSpace(c) && depth == 0:
			if cur.Len() > 0 {
				tokens = append(tokens, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(c)
	}
	switch {
	case inQuote:
		return nil, fmt.Errorf("a quote is not closed")
	case depth > 0:
		return nil, fmt.Errorf("a bracket or brace is not closed")
	}
	if cur.Len() > 0 {
		tokens = append(tokens, cur.String())
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("no marker after \"|\"; write key=value, as in default=1")
	}
	out := make([]marker, 0, len(tokens))
	for _, tok := range tokens {
		key, value, ok := strings.Cut(tok, "=")
		if !ok {
			return nil, fmt.Errorf("%q has no value; write %s=VALUE", tok, tok)
		}
		if !slices.Contains(markerKeys, key) {
			return nil, fmt.Errorf("unknown marker %q; known: %s", key, strings.Join(markerKeys, ", "))
		}
		out = append(out, marker{key: key, value: unquote(value)})
	}
	return out, nil
}

// unquote takes a quoted value out of its quotes: \" and \\ stand for
// themselves, any other backslash is kept, so that a pattern's \d
// survives.
func unquote(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return strings.TrimSpace(v)
	}
	var b strings.Builder
	escaped := false
	for _, c := range v[1 : len(v)-1] {
		switch {
		case escaped:
			if c != '"' && c != '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
			escaped = false
		case c == '\\':
			escaped = true
		default:
			b.WriteRune(c)
		}
	}
	if escaped {
		b.WriteByte('\\')
	}
	return b.String()
}

// applyMarker sets what m says on s, the schema of the field name of
// parent.
func applyMarker(s *extv1.JSONSchemaProps, m marker, name string, parent *extv1.JSONSchemaProps) error {
	switch m.key {
	case "required":
		b, err := parseBool(m.value)
		if err == nil && b {
			parent.Required = append(parent.Required, name)
		}
		return err
	case "default":
		raw, err := defaultJSON(s, m.value)
		if err != nil {
			return err
		}
		s.Default = &extv1.JSON{Raw: raw}
	case "description":
		s.Description = m.value
	case "minimum", "maximum":
		f, err := strconv.ParseFloat(m.value, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("is not a number")
		}
		if m.key == "minimum" {
			s.Minimum = &f
		} else {
			s.Maximum = &f
		}
	case "validation":
		if strings.TrimSpace(m.value) == "" {
			return fmt.Errorf("needs a CEL rule")
		}
		s.XValidations = append(s.XValidations, extv1.ValidationRule{Rule: m.value, Message: "validation failed"})
	case "immutable":
		b, err := parseBool(m.value)
		if err == nil && b {
			s.XValidations = append(s.XValidations, extv1.ValidationRule{Rule: "self == oldSelf", Message: "field is immutable"})
		}
		return err
	case "enum":
		return applyEnum(s, m.value)
	case "pattern":
		if err := want(s, "string"); err != nil {
			return err
		}
		if m.value == "" {
			return fmt.Errorf("needs a regular expression")
		}
		if _, err := regexp.Compile(m.value); err != nil {
			return fmt.Errorf("is not a regular expression: %w", err)
		}
		s.Pattern = m.value
	case "minLength", "maxLength", "minItems", "maxItems":
		return applyBound(s, m)
	case "uniqueItems":
		if err := want(s, "array"); err != nil {
			return err
		}
		b, err := parseBool(m.value)
		if err != nil || !b {
			return err
		}
		return setListType(s, "set")
	case "listType":
		if err := want(s, "array"); err != nil {
			return err
		}
		if m.value != "atomic" && m.value != "set" && m.value != "map" {
			return fmt.Errorf("must be atomic, set or map")
		}
		return setListType(s, m.value)
	case "listMapKey":
		if err := want(s, "array"); err != nil {
			return err
		}
		if slices.Contains(s.XListMapKeys, m.value) {
			return fmt.Errorf("is given twice")
		}
		s.XListMapKeys = append(s.XListMapKeys, m.value)
	}
	return nil
}

func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("must be true or false")
	}
	return b, nil
}

// want says a marker fits only fields of type t.
func want(s *extv1.JSONSchemaProps, t string) error {
	if s.Type != t {
		return fmt.Errorf("applies to %s fields only, this one is %s", t, typeName(s))
	}
	return nil
}

// typeName names a schema's type as SimpleSchema spells it.
func typeName(s *extv1.JSONSchemaProps) string {
	switch s.Type {
	case "number":
		return "float"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return s.Type
}

func setListType(s *extv1.JSONSchemaProps, t string) error {
	if s.XListType != nil && *s.XListType != t {
		return fmt.Errorf("contradicts listType %s set before (uniqueItems=true is listType=set)", *s.XListType)
	}
	s.XListType = &t
	return nil
}

func applyBound(s *extv1.JSONSchemaProps, m marker) error {
	t := "array"
	if strings.HasSuffix(m.key, "Length") {
		t = "string"
	}
	if err := want(s, t); err != nil {
		return err
	}
	n, err := strconv.ParseInt(m.value, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("must be a whole number, 0 or more")
	}
	switch m.key {
	case "minLength":
		s.MinLength = &n
	case "maxLength":
		s.MaxLength = &n
	case "minItems":
		s.MinItems = &n
	case "maxItems":
		s.MaxItems = &n
	}
	return nil
}

func applyEnum(s *extv1.JSONSchemaProps, v string) error {
	if s.Type != "string" && s.Type != "integer" {
		return fmt.Errorf("applies to string and integer fields only, this one is %s", typeName(s))
	}
	var values []extv1.JSON
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			return fmt.Errorf("has an empty value; list values apart by commas, as in enum=\"a,b\"")
		}
		raw, err := defaultJSON(s, e)
		if err != nil {
			return fmt.Errorf("value %q: %w", e, err)
		}
		values = append(values, extv1.JSON{Raw: raw})
	}
	s.Enum = values
	return nil
}

// defaultJSON is v as a JSON value of s's type: a scalar as written, an
// array or object as JSON.
func defaultJSON(s *extv1.JSONSchemaProps, v string) ([]byte, error) {
	switch s.Type {
	case "string":
		return json.Marshal(v)
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("is not an integer")
		}
		return []byte(strconv.FormatInt(n, 10)), nil
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("is not a number")
		}
		return json.Marshal(f)
	case "boolean":
		b, err := parseBool(v)
		if err != nil {
			return nil, err
		}
		return []byte(strconv.FormatBool(b)), nil
	}
	var x any
	if err := utiljson.Unmarshal([]byte(v), &x); err != nil {
		return nil, fmt.Errorf("is not JSON, which the default of %s field is", typeName(s))
	}
	switch x.(type) {
	case []any:
		if s.Type == "array" {
			return []byte(v), nil
		}
	case map[string]any:
		if s.Type == "object" {
			return []byte(v), nil
		}
	}
	return nil, fmt.Errorf("is %s, the field is %s", describeValue(x), typeName(s))
}

// checkDefault validates a field's default against the field's schema,
// as the API server does when it is given the CRD.
func checkDefault(s *extv1.JSONSchemaProps) error {
	if s.Default == nil {
		return nil
	}
	bare := s.DeepCopy()
	bare.Default = nil
	// Under a field named default, the validator's messages name it.
	holder := &extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{"default": *bare}}
	var internal apiextensions.JSONSchemaProps
	if err := extv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(holder, &internal, nil); err != nil {
		return fmt.Errorf("default: %w", err)
	}
	v, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return fmt.Errorf("default: %w", err)
	}
	var x any
	if err := utiljson.Unmarshal(s.Default.Raw, &x); err != nil {
		return fmt.Errorf("default: %w", err)
	}
	errs := apiservervalidation.ValidateCustomResource(nil, map[string]any{"default": x}, v)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s does not fit the field: %s", s.Default.Raw, strings.Join(msgs, "; "))
}

// describeValue names the kind of a decoded YAML value for a message.
func describeValue(v any) string {
	switch v.(type) {
	case nil:
		return "empty"
	case bool:
		return "a boolean"
	case int, int64, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
