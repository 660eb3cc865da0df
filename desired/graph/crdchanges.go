package graph

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// BreakingChanges lists what replacing the CRD stored with next would
// break for the objects the API server stores of the kind, the rules kro
// applies before it updates a CRD: a version removed or no longer served,
// the scope or kind changed, the status subresource removed, and in each
// version's schema a field removed or of another type, a field newly
// required (a new one without a default), a required field's default
// removed, values refused that were accepted (an enum value removed or an
// enum added, a pattern added or changed, a bound added or tightened), or
// unknown fields no longer kept. Adding optional fields, relaxing bounds,
// changing descriptions or defaults is not breaking. Empty: next may be
// applied.
func BreakingChanges(stored, next *extv1.CustomResourceDefinition) []string {
	var out []string
	if stored.Spec.Scope != next.Spec.Scope {
		out = append(out, fmt.Sprintf("spec.scope: %s would become %s: the objects stored are %s", stored.Spec.Scope, next.Spec.Scope, strings.ToLower(string(stored.Spec.Scope))))
	}
	if stored.Spec.Names.Kind != next.Spec.Names.Kind {
		out = append(out, fmt.Sprintf("spec.names.kind: %s would become %s", stored.Spec.Names.Kind, next.Spec.Names.Kind))
	}
	for _, old := range stored.Spec.Versions {
		i := slices.IndexFunc(next.Spec.Versions, func(v extv1.CustomResourceDefinitionVersion) bool { return v.Name == old.Name })
		switch {
		case i < 0 && (old.Served || slices.Contains(stored.Status.StoredVersions, old.Name)):
			out = append(out, fmt.Sprintf("spec.versions: %s would be removed", old.Name))
			continue
		case i < 0:
			continue
		}
		nv := next.Spec.Versions[i]
		where := "spec.versions[" + old.Name + "]"
		if old.Served && !nv.Served {
			out = append(out, where+".served: would become false")
		}
		if old.Subresources != nil && old.Subresources.Status != nil && (nv.Subresources == nil || nv.Subresources.Status == nil) {
			out = append(out, where+".subresources.status: would be removed")
		}
		if old.Schema != nil && old.Schema.OpenAPIV3Schema != nil {
			var ns *extv1.JSONSchemaProps
			if nv.Schema != nil {
				ns = nv.Schema.OpenAPIV3Schema
			}
			out = append(out, schemaChanges(old.Name+": ", old.Schema.OpenAPIV3Schema, ns)...)
		}
	}
	return out
}

// schemaChanges lists what is breaking in next against old at path.
func schemaChanges(path string, old, next *extv1.JSONSchemaProps) []string {
	if next == nil {
		return []string{path + "would be removed"}
	}
	at := strings.TrimSuffix(path, ".") + ": "
	if old.Type != next.Type {
		return []string{fmt.Sprintf("%stype %s would become %s", at, anyType(old.Type), anyType(next.Type))}
	}
	var out []string
	add := func(format string, args ...any) { out = append(out, at+fmt.Sprintf(format, args...)) }
	if preserves(old) && !preserves(next) {
		add("unknown fields would no longer be kept (x-kubernetes-preserve-unknown-fields)")
	}
	switch {
	case old.Pattern == "" && next.Pattern != "":
		add("pattern %q would be added", next.Pattern)
	case old.Pattern != "" && next.Pattern != "" && old.Pattern != next.Pattern:
		add("pattern %q would become %q", old.Pattern, next.Pattern)
	}
	enumChanges(old, next, add)
	// A list that becomes a set refuses the duplicates stored lists may
	// hold; one merged by other keys (or no longer merged) changes what
	// server-side apply does with every list already written.
	if o, n := listType(old), listType(next); o != n {
		add("list type %s would become %s", o, n)
	} else if o == "map" && !slices.Equal(old.XListMapKeys, next.XListMapKeys) {
		add("list map keys %s would become %s", strings.Join(old.XListMapKeys, ","), strings.Join(next.XListMapKeys, ","))
	}
	lower := func(name string, o, n *float64) {
		switch {
		case n == nil:
		case o == nil:
			add("%s %g would be added", name, *n)
		case *n > *o:
			add("%s %g would become %g", name, *o, *n)
		}
	}
	upper := func(name string, o, n *float64) {
		switch {
		case n == nil:
		case o == nil:
			add("%s %g would be added", name, *n)
		case *n < *o:
			add("%s %g would become %g", name, *o, *n)
		}
	}
	lower("minimum", old.Minimum, next.Minimum)
	upper("maximum", old.Maximum, next.Maximum)
	lower("minLength", float(old.MinLength), float(next.MinLength))
	upper("maxLength", float(old.MaxLength), float(next.MaxLength))
	lower("minItems", float(old.MinItems), float(next.MinItems))
	upper("maxItems", float(old.MaxItems), float(next.MaxItems))
	lower("minProperties", float(old.MinProperties), float(next.MinProperties))
	upper("maxProperties", float(old.MaxProperties), float(next.MaxProperties))

	for _, name := range sortedKeys(old.Properties) {
		o := old.Properties[name]
		n, ok := next.Properties[name]
		if !ok {
			out = append(out, fmt.Sprintf("%s%s: would be removed", path, name))
			continue
		}
		out = append(out, schemaChanges(path+name+".", &o, &n)...)
	}
	for _, name := range next.Required {
		n := next.Properties[name]
		_, existed := old.Properties[name]
		hasDefault := n.Default != nil && len(n.Default.Raw) > 0
		switch {
		case !slices.Contains(old.Required, name) && (existed || !hasDefault):
			out = append(out, fmt.Sprintf("%s%s: would become required", path, name))
		case slices.Contains(old.Required, name) && !hasDefault:
			if o := old.Properties[name]; o.Default != nil && len(o.Default.Raw) > 0 {
				out = append(out, fmt.Sprintf("%s%s: is required, and its default would be removed", path, name))
			}
		}
	}
	if old.Items != nil && old.Items.Schema != nil {
		var n *extv1.JSONSchemaProps
		if next.Items != nil {
			n = next.Items.Schema
		}
		out = append(out, schemaChanges(strings.TrimSuffix(path, ".")+"[*].", old.Items.Schema, n)...)
	}
	if old.AdditionalProperties != nil && old.AdditionalProperties.Schema != nil {
		var n *extv1.JSONSchemaProps
		if next.AdditionalProperties != nil {
			n = next.AdditionalProperties.Schema
		}
		out = append(out, schemaChanges(strings.TrimSuffix(path, ".")+"[*].", old.AdditionalProperties.Schema, n)...)
	}
	return out
}

// listType is s's x-kubernetes-list-type, atomic when a list sets none.
func listType(s *extv1.JSONSchemaProps) string {
	switch {
	case s.XListType != nil:
		return *s.XListType
	case s.Type == "array":
		return "atomic"
	}
	return ""
}

// enumChanges reports enum values next refuses that old accepted.
func enumChanges(old, next *extv1.JSONSchemaProps, add func(string, ...any)) {
	if len(next.Enum) == 0 {
		return
	}
	if len(old.Enum) == 0 {
		add("an enum would be added")
		return
	}
	for _, o := range old.Enum {
		if !slices.ContainsFunc(next.Enum, func(n extv1.JSON) bool { return bytes.Equal(n.Raw, o.Raw) }) {
			add("enum value %s would be removed", o.Raw)
		}
	}
}

func preserves(s *extv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

func anyType(t string) string {
	if t == "" {
		return "any"
	}
	return t
}

func float(i *int64) *float64 {
	if i == nil {
		return nil
	}
	f := float64(*i)
	return &f
}
