package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/resyncd/resyncd/desired"
)

// ReasonCostExceeded is the Stalled reason of a parent whose graph costs
// more to evaluate than the budget.
const ReasonCostExceeded = "CostExceeded"

// ChildTypes implements desired.Renderer: the kinds of the resources, in
// apply order, with the fields expressions and readiness read.
func (r *Renderer) ChildTypes() []desired.ChildType { return r.childTypes }

// Name is the graph's metadata.name.
func (r *Renderer) Name() string { return r.name }

// Policy implements desired.Renderer: spec.priority and spec.paused, when
// the parent kind has them, as for HttpService (desired.SpecPolicy).
func (r *Renderer) Policy(parent *unstructured.Unstructured) desired.Policy {
	return desired.SpecPolicy(parent)
}

// Render implements desired.Renderer: every resource whose includeWhen
// holds, in apply order, with its expressions evaluated against the parent
// and the live children it refers to. A resource that needs a field of a
// child that does not exist yet waits.
func (r *Renderer) Render(parent *unstructured.Unstructured, children []desired.Child) (desired.Graph, error) {
	return r.RenderWith(parent, children, nil)
}

// RenderWith implements desired.ExternalRenderer: Render, with the
// external objects the engine found; a resource that reads one not found
// (or not read, as offline) waits.
func (r *Renderer) RenderWith(parent *unstructured.Unstructured, children []desired.Child, external []desired.External) (desired.Graph, error) {
	ev := r.evaluation(parent, children, external)
	var g desired.Graph
	index := map[string]int{} // of each resource rendered, in g.Children
	for _, res := range r.resources {
		if res.collection() {
			if err := ev.renderItems(res, &g, index); err != nil {
				return desired.Graph{}, err
			}
			continue
		}
		obj, err := ev.resolve(res, true)
		if err != nil {
			return desired.Graph{}, err
		}
		if w := ev.waits[res.id]; w != nil {
			g.Waiting = append(g.Waiting, *w)
		}
		if obj == nil {
			continue
		}
		refs := ev.refs(res, index)
		index[res.id] = len(g.Children)
		g.Children = append(g.Children, obj)
		g.Refs = append(g.Refs, refs)
	}
	if r.kro != nil {
		r.stampKro(ev, g, index)
	}
	return g, nil
}

// evaluation is one parent's evaluation of the graph: its variables, what
// became of each resource, and the budget it spends.
type evaluation struct {
	r        *Renderer
	parent   *unstructured.Unstructured
	parentNS string
	live     map[string]desired.Child // by kind/name
	vars     map[string]any
	meter    meter
	// excluded are the resources an includeWhen left out, or that refer
	// to one that was; waits the resources that wait.
	excluded map[string]bool
	waits    map[string]*desired.Waiting
	// names are the names of the resources resolved so far, and where
	// they are placed.
	names map[string]placed
	// items are the names (and places) of the items of each collection
	// resolved so far, and spans where Render put them in the graph
	// (collection.go).
	items map[string][]placed
	spans map[string]span
	// external is what the engine found for each external reference, by
	// id (nil: none was read); missing says why one has no object.
	external map[string]desired.External
	missing  map[string]string
}

func (r *Renderer) evaluation(parent *unstructured.Unstructured, children []desired.Child, external []desired.External) *evaluation {
	ev := &evaluation{
		r: r, parent: parent, parentNS: parent.GetNamespace(), live: make(map[string]desired.Child, len(children)),
		vars:     map[string]any{ParentVar: parent.Object},
		meter:    meter{budget: r.budget},
		excluded: map[string]bool{}, waits: map[string]*desired.Waiting{}, names: map[string]placed{},
	}
	for _, c := range children {
		ev.live[ev.liveKey(c.Kind, c.Namespace, c.Name)] = c
	}
	if len(r.externalTypes) > 0 {
		ev.missing = map[string]string{}
		ev.external = make(map[string]desired.External, len(external))
		for _, x := range external {
			ev.external[x.ID] = x
		}
	}
	return ev
}

