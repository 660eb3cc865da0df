package graph

import (
	"encoding/json"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
	sigsyaml "sigs.k8s.io/yaml"
)

// ParentCRD is the CustomResourceDefinition of a graph's parent kind, as
// far as it is known without a cluster.
type ParentCRD struct {
	// CRD is made from the graph's spec.schema, or read from the team's
	// own file.
	CRD *extv1.CustomResourceDefinition
	// FromSchema: made from spec.schema (else read from a file).
	FromSchema bool
	// Where names its source in messages: the graph file and the line of
	// spec.schema, or the CRD file.
	Where string
}

// ReadParentCRD is the parent kind's CRD of the graph file at graphPath:
// made from its spec.schema when it has one (as `resyncd crd` prints it),
// else read from crdPath when that is set; nil with neither. A problem of
// either file names it (and the line, in the graph).
func ReadParentCRD(graphPath, crdPath string) (*ParentCRD, error) {
	data, err := os.ReadFile(graphPath)
	if err != nil {
		return nil, fmt.Errorf("read graph: %w", err)
	}
	if p, err := SchemaCRD(graphPath, data); p != nil || err != nil {
		return p, err
	}
	if crdPath == "" {
		return nil, nil
	}
	crd, err := ReadCRD(crdPath)
	if err != nil {
		return nil, err
	}
	return &ParentCRD{CRD: crd, Where: crdPath}, nil
}

// SchemaCRD is the parent kind's CRD that the graph file's content data
// declares in its spec.schema; nil when it declares none. path names the
// graph in messages.
func SchemaCRD(path string, data []byte) (*ParentCRD, error) {
	line := schemaLine(data)
	if line == 0 {
		return nil, nil
	}
	s, err := ParseSchema(path, data)
	if err != nil {
		return nil, err
	}
	crd, err := CRD(s, InferStatusTypes(s))
	if err != nil {
		return nil, fmt.Errorf("%s:%d: spec.schema: %w", path, line, err)
	}
	return &ParentCRD{CRD: crd, FromSchema: true, Where: fmt.Sprintf("%s:%d", path, line)}, nil
}

// schemaLine is the line of a graph file's spec.schema when it declares
// the parent kind there; 0 when it does not, or the file is not YAML
// (which loading the graph reports).
func schemaLine(data []byte) int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	spec := fields(doc.Content[0], nil, "")["spec"]
	for i := 0; spec != nil && spec.Kind == yaml.MappingNode && i+1 < len(spec.Content); i += 2 {
		if k, v := spec.Content[i], spec.Content[i+1]; k.Value == "schema" {
			sc := fields(v, nil, "")
			if sc["apiVersion"] == nil && sc["kind"] == nil && sc["spec"] == nil {
				return 0 // a status only, as kro keeps it
			}
			return k.Line
		}
	}
	return 0
}

// ReadCRD reads the CustomResourceDefinition file at path and checks that
// it can type a parent kind: one document, a CRD of apiextensions.k8s.io/v1
// with a group, names and versions that each have a schema.
func ReadCRD(path string) (*extv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the CRD file: %w", err)
	}
	var crd extv1.CustomResourceDefinition
	if err := sigsyaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, fmt.Errorf("%s: not a CustomResourceDefinition: %w", path, err)
	}
	var problems []string
	if crd.APIVersion != extv1.SchemeGroupVersion.String() || crd.Kind != "CustomResourceDefinition" {
		problems = append(problems, fmt.Sprintf("apiVersion, kind: are %q, %q, want %s CustomResourceDefinition", crd.APIVersion, crd.Kind, extv1.SchemeGroupVersion))
	}
	if crd.Spec.Group == "" || crd.Spec.Names.Kind == "" || crd.Spec.Names.Plural == "" {
		problems = append(problems, "spec.group, spec.names.kind, spec.names.plural: must all be set")
	}
	if len(crd.Spec.Versions) == 0 {
		problems = append(problems, "spec.versions: lists no version")
	}
	for i, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			problems = append(problems, fmt.Sprintf("spec.versions[%d].schema.openAPIV3Schema: is missing: the parent's fields are typed by it", i))
		}
	}
	if len(problems) > 0 {
		for i, p := range problems {
			problems[i] = path + ": " + p
		}
		return nil, &Error{Problems: problems}
	}
	return &crd, nil
}

// GroupVersionResource is the parent kind's resource in version (empty:
// the storage version); false when the CRD does not serve that version.
func (p *ParentCRD) GroupVersionResource(version string) (schema.GroupVersionResource, bool) {
	v := p.version(version)
	if v == nil {
		return schema.GroupVersionResource{}, false
	}
	return schema.GroupVersionResource{Group: p.CRD.Spec.Group, Version: v.Name, Resource: p.CRD.Spec.Names.Plural}, true
}

