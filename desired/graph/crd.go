package graph

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
)

// StatusTypes are the OpenAPI schemas of a parent's status fields, by the
// path of the field in spec.schema.status as messages spell it:
// "endpoint", "ports[0].name". SchemaOfCELType makes one of the type
// the CEL checker gives an expression.
type StatusTypes map[string]*extv1.JSONSchemaProps

// The status fields resyncd writes on every parent, whatever the graph's
// status says.
const (
	statusObservedGeneration = "observedGeneration"
	statusConditions         = "conditions"
)

// CRD makes the CustomResourceDefinition of the parent kind s declares,
// as kro would generate it: named after kro's plural, one version served
// and stored, the spec's schema from the SimpleSchema, the status
// subresource and a status schema with a field for each of s.Status.
// A status field has the schema status gives its path; without one, a
// literal has its value's type, text with expressions in it is a string,
// and a lone expression keeps any value
// (x-kubernetes-preserve-unknown-fields). Beside them are the fields
// resyncd writes: observedGeneration and its conditions.
func CRD(s *Schema, status StatusTypes) (*extv1.CustomResourceDefinition, error) {
	specSchema, err := ParseSimpleSchema(s.Spec, s.Types)
	if err != nil {
		return nil, err
	}
	gvr := s.GroupVersionResource()
	scope := s.Scope
	if scope == "" {
		scope = extv1.NamespaceScoped
	}
	columns := s.AdditionalPrinterColumns
	if len(columns) == 0 {
		columns = defaultColumns
	}
	crd := &extv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: extv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        gvr.Resource + "." + gvr.Group,
			Labels:      s.Labels,
			Annotations: s.Annotations,
		},
		Spec: extv1.CustomResourceDefinitionSpec{
			Group: gvr.Group,
			Names: extv1.CustomResourceDefinitionNames{
				Kind:       s.Kind,
				ListKind:   s.Kind + "List",
				Plural:     gvr.Resource,
				Singular:   strings.ToLower(s.Kind),
				ShortNames: s.ShortNames,
				Categories: s.Categories,
			},
			Scope: scope,
			Versions: []extv1.CustomResourceDefinitionVersion{{
				Name:    s.APIVersion,
				Served:  true,
				Storage: true,
				Schema: &extv1.CustomResourceValidation{OpenAPIV3Schema: &extv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]extv1.JSONSchemaProps{
						"apiVersion": {Type: "string"},
						"kind":       {Type: "string"},
						"metadata":   {Type: "object"},
						"spec":       *specSchema,
						"status":     statusSchema(s.Status, status),
					},
				}},
				Subresources:             &extv1.CustomResourceSubresources{Status: &extv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: columns,
			}},
		},
	}
	return crd, nil
}

// defaultColumns are a parent's columns when the schema names none, as
// kro's: the state, the Ready condition, the age.
var defaultColumns = []extv1.CustomResourceColumnDefinition{
	{Name: "State", Type: "string", Description: "The state of a ResourceGraphDefinition instance", JSONPath: ".status.state"},
	{Name: "Ready", Type: "string", Description: "Whether a ResourceGraphDefinition instance is ready", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
	{Name: "Age", Type: "date", Description: "Age of the resource", JSONPath: ".metadata.creationTimestamp"},
}

// statusSchema is the schema of the parent's status: the template's fields
// and resyncd's own.
func statusSchema(template map[string]any, known StatusTypes) extv1.JSONSchemaProps {
	s := extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{}}
	for k, v := range template {
		s.Properties[k] = *valueSchema(v, []any{k}, known)
	}
	s.Properties[statusObservedGeneration] = extv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	s.Properties[statusConditions] = conditionsSchema()
	if _, set := s.Properties[stateField]; !set {
		s.Properties[stateField] = extv1.JSONSchemaProps{Type: "string"}
	}
	return s
}

// conditionsSchema declares a list of metav1.Condition, merged by type.
func conditionsSchema() extv1.JSONSchemaProps {
	mapList := "map"
	str := extv1.JSONSchemaProps{Type: "string"}
	return extv1.JSONSchemaProps{
		Type:         "array",
		XListType:    &mapList,
		XListMapKeys: []string{"type"},
		Items: &extv1.JSONSchemaPropsOrArray{Schema: &extv1.JSONSchemaProps{
			Type:     "object",
			Required: []string{"type", "status"},
			Properties: map[string]extv1.JSONSchemaProps{
				"type": str, "status": str, "reason": str, "message": str,
				"observedGeneration": {Type: "integer", Format: "int64"},
				"lastTransitionTime": {Type: "string", Format: "date-time"},
			},
		}},
	}
}