// resolve evaluates res: whether it is included, and its object (only
// its name unless whole), and binds its live object for the resources
// after it. It returns nil when res is left out or waits.
func (ev *evaluation) resolve(res *resource, whole bool) (*unstructured.Unstructured, error) {
	if res.external != nil {
		return nil, ev.observe(res)
	}
	if in, err := ev.included(res); !in || err != nil {
		return nil, err
	}
	obj, err := ev.build(res, whole)
	if obj == nil || err != nil {
		return nil, err
	}
	ev.names[res.id] = placed{namespace: obj.GetNamespace(), name: obj.GetName()}
	if c, ok := ev.live[ev.liveKey(res.kind, obj.GetNamespace(), obj.GetName())]; ok && sameGroup(c, res) && c.Object != nil {
		ev.vars[res.id] = c.Object
	}
	return obj, nil
}

// refs are the indices in the graph, by index of each resource rendered
// so far, of the children res refers to: every item of a collection.
func (ev *evaluation) refs(res *resource, index map[string]int) []int {
	var refs []int
	for _, d := range res.deps {
		if i, ok := index[d]; ok {
			refs = append(refs, i)
		} else if s, ok := ev.spans[d]; ok {
			refs = s.append(refs)
		}
	}
	return refs
}

// included says whether res is to be rendered: every resource it refers
// to is included and live, and its includeWhen holds. When not, res is
// marked left out, or waiting.
func (ev *evaluation) included(res *resource) (bool, error) {
	for _, d := range res.deps {
		if ev.excluded[d] {
			ev.excluded[res.id] = true
			return false, nil
		}
		if _, ok := ev.vars[d]; !ok {
			ev.wait(res, d, ev.absent(d))
			return false, nil
		}
		if ready, why := ev.gateReady(d); !ready {
			ev.wait(res, d, why)
			return false, nil
		}
	}
	for _, e := range res.includeWhen {
		v, err := ev.eval(e)
		if err != nil {
			return false, ev.invalid(e, err)
		}
		b, ok := v.Value().(bool)
		if !ok {
			return false, &desired.InvalidError{Field: e.where, Message: fmt.Sprintf("${%s} is %v, not a bool", e.src, v.Value())}
		}
		if !b {
			ev.excluded[res.id] = true
			return false, nil
		}
	}
	return true, nil
}

// gateReady says whether the resource d, live, is ready for those that
// refer to it, and why not. Served as kro serves an RGD, it is when its
// readyWhen holds (for a collection, on every item, as each; without
// readyWhen, existing is enough), as kro creates a resource only once
// those it reads are ready. Otherwise waiting is for the fields read to
// exist, and readyWhen decides the parent's readiness only.
func (ev *evaluation) gateReady(d string) (bool, string) {
	if ev.r.kro == nil {
		return true, ""
	}
	i := slices.IndexFunc(ev.r.resources, func(res *resource) bool { return res.id == d })
	if i < 0 || len(ev.r.resources[i].readyWhen) == 0 {
		return true, ""
	}
	dep := ev.r.resources[i]
	if !dep.collection() {
		ok, why := ev.readyWhen(dep)
		return ok, "it is not ready: " + why
	}
	defer delete(ev.vars, EachVar)
	for _, n := range ev.items[d] {
		c, _ := ev.liveItem(dep, n)
		ev.vars[EachVar] = c.Object
		if ok, why := ev.readyWhen(dep); !ok {
			return false, fmt.Sprintf("%s %s is not ready: %s", dep.kind, n, why)
		}
	}
	return true, ""
}

