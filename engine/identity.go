package engine

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/desired"
)

// render renders p's children with rs's renderer and stamps each with its
// identity (desired.Stamp): renderers give content only, so none can get
// the identity wrong, and the selector that LISTs the children is built in
// one place, desired.ChildSelector.
func (e *Engine) render(rs *resourceState, p *unstructured.Unstructured, live []desired.Child) (desired.Graph, error) {
	g, err := rs.renderer.Render(p, live)
	if err != nil {
		return g, err
	}
	desired.Stamp(g, p)
	return g, nil
}

// learnParentKind asks the API server, once, the kind of rs's parents:
// the children's selector names it, and the children are read before the
// parents.
func (e *Engine) learnParentKind(rs *resourceState) error {
	if rs.parentGVK.Kind != "" {
		return nil
	}
	kind, err := e.reader.Kind(rs.gvr)
	if err != nil {
		return fmt.Errorf("%s is not served by the API server (its CustomResourceDefinition removed?): %w", rs.name, err)
	}
	rs.parentGVK = rs.gvr.GroupVersion().WithKind(kind)
	return nil
}