// valueSchema is the schema of one value of the status template at path.
func valueSchema(v any, path []any, known StatusTypes) *extv1.JSONSchemaProps {
	if s := known[pathString(path)]; s != nil {
		return s.DeepCopy()
	}
	switch x := v.(type) {
	case map[string]any:
		s := &extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{}}
		for k, e := range x {
			s.Properties[k] = *valueSchema(e, append(path[:len(path):len(path)], k), known)
		}
		return s
	case []any:
		var items *extv1.JSONSchemaProps
		for i, e := range x {
			es := valueSchema(e, append(path[:len(path):len(path)], i), known)
			if i > 0 && !reflect.DeepEqual(items, es) {
				items = anyValue()
				break
			}
			items = es
		}
		if items == nil {
			items = anyValue()
		}
		return &extv1.JSONSchemaProps{Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: items}}
	case string:
		parts, err := split(x)
		if err == nil && len(parts) == 1 && parts[0].expr != nil {
			return anyValue()
		}
		return &extv1.JSONSchemaProps{Type: "string"}
	case bool:
		return &extv1.JSONSchemaProps{Type: "boolean"}
	case int, int64:
		return &extv1.JSONSchemaProps{Type: "integer"}
	case float64:
		return &extv1.JSONSchemaProps{Type: "number"}
	}
	return anyValue()
}

// anyValue is the schema of a value whose type is not known.
func anyValue() *extv1.JSONSchemaProps {
	yes := true
	return &extv1.JSONSchemaProps{XPreserveUnknownFields: &yes}
}

// SchemaOfCELType is the OpenAPI schema of values of CEL type t, as kro
// declares a status field of an expression of that type; find looks up
// the object types t may name (a DeclTypeProvider's FindDeclType), nil:
// none is known. What has no fixed type keeps any value.
func SchemaOfCELType(t *cel.Type, find func(string) (*apiservercel.DeclType, bool)) *extv1.JSONSchemaProps {
	return schemaOfCEL(t, find, 0)
}

// maxSchemaDepth bounds how deep a status field's schema is spelled out;
// below, any value goes.
const maxSchemaDepth = 32

func schemaOfCEL(t *cel.Type, find func(string) (*apiservercel.DeclType, bool), depth int) *extv1.JSONSchemaProps {
	if t == nil || depth > maxSchemaDepth {
		return anyValue()
	}
	if t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type" && len(t.Parameters()) == 1 {
		return schemaOfCEL(t.Parameters()[0], find, depth)
	}
	if s := scalarSchema(t); s != nil {
		return s
	}
	switch t.Kind() {
	case types.ListKind, types.MapKind, types.StructKind:
		if find != nil {
			if d, ok := find(t.String()); ok {
				return schemaOfDecl(d, depth)
			}
		}
	}
	switch t.Kind() {
	case types.ListKind:
		items := anyValue()
		if ps := t.Parameters(); len(ps) == 1 {
			items = schemaOfCEL(ps[0], find, depth+1)
		}
		return &extv1.JSONSchemaProps{Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: items}}
	case types.MapKind:
		if ps := t.Parameters(); len(ps) == 2 && ps[0].Kind() == types.StringKind {
			v := schemaOfCEL(ps[1], find, depth+1)
			return &extv1.JSONSchemaProps{Type: "object", AdditionalProperties: &extv1.JSONSchemaPropsOrBool{Allows: true, Schema: v}}
		}
	}
	if t.Kind() == types.MapKind || t.Kind() == types.StructKind {
		yes := true
		return &extv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}
	}
	return anyValue()
}

// scalarSchema is the schema of a scalar CEL type; nil for the others.
func scalarSchema(t *cel.Type) *extv1.JSONSchemaProps {
	switch t.Kind() {
	case types.BoolKind:
		return &extv1.JSONSchemaProps{Type: "boolean"}
	case types.IntKind, types.UintKind:
		return &extv1.JSONSchemaProps{Type: "integer"}
	case types.DoubleKind:
		return &extv1.JSONSchemaProps{Type: "number"}
	case types.StringKind:
		return &extv1.JSONSchemaProps{Type: "string"}
	case types.BytesKind:
		return &extv1.JSONSchemaProps{Type: "string", Format: "byte"}
	case types.TimestampKind:
		return &extv1.JSONSchemaProps{Type: "string", Format: "date-time"}
	}
	return nil
}