// build evaluates the template of res (only its name unless whole) with
// the variables bound now; nil when it waits.
func (ev *evaluation) build(res *resource, whole bool) (*unstructured.Unstructured, error) {
	value := runtime.DeepCopyJSONValue(res.template.value).(map[string]any)
	for _, s := range res.template.slots {
		if !whole && !s.name {
			continue
		}
		v, dep, err := ev.fill(s)
		if err != nil {
			return nil, err
		}
		if dep != "" {
			ev.wait(res, dep, fmt.Sprintf("%s: %s", s.where, v))
			return nil, nil
		}
		set(value, s.path, v)
	}
	obj := &unstructured.Unstructured{Object: dropOmitted(value).(map[string]any)}
	if obj.GetName() == "" {
		return nil, &desired.InvalidError{Field: res.where() + ".template.metadata.name",
			Message: "evaluates to an empty name; every child needs one"}
	}
	if err := ev.place(res, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// place puts obj in its namespace: none for a cluster-scoped kind, the
// one its template gives, or else its parent's. A template whose
// namespace evaluates to null (or omit()) leaves it to the parent's.
func (ev *evaluation) place(res *resource, obj *unstructured.Unstructured) error {
	if res.clusterScoped {
		obj.SetNamespace("")
		return nil
	}
	if res.namespace != "" {
		md, _ := obj.Object["metadata"].(map[string]any)
		if v, ok := md["namespace"]; ok {
			if ns, isString := v.(string); !isString || ns == "" && !strings.Contains(res.namespace, "${") {
				return &desired.InvalidError{Field: res.where() + ".template.metadata.namespace",
					Message: fmt.Sprintf("%s gives %v, not a namespace name", res.namespace, v)}
			}
		}
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(ev.parent.GetNamespace())
	}
	return nil
}

// placed is where a resource's object is: its namespace (none when it is
// cluster-scoped) and name.
type placed struct{ namespace, name string }

// String is namespace/name, or the name alone for a cluster-scoped
// object, as messages name it.
func (p placed) String() string { return objectPath(p.namespace, p.name) }

func objectPath(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// liveKey is how a live child is looked up: by kind and name in the
// parent's namespace, or cluster-scoped (a kind is either, so the two
// never meet), and given without a namespace, which is then the
// parent's; with its namespace too elsewhere.
func (ev *evaluation) liveKey(kind, namespace, name string) string {
	if namespace == "" || namespace == ev.parentNS {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// fill evaluates the expressions of s. When one needs a field of another
// resource that is missing, dep names that resource and the value is the
// message why.
func (ev *evaluation) fill(s *slot) (any, string, error) {
	var b strings.Builder
	for _, p := range s.parts {
		if p.expr == nil {
			b.WriteString(p.text)
			continue
		}
		v, err := ev.eval(p.expr)
		if err != nil {
			if dep := ev.dependency(p.expr); dep != "" && missingData(err) {
				return fmt.Sprintf("${%s}: %v", p.expr.src, err), dep, nil
			}
			return nil, "", ev.invalid(p.expr, err)
		}
		if s.standalone() {
			n, err := native(v)
			if err != nil {
				return nil, "", ev.invalid(p.expr, err)
			}
			return n, "", nil
		}
		t, err := text(v)
		if err != nil {
			return nil, "", ev.invalid(p.expr, err)
		}
		b.WriteString(t)
	}
	return b.String(), "", nil
}

// missingData says whether err is CEL's answer to data that is not there
// (yet): a map key, a field or attribute, a list index. Only those make a
// resource wait for another; any other error (a division by zero, a
// failed conversion) is the graph's or the parent's, and stalls the parent.
func missingData(err error) bool {
	if errors.Is(err, errCostExceeded) {
		return false
	}
	msg := err.Error()
	for _, m := range []string{"no such key", "no such field", "no such attribute", "out of range in list"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// dependency is the first resource e refers to, other than the parent.
func (ev *evaluation) dependency(e *expr) string {
	for _, ref := range e.refs {
		if ref != ParentVar {
			return ref
		}
	}
	return ""
}

func (ev *evaluation) wait(res *resource, dep, why string) {
	gv, _ := schema.ParseGroupVersion(res.apiVersion)
	w := &desired.Waiting{
		ID: res.id, Group: gv.Group, Kind: res.kind,
		Reason:  "WaitingFor" + strings.ToUpper(dep[:1]) + dep[1:],
		Message: fmt.Sprintf("%s waits for %s: %s", res.id, dep, why),
	}
	if !res.collection() {
		// Every item of a waiting collection waits, their names unknown.
		w.Namespace, w.Name = ev.placeOf(res)
	}
	ev.waits[res.id] = w
}

// placeOf is the namespace and name of res, each if it can be known
// without what res waits for; "" otherwise (and the namespace of a
// cluster-scoped kind). The namespace is the template's, or the parent's
// when the template gives none, as place has it.
func (ev *evaluation) placeOf(res *resource) (namespace, name string) {
	md, _ := res.template.value.(map[string]any)["metadata"].(map[string]any)
	name, _ = md["name"].(string)
	namespace, _ = md["namespace"].(string)
	nsKnown := !strings.Contains(namespace, "${")
	for _, s := range res.template.slots {
		if s.field == identityNone {
			continue
		}
		v, dep, err := ev.fill(s)
		got, ok := v.(string)
		ok = ok && dep == "" && err == nil
		switch {
		case s.field == identityName && ok:
			name = got
		case s.field == identityName:
			name = ""
		case ok:
			namespace, nsKnown = got, true
		default:
			// An expression that gives no string (null, omit()) leaves the
			// child in its parent's namespace; one that waits tells nothing.
			_, omitted := v.(omit)
			namespace, nsKnown = "", err == nil && dep == "" && (v == nil || omitted)
		}
	}
	switch {
	case res.clusterScoped || !nsKnown:
		namespace = ""
	case namespace == "":
		namespace = ev.parentNS
	}
	return namespace, name
}

// absent says why resource id has no live object to refer to.
func (ev *evaluation) absent(id string) string {
	if why, ok := ev.missing[id]; ok {
		return why
	}
	if w := ev.waits[id]; w != nil {
		return "it waits too"
	}
	for _, res := range ev.r.resources {
		if res.id == id && res.collection() {
			return ev.itemsAbsent(res)
		}
		if res.id == id {
			return fmt.Sprintf("%s %s does not exist yet", res.kind, ev.names[id])
		}
	}
	return "it does not exist yet"
}

// invalid makes an evaluation error the parent's: it is Stalled with it.
func (ev *evaluation) invalid(e *expr, err error) error {
	if errors.Is(err, errCostExceeded) {
		m := ev.meter
		msg := fmt.Sprintf("evaluating this parent's graph stopped at ${%s}: the budget is %d (cel.costBudget); the expressions before it spent %d",
			e.src, m.budget, m.before)
		if m.limit == 0 {
			msg += fmt.Sprintf(", which leaves too little for it to run (at least %d)", minLimit)
		} else {
			msg += fmt.Sprintf(", and it was stopped after %d more: its cost limits halve from the budget down, and that is the largest within the %d left",
				m.limit, m.budget-m.before)
		}
		return &desired.InvalidError{Reason: ReasonCostExceeded, Field: e.where, Message: msg}
	}
	return &desired.InvalidError{Reason: "EvaluationFailed", Field: e.where, Message: fmt.Sprintf("${%s}: %v", e.src, err)}
}

// eval evaluates e within the parent's budget.
func (ev *evaluation) eval(e *expr) (ref.Val, error) {
	return ev.meter.eval(e, ev.vars)
}

// meter spends one evaluation's cost budget. Each expression runs under
// the largest of its cost limits that fits in what is left, so that the
// evaluation as a whole never costs more than the budget.
type meter struct {
	budget, spent uint64
	// before and limit describe the expression that exceeded the budget:
	// what was spent before it, and the cost limit it ran under (0 when
	// none fitted in what was left).
	before, limit uint64
}

func (m *meter) eval(e *expr, vars map[string]any) (ref.Val, error) {
	left := m.budget - min(m.spent, m.budget)
	i := 0
	for e.programs[i].limit > left && i < len(e.programs)-1 {
		i++
	}
	limit := e.programs[i].limit
	if limit > left {
		m.before, m.limit = m.spent, 0
		return nil, errCostExceeded
	}
	prg, err := e.programs[i].get()
	if err != nil {
		return nil, err
	}
	out, det, err := prg.Eval(vars)
	if det != nil {
		if c := det.ActualCost(); c != nil {
			m.spent += *c
		}
	}
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
		m.before, m.limit = m.budget-left, limit
		m.spent = max(m.spent, m.budget-left+limit)
		return nil, errCostExceeded
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// set puts v at path in m; an omitted value removes the field, or the
// list item.
func set(m map[string]any, path []any, v any) {
	var parent any = m
	for i, p := range path {
		last := i == len(path)-1
		switch k := p.(type) {
		case string:
			mm := parent.(map[string]any)
			if last {
				if _, skip := v.(omit); skip {
					delete(mm, k)
				} else {
					mm[k] = v
				}
				return
			}
			parent = mm[k]
		case int:
			l := parent.([]any)
			if last {
				l[k] = v
				return
			}
			parent = l[k]
		}
	}
}

// dropOmitted removes the list items set to omit.
func dropOmitted(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = dropOmitted(e)
		}
	case []any:
		out := x[:0]
		for _, e := range x {
			if _, skip := e.(omit); !skip {
				out = append(out, dropOmitted(e))
			}
		}
		return out
	}
	return v
}

func sameGroup(c desired.Child, res *resource) bool {
	av, _ := c.Object["apiVersion"].(string)
	got, _ := schema.ParseGroupVersion(av)
	want, _ := schema.ParseGroupVersion(res.apiVersion)
	return got.Group == want.Group
}
