package graph

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
)

// Defaulter fills in the defaults of a CRD's schema, as the API server
// does when an object of the kind is written, so that a parent read from
// a file renders as it would once stored.
type Defaulter struct {
	s *structuralschema.Structural
}

// NewDefaulter makes the Defaulter of the openAPIV3Schema of a CRD's
// version; the schema must be structural, as the API server requires.
func NewDefaulter(s *extv1.JSONSchemaProps) (*Defaulter, error) {
	var internal apiextensions.JSONSchemaProps
	if err := extv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, &internal, nil); err != nil {
		return nil, fmt.Errorf("defaults: %w", err)
	}
	st, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, fmt.Errorf("defaults: the schema is not structural: %w", err)
	}
	if errs := structuralschema.ValidateStructural(nil, st); len(errs) > 0 {
		return nil, fmt.Errorf("defaults: the schema is not structural: %w", errs.ToAggregate())
	}
	return &Defaulter{s: st}, nil
}

// Default fills in obj, an object as unstructured decodes it, every field
// the schema defaults that obj leaves out, at any depth.
func (d *Defaulter) Default(obj map[string]any) {
	structuraldefaulting.Default(obj, d.s)
}
