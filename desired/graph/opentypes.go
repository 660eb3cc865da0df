package graph

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// openKey marks, in a DeclType's Metadata, an object whose schema keeps
// the fields it does not declare (x-kubernetes-preserve-unknown-fields).
const openKey = "x-kubernetes-preserve-unknown-fields"

// declTypeOf is the CEL type of a resource whose schema is s, named name.
// It is the type CRD validation rules give it, with one difference, kro's:
// a field that an object keeping unknown fields does not declare is read
// as dyn instead of being refused. A SimpleSchema `object` is such an
// object, so ${schema.spec.config.anything} is typed, and fails only at
// evaluation if the instance has no such field. A field declared only as
// "keep unknown fields", with no type (as `resyncd crd` declares a status
// field it cannot type), is dyn too, where the API server hides it.
func declTypeOf(s *spec.Schema, name string) *apiservercel.DeclType {
	if s == nil {
		return nil
	}
	t := openapi.SchemaDeclType(s, true)
	if t == nil {
		return nil
	}
	t = t.MaybeAssignTypeName(name)
	markOpen(t, s)
	return t
}

// markOpen walks t beside the schema s it was made from, marking the
// objects that keep unknown fields and adding their typeless fields as
// dyn. It recurses as SchemaDeclType does, once per level of s.
func markOpen(t *apiservercel.DeclType, s *spec.Schema) {
	if t == nil || s == nil {
		return
	}
	switch {
	case t.IsObject():
		if preservesUnknown(s) {
			if t.Metadata == nil {
				t.Metadata = map[string]string{}
			}
			t.Metadata[openKey] = "true"
		}
		for name, p := range s.Properties {
			escaped, ok := apiservercel.Escape(name)
			if !ok {
				continue
			}
			if f, found := t.Fields[escaped]; found {
				markOpen(f.Type, &p)
			} else if len(p.Type) == 0 && preservesUnknown(&p) {
				t.Fields[escaped] = apiservercel.NewDeclField(escaped, apiservercel.DynType, false, nil, nil)
			}
		}
	case t.IsList():
		if s.Items != nil && s.Items.Schema != nil {
			markOpen(t.ElemType, s.Items.Schema)
		}
	case t.IsMap():
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			markOpen(t.ElemType, s.AdditionalProperties.Schema)
		}
	}
}

// openProvider is the API server's DeclTypeProvider, except that an
// object marked by markOpen has every field it does not declare, as dyn.
type openProvider struct {
	*apiservercel.DeclTypeProvider
}

func (p openProvider) FindStructFieldType(typeName, fieldName string) (*types.FieldType, bool) {
	if ft, ok := p.DeclTypeProvider.FindStructFieldType(typeName, fieldName); ok {
		return ft, true
	}
	if d, ok := p.FindDeclType(typeName); ok && d.Metadata[openKey] == "true" {
		return &types.FieldType{Type: cel.DynType}, true
	}
	return nil, false
}
