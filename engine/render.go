package engine

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/resyncd/resyncd/desired"
)

// render renders p's children with rs's renderer and stamps each with its
// identity (desired.Stamp): renderers give content only, so none can get
// the identity wrong, and the selector that LISTs the children is built in
// one place, desired.ChildSelector.
func (e *Engine) render(rs *resourceState, p *unstructured.Unstructured, live []desired.Child, external []desired.External) (desired.Graph, error) {
	var g desired.Graph
	var err error
	if rs.externals != nil {
		g, err = rs.externals.renderer.RenderWith(p, live, external)
	} else {
		g, err = rs.renderer.Render(p, live)
	}
	if err != nil {
		return g, err
	}
	if err := validIdentity(p, g); err != nil {
		return desired.Graph{}, err
	}
	desired.Stamp(g, p)
	return g, nil
}

// validIdentity checks, before anything is sent, what the API server would
// refuse of every child of p: its name, for its kind, and p's name as the
// value of the resyncd.io/parent label. client-go refuses some names
// before any request (".." or one with "/"), and the server others; either
// way no retry can help, so the parent is Stalled with the reason instead.
func validIdentity(p *unstructured.Unstructured, g desired.Graph) error {
	if errs := validation.IsValidLabelValue(p.GetName()); len(errs) > 0 {
		return &desired.InvalidError{Field: "metadata.name", Message: fmt.Sprintf(
			"%q cannot be the value of the %s label every child carries: %s; rename the parent", p.GetName(), desired.LabelParent, strings.Join(errs, "; "))}
	}
	for i, c := range g.Children {
		if errs := validName(c.GroupVersionKind().GroupKind(), c.GetName()); len(errs) > 0 {
			return &desired.InvalidError{Field: fmt.Sprintf("children[%d] (%s)", i, c.GetKind()), Message: fmt.Sprintf(
				"%q is not a valid name for a %s: %s", c.GetName(), c.GetKind(), strings.Join(errs, "; "))}
		}
		if ns := c.GetNamespace(); ns != p.GetNamespace() && ns != "" {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return &desired.InvalidError{Field: fmt.Sprintf("children[%d] (%s %s)", i, c.GetKind(), c.GetName()), Message: fmt.Sprintf(
					"%q is not a namespace name: %s", ns, strings.Join(errs, "; "))}
			}
		}
	}
	return nil
}

// validName lists what is wrong with name as the name of an object of kind
// gk, by the rules the API server applies: a DNS-1035 label for a Service,
// a DNS-1123 label for a Namespace, only a path segment for RBAC's kinds
// (system:controller:x is a ClusterRole's name), a DNS-1123 subdomain for
// the others and for custom resources.
func validName(gk schema.GroupKind, name string) []string {
	if name == "" {
		return []string{"must not be empty"}
	}
	if errs := content.IsPathSegmentName(name); len(errs) > 0 {
		return errs
	}
	switch {
	case gk.Group == "" && gk.Kind == "Service":
		return validation.IsDNS1035Label(name)
	case gk.Group == "" && gk.Kind == "Namespace":
		return validation.IsDNS1123Label(name)
	case gk.Group == "rbac.authorization.k8s.io":
		return nil
	default:
		return validation.IsDNS1123Subdomain(name)
	}
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

// materialize gives every op and check of j that lacks it its desired
// object, rendering the parent again: rendering depends on the parent
// alone, so it gives what the plan compared.
func (e *Engine) materialize(rs *resourceState, j *job) error {
	var missing []*op
	for _, o := range slices.Concat(j.ops, j.rare().checks) {
		if o.kind != OpDelete && o.desired == nil {
			missing = append(missing, o)
		}
	}
	if len(missing) == 0 || j.parent == nil {
		return nil
	}
	g, err := e.render(rs, j.parent, j.inputs, j.rare().external)
	if err != nil {
		return err
	}
	byKey := map[childKey]*unstructured.Unstructured{}
	for _, d := range g.Children {
		byKey[keyOf(d)] = d
	}
	for _, o := range missing {
		if o.desired = byKey[o.key]; o.desired == nil {
			return fmt.Errorf("%s is no longer rendered", o.key)
		}
		if o.unowned {
			withoutOwnerReference(o.desired, j.parent)
		}
		if o.created {
			markCreated(o.desired, true)
		}
	}
	return nil
}
