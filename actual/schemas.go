package actual

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Schemas reads the OpenAPI v3 schemas the API server publishes, a kind at
// a time: each group-version document is fetched once, and of it only the
// definitions the kind reaches are decoded — the core group's document is
// megabytes, and a Deployment needs a small part of it.
type Schemas struct {
	disc discovery.DiscoveryInterface
	mu   sync.Mutex
	docs map[schema.GroupVersion]*schemaDoc
}

// NewSchemas returns Schemas that ask disc.
func NewSchemas(disc discovery.DiscoveryInterface) *Schemas {
	return &Schemas{disc: disc, docs: map[schema.GroupVersion]*schemaDoc{}}
}

// schemaDoc is one group-version document: its definitions undecoded,
// and those decoded so far.
type schemaDoc struct {
	raw     map[string]json.RawMessage
	decoded map[string]*spec.Schema
}

const refPrefix = "#/components/schemas/"

// ResolveSchema returns the schema of gvk with every reference resolved,
// as k8s.io/apiserver's resolver.ClientDiscoveryResolver does.
func (s *Schemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, err := s.doc(gvk.GroupVersion())
	if err != nil {
		return nil, err
	}
	root, err := doc.find(gvk)
	if err != nil {
		return nil, err
	}
	var decodeErr error
	out, err := resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		sc, err := doc.decode(strings.TrimPrefix(ref, refPrefix))
		if err != nil {
			decodeErr = err
		}
		return sc, sc != nil
	}, refPrefix+root)
	if decodeErr != nil {
		return nil, decodeErr
	}
	return out, err
}

func (s *Schemas) doc(gv schema.GroupVersion) (*schemaDoc, error) {
	if d, ok := s.docs[gv]; ok {
		return d, nil
	}
	paths, err := s.disc.OpenAPIV3().Paths()
	if err != nil {
		return nil, err
	}
	path := "apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "api/" + gv.Version
	}
	gvPath, ok := paths[path]
	if !ok {
		return nil, fmt.Errorf("the API server publishes no OpenAPI schema of %s (yet: a CustomResourceDefinition's appears a moment after it is installed): %w", gv, resolver.ErrSchemaNotFound)
	}
	data, err := gvPath.Schema(runtime.ContentTypeJSON)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("the OpenAPI schema of %s: %w", gv, err)
	}
	d := &schemaDoc{raw: resp.Components.Schemas, decoded: map[string]*spec.Schema{}}
	s.docs[gv] = d
	return d, nil
}

// find returns the name of the definition of gvk.
func (d *schemaDoc) find(gvk schema.GroupVersionKind) (string, error) {
	for name, raw := range d.raw {
		var ext struct {
			GVKs []schema.GroupVersionKind `json:"x-kubernetes-group-version-kind"`
		}
		if !bytes.Contains(raw, []byte(gvk.Kind)) {
			continue
		}
		if err := json.Unmarshal(raw, &ext); err != nil {
			return "", err
		}
		for _, g := range ext.GVKs {
			if g == gvk {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("no OpenAPI schema of kind %s: %w", gvk, resolver.ErrSchemaNotFound)
}

func (d *schemaDoc) decode(name string) (*spec.Schema, error) {
	if sc, ok := d.decoded[name]; ok {
		return sc, nil
	}
	raw, ok := d.raw[name]
	if !ok {
		return nil, nil
	}
	sc := &spec.Schema{}
	if err := json.Unmarshal(raw, sc); err != nil {
		return nil, fmt.Errorf("the OpenAPI schema %s: %w", name, err)
	}
	d.decoded[name] = sc
	return sc, nil
}