// schemaOfDecl is the schema of values of an OpenAPI-derived CEL type.
func schemaOfDecl(d *apiservercel.DeclType, depth int) *extv1.JSONSchemaProps {
	if d == nil || depth > maxSchemaDepth {
		return anyValue()
	}
	switch {
	case d.IsObject():
		s := &extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{}}
		for name, f := range d.Fields {
			s.Properties[name] = *schemaOfDecl(f.Type, depth+1)
		}
		return s
	case d.IsList():
		return &extv1.JSONSchemaProps{Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: schemaOfDecl(d.ElemType, depth+1)}}
	case d.IsMap():
		return &extv1.JSONSchemaProps{Type: "object", AdditionalProperties: &extv1.JSONSchemaPropsOrBool{Allows: true, Schema: schemaOfDecl(d.ElemType, depth+1)}}
	}
	if s := scalarSchema(d.CelType()); s != nil {
		return s
	}
	return anyValue()
}

// InferStatusTypes types, without a cluster, each status field of s that
// is one expression: with schema typed by the spec's SimpleSchema and the
// resources untyped, an expression that reads only the parent has its
// type; one that reads a resource, or does not compile, is left out, and
// CRD lets it keep any value. Typing against the resources' schemas is
// the type-checker's, which gives CRD what it found as StatusTypes.
func InferStatusTypes(s *Schema) StatusTypes {
	out := StatusTypes{}
	specSchema, err := ParseSimpleSchema(s.Spec, s.Types)
	if err != nil || len(s.Status) == 0 {
		return out
	}
	parent, err := parentDeclType(specSchema)
	if err != nil {
		return out
	}
	names := append([]string{ParentVar}, s.Resources...)
	e, err := env(names, map[string]*apiservercel.DeclType{ParentVar: parent})
	if err != nil {
		return out
	}
	provider := apiservercel.NewDeclTypeProvider(parent)
	walkStatus(s.Status, nil, func(path []any, text string) {
		parts, err := split(text)
		if err != nil || len(parts) != 1 || parts[0].expr == nil {
			return
		}
		a, iss := e.Compile(parts[0].expr.src)
		if iss.Err() != nil {
			return
		}
		if t := a.OutputType(); t.Kind() != types.DynKind && t.Kind() != types.AnyKind {
			out[pathString(path)] = SchemaOfCELType(t, provider.FindDeclType)
		}
	})
	return out
}

// walkStatus calls f with each string of a status template and its path.
func walkStatus(v any, path []any, f func([]any, string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walkStatus(e, append(path[:len(path):len(path)], k), f)
		}
	case []any:
		for i, e := range x {
			walkStatus(e, append(path[:len(path):len(path)], i), f)
		}
	case string:
		f(path, x)
	}
}

// parentDeclType is the CEL type of the parent as a status expression
// sees it: its spec's schema and the metadata every object has.
func parentDeclType(specSchema *extv1.JSONSchemaProps) (*apiservercel.DeclType, error) {
	str := extv1.JSONSchemaProps{Type: "string"}
	strMap := extv1.JSONSchemaProps{Type: "object", AdditionalProperties: &extv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}}
	root := &extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{
		"apiVersion": str,
		"kind":       str,
		"metadata": {Type: "object", Properties: map[string]extv1.JSONSchemaProps{
			"name": str, "namespace": str, "uid": str, "generateName": str, "resourceVersion": str,
			"generation":        {Type: "integer", Format: "int64"},
			"creationTimestamp": {Type: "string", Format: "date-time"},
			"labels":            strMap, "annotations": strMap,
		}},
		"spec": *specSchema,
	}}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	var s spec.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	d := declTypeOf(&s, "__parent__")
	if d == nil {
		return nil, fmt.Errorf("the parent's schema has no CEL type")
	}
	return d, nil
}

// CRDOfFile makes the CRD of the graph file at path, typing its status
// fields as InferStatusTypes does.
func CRDOfFile(path string) (*extv1.CustomResourceDefinition, error) {
	s, err := ReadSchema(path)
	if err != nil {
		return nil, err
	}
	crd, err := CRD(s, InferStatusTypes(s))
	if err != nil {
		return nil, fmt.Errorf("%s: spec.schema: %w", path, err)
	}
	return crd, nil
}

// CRDManifest is crd as YAML to apply: without the status and the empty
// creationTimestamp the API server fills in.
func CRDManifest(crd *extv1.CustomResourceDefinition) ([]byte, error) {
	b, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return yaml.Marshal(m)
}