// Versions are the versions the CRD serves.
func (p *ParentCRD) Versions() []string {
	var out []string
	for _, v := range p.CRD.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// version is the served version named, or the storage version (the only
// one of a CRD made from spec.schema).
func (p *ParentCRD) version(name string) *extv1.CustomResourceDefinitionVersion {
	for i, v := range p.CRD.Spec.Versions {
		if v.Served && (v.Name == name || name == "" && v.Storage) {
			return &p.CRD.Spec.Versions[i]
		}
	}
	return nil
}

// Options returns opts with what the CRD decides, for version (empty: the
// storage version): the parent typed by the CRD's schema as the API server
// would publish it, each child kind left dynamic (only a cluster knows
// their schemas), and the defaults Renderer.Default applies. Unless opts
// already has Schemas: an API server's answer wins.
func (p *ParentCRD) Options(version string, opts Options) (Options, error) {
	v := p.version(version)
	if v == nil {
		return opts, fmt.Errorf("%s: serves no version %s (it serves %v)", p.Where, version, p.Versions())
	}
	if opts.Schemas == nil {
		s, err := publishedSchema(v.Schema.OpenAPIV3Schema)
		if err != nil {
			return opts, fmt.Errorf("%s: %w", p.Where, err)
		}
		opts.Parent = schema.GroupVersionKind{Group: p.CRD.Spec.Group, Version: v.Name, Kind: p.CRD.Spec.Names.Kind}
		opts.Schemas = &parentOnly{gvk: opts.Parent, schema: s}
	}
	opts.ParentSchema = v.Schema.OpenAPIV3Schema
	return opts, nil
}

// OptionsBeside is Options typing every kind but the parent by others
// (the schemas a cluster publishes): a graph checked against the
// children's schemas before its parent's CRD exists.
func (p *ParentCRD) OptionsBeside(version string, opts Options, others SchemaResolver) (Options, error) {
	opts.Schemas = nil
	out, err := p.Options(version, opts)
	if err != nil {
		return out, err
	}
	out.Schemas.(*parentOnly).others = others
	return out, nil
}

// parentOnly resolves the schema of the parent kind; every other kind
// by others if set, else untyped (a nil schema, no error).
type parentOnly struct {
	gvk    schema.GroupVersionKind
	schema *spec.Schema
	others SchemaResolver
}

// ResolveSchema implements SchemaResolver.
func (p *parentOnly) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if gvk == p.gvk {
		return p.schema, nil
	}
	if p.others != nil {
		return p.others.ResolveSchema(gvk)
	}
	return nil, nil
}

// publishedSchema is a CRD version's schema as the API server publishes
// it in its OpenAPI v3 documents: apiVersion and kind strings, and
// metadata the full ObjectMeta rather than the CRD's bare object.
func publishedSchema(s *extv1.JSONSchemaProps) (*spec.Schema, error) {
	root := s.DeepCopy()
	if root.Properties == nil {
		root.Properties = map[string]extv1.JSONSchemaProps{}
	}
	str := extv1.JSONSchemaProps{Type: "string"}
	root.Properties["apiVersion"], root.Properties["kind"] = str, str
	root.Properties["metadata"] = objectMetaSchema()
	b, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	var out spec.Schema
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("the schema as OpenAPI: %w", err)
	}
	return &out, nil
}

// objectMetaSchema is ObjectMeta's schema, as the API server publishes
// it for every kind.
func objectMetaSchema() extv1.JSONSchemaProps {
	str := extv1.JSONSchemaProps{Type: "string"}
	i64 := extv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	date := extv1.JSONSchemaProps{Type: "string", Format: "date-time"}
	strMap := extv1.JSONSchemaProps{Type: "object", AdditionalProperties: &extv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}}
	boolean := extv1.JSONSchemaProps{Type: "boolean"}
	set := "set"
	owner := extv1.JSONSchemaProps{Type: "object", Required: []string{"apiVersion", "kind", "name", "uid"},
		Properties: map[string]extv1.JSONSchemaProps{"apiVersion": str, "kind": str, "name": str, "uid": str,
			"controller": boolean, "blockOwnerDeletion": boolean}}
	yes := true
	managed := extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{
		"apiVersion": str, "fieldsType": str, "manager": str, "operation": str, "subresource": str, "time": date,
		"fieldsV1": {Type: "object", XPreserveUnknownFields: &yes}}}
	m := extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{
		"name": str, "generateName": str, "namespace": str, "selfLink": str, "uid": str, "resourceVersion": str,
		"generation": i64, "deletionGracePeriodSeconds": i64,
		"creationTimestamp": date, "deletionTimestamp": date,
		"labels": strMap, "annotations": strMap,
		"finalizers":      {Type: "array", XListType: &set, Items: &extv1.JSONSchemaPropsOrArray{Schema: &str}},
		"ownerReferences": {Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: &owner}},
		"managedFields":   {Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: &managed}},
	}}
	return m
}
