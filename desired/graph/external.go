package graph

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/resyncd/resyncd/desired"
)

var _ desired.ExternalRenderer = (*Renderer)(nil)

// MaxExternalObjects is the most objects an external reference's selector
// may select, as kro bounds a collection: the cost of what iterates over
// them is estimated with it, and a parent whose selector selects more is
// Stalled (ReasonTooManyExternal) rather than evaluated without a bound.
const MaxExternalObjects = 1000

// ReasonTooManyExternal is the Stalled reason of a parent whose external
// reference selects more than MaxExternalObjects objects.
const ReasonTooManyExternal = "TooManyExternalObjects"

// ExternalTypes implements desired.ExternalRenderer: the kinds of the
// graph's external references, with the fields expressions read.
func (r *Renderer) ExternalTypes() []desired.ExternalType { return r.externalTypes }

// ExternalRefs implements desired.ExternalRenderer: the external
// references parent reads, those its includeWhen leaves out left out,
// with their names, namespaces and selectors evaluated.
func (r *Renderer) ExternalRefs(parent *unstructured.Unstructured) ([]desired.ExternalRef, error) {
	if len(r.externalTypes) == 0 {
		return nil, nil
	}
	ev := r.evaluation(parent, nil, nil)
	var out []desired.ExternalRef
	for _, res := range r.resources {
		if res.external == nil {
			continue
		}
		if in, err := ev.included(res); err != nil || !in {
			if err != nil {
				return nil, err
			}
			continue
		}
		ref, err := ev.ref(res)
		if err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return out, nil
}

// ref evaluates what the external reference res names for this parent. A
// name's namespace is the parent's unless it sets one; a selector's, all
// namespaces, as kro has it; a cluster-scoped kind's, none.
func (ev *evaluation) ref(res *resource) (desired.ExternalRef, error) {
	t := ev.r.externalTypes[ev.r.externalType[res.id]]
	ref := desired.ExternalRef{ID: res.id, Type: ev.r.externalType[res.id]}
	where := res.where() + ".externalRef.metadata"
	value := runtime.DeepCopyJSONValue(res.external.metadata.value).(map[string]any)
	for _, s := range res.external.metadata.slots {
		v, _, err := ev.fill(s)
		if err != nil {
			return ref, err
		}
		set(value, s.path, v)
	}
	value = dropOmitted(value).(map[string]any)
	ns, ok := value["namespace"].(string)
	if _, set := value["namespace"]; set && !ok {
		return ref, &desired.InvalidError{Field: where + ".namespace", Message: fmt.Sprintf("is %v, not a string", value["namespace"])}
	}
	if !res.external.selector {
		name, _ := value["name"].(string)
		if name == "" {
			return ref, &desired.InvalidError{Field: where + ".name", Message: fmt.Sprintf("evaluates to %v; an external reference needs a name", value["name"])}
		}
		ref.Name = name
		if ns == "" {
			ns = ev.parent.GetNamespace()
		}
	} else {
		sel, err := labelSelector(value["selector"])
		if err != nil {
			return ref, &desired.InvalidError{Field: where + ".selector", Message: err.Error()}
		}
		ref.Selector = sel
	}
	if t.Namespaced {
		ref.Namespace = ns
		ref.Chosen = res.external.nsExpr
	}
	return ref, nil
}

// labelSelector converts a selector as the file spells it.
func labelSelector(v any) (labels.Selector, error) {
	m, _ := v.(map[string]any)
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, ls); err != nil {
		return nil, fmt.Errorf("not a label selector: %w", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("not a label selector: %w", err)
	}
	return sel, nil
}

// observe binds what the engine found for the external reference res, or
// notes why it has nothing: the resources that read it wait.
func (ev *evaluation) observe(res *resource) error {
	if in, err := ev.included(res); err != nil || !in {
		return err
	}
	ref, err := ev.ref(res)
	if err != nil {
		return err
	}
	what := desired.WhereRef(ev.r.externalTypes[ref.Type], ref)
	x, read := ev.external[res.id]
	switch {
	case !read:
		ev.missing[res.id] = what + " was not read"
	case ref.Name != "" && len(x.Objects) == 0:
		ev.missing[res.id] = what + " does not exist"
	case ref.Name != "":
		ev.vars[res.id] = x.Objects[0]
	case len(x.Objects) > MaxExternalObjects:
		return &desired.InvalidError{Reason: ReasonTooManyExternal, Field: res.where() + ".externalRef.metadata.selector",
			Message: fmt.Sprintf("%s: %d objects, more than the %d an external reference may select; select fewer", what, len(x.Objects), MaxExternalObjects)}
	default:
		list := make([]any, len(x.Objects))
		for i, o := range x.Objects {
			list[i] = o
		}
		ev.vars[res.id] = list
	}
	ev.names[res.id] = placed{name: what} // as messages name it
	return nil
}

// externalReadiness judges an external reference: it must exist, and
// hold its readyWhen.
func (ev *evaluation) externalReadiness(res *resource) (desired.Readiness, bool) {
	if why, ok := ev.missing[res.id]; ok {
		return desired.Readiness{Reason: "WaitingFor" + upper(res.id), Message: why}, false
	}
	if ok, why := ev.readyWhen(res); !ok {
		return desired.Readiness{Reason: upper(res.id) + "NotReady", Message: ev.names[res.id].String() + ": " + why}, false
	}
	return desired.Readiness{}, true
}

// ChosenReads lists, in the file's order, the external references whose
// namespace an expression gives, as Placements (Expression set): the
// parent's spec may choose where they read, which the configuration
// allows only in the parent's own namespace and externalNamespaces. A
// namespace written out, or a selector with none, is the graph's choice
// and is not listed.
func (r *Renderer) ChosenReads() []Placement {
	var out []Placement
	for _, res := range r.resources {
		if x := res.external; x != nil && x.nsExpr {
			out = append(out, Placement{ID: res.id, Line: res.line, APIVersion: res.apiVersion, Kind: res.kind,
				Namespace: x.nsText, NamespaceLine: x.nsLine, Expression: true})
		}
	}
	return out
}
