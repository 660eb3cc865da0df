package graph

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/resyncd/resyncd/desired"
)

// Defaults of Options' cost bounds; docs/configuration.md lists them as
// the cel section's.
const (
	DefaultMaxEstimatedCost uint64 = 100_000_000
	DefaultCostBudget       uint64 = 1_000_000
)

// SchemaResolver finds the OpenAPI schema of a kind, as the API server
// publishes it (k8s.io/apiserver/pkg/cel/openapi/resolver has one that
// asks discovery).
type SchemaResolver interface {
	ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error)
}

// Options say how to compile a graph.
type Options struct {
	// Schemas, when set, types every expression: the parent's as Parent's
	// schema, each child's as its kind's, and each value as the field it
	// fills; and bounds the estimated cost of each. A kind it resolves to
	// no schema (nil, no error) is left dynamic. Nil: every variable is
	// dynamic and only syntax, references and order are checked.
	Schemas SchemaResolver
	// Parent is the parents' kind, to type them with Schemas.
	Parent schema.GroupVersionKind
	// Resource maps a child kind to the resource to LIST; nil guesses the
	// plural as kubectl does for a kind it does not know.
	Resource func(schema.GroupVersionKind) (schema.GroupVersionResource, error)
	// External maps the kind of an external reference to the resource to
	// LIST and whether its objects are namespaced; nil guesses the plural
	// and takes the kind as namespaced.
	External func(schema.GroupVersionKind) (schema.GroupVersionResource, bool, error)
	// MaxEstimatedCost rejects an expression whose worst-case cost is
	// higher, when Schemas is set; 0: DefaultMaxEstimatedCost.
	MaxEstimatedCost uint64
	// CostBudget bounds what evaluating a parent's graph may cost, once for
	// its children and once for its status; 0: DefaultCostBudget.
	CostBudget uint64
	// ClusterScoped says whether a child kind is cluster-scoped, as the
	// API server's discovery says; nil (no cluster): Kubernetes' own
	// cluster-scoped kinds are, every other kind is taken as namespaced.
	ClusterScoped func(schema.GroupVersionKind) bool
	// ParentSchema is the openAPIV3Schema of the parent kind's CRD, when it
	// is a file of the team's beside a graph without spec.schema
	// (ParentCRD.Options sets it): Renderer.Default applies its defaults.
	ParentSchema *extv1.JSONSchemaProps
}

// Renderer renders the parents of one kind as a graph file declares: a
// desired.Renderer.
type Renderer struct {
	name   string
	budget uint64
	// resources are in apply order: a resource after those it refers to.
	resources  []*resource
	status     *tmpl
	childTypes []desired.ChildType
	// externalTypes are the kinds of the external references, and
	// externalType the index of each reference's kind, by id.
	externalTypes []desired.ExternalType
	externalType  map[string]int
	// schema is the parent kind the file declares (spec.schema with kro's
	// SimpleSchema), and defaulter applies its defaults; nil when the
	// parent kind's CRD is not the graph's.
	schema    *Schema
	defaulter *Defaulter
	// undeclared are the status fields the engine adds that the parent's
	// schema does not declare (UndeclaredStatus).
	undeclared []string
	// state: the engine writes status.state (WritesState).
	state bool
	// kro: the graph is a ResourceGraphDefinition's from the cluster,
	// rendered as kro renders it (ServeAsKro).
	kro *kroIdentity
}

// UndeclaredStatus lists the status fields the engine adds
// (observedGeneration, conditions) that the parent kind's status schema,
// as the graph was typed by, does not declare; the engine leaves them out
// of what it applies. Empty when the graph was loaded untyped.
func (r *Renderer) UndeclaredStatus() []string { return r.undeclared }

// WritesState says whether the engine writes the parent's status.state, as
// kro does (ACTIVE, IN_PROGRESS, FAILED): when the parent kind's status
// schema declares it, as a CRD made from spec.schema does, and the graph's
// own status fields do not set it.
func (r *Renderer) WritesState() bool { return r.state }

// Schema is the parent kind the graph file declares in spec.schema, from
// which `resyncd crd` makes its CRD; nil when it declares none.
func (r *Renderer) Schema() *Schema { return r.schema }

// Default fills in parent the defaults of the parent kind's schema, as the
// API server would have stored them: offline, a parent written by hand
// renders as it would in the cluster. Without spec.schema it does nothing.
func (r *Renderer) Default(parent *unstructured.Unstructured) {
	if r.defaulter != nil {
		r.defaulter.Default(parent.Object)
	}
}

// defaulterOf is the defaulter of the CRD made from s.
func defaulterOf(s *Schema) (*Defaulter, error) {
	crd, err := CRD(s, nil)
	if err != nil {
		return nil, err
	}
	return NewDefaulter(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
}

var _ desired.Renderer = (*Renderer)(nil)

// Load reads and compiles the graph file at path. The error, an *Error
// when the file is at fault, lists every problem with its line.
func Load(path string, opts Options) (*Renderer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read graph: %w", err)
	}
	return Parse(path, data, opts)
}

// Parse compiles a graph file's content; path names it in messages.
func Parse(path string, data []byte, opts Options) (*Renderer, error) {
	if opts.MaxEstimatedCost == 0 {
		opts.MaxEstimatedCost = DefaultMaxEstimatedCost
	}
	if opts.CostBudget == 0 {
		opts.CostBudget = DefaultCostBudget
	}
	ps := &problems{path: path}
	f := read(path, data, ps)
	if f == nil {
		return nil, ps.err()
	}
	r := &Renderer{name: f.name, budget: opts.CostBudget, status: f.status}
	placeResources(f, opts.ClusterScoped, ps)
	if f.schema {
		r.schema = parseSchema(data, ps)
	}
	types, parentSchema, err := resolveTypes(f, opts, ps)
	if err != nil {
		return nil, err
	}
	names := []string{ParentVar}
	for _, res := range f.resources {
		names = append(names, res.id)
	}
	vars := variables(f, types)
	e, err := env(names, vars)
	if err != nil {
		return nil, fmt.Errorf("%s: build the CEL environment: %w", path, err)
	}
	c := &compiler{env: e, types: vars, budget: opts.CostBudget, ps: ps}
	for _, n := range names {
		if _, ok := vars[n]; !ok {
			vars[n] = nil // declared, untyped
		}
	}
	if opts.Schemas != nil {
		c.maxEstimate = opts.MaxEstimatedCost
	}
	for _, res := range f.resources {
		c.resource(res, types[res.id])
	}
	if f.status != nil {
		var st *apiservercel.DeclType
		if p := vars[ParentVar]; p != nil && p.IsObject() {
			if fd, ok := p.Fields["status"]; ok {
				st = fd.Type
			}
		}
		c.template(f.status, st, "the parent's status field", nil)
		undeclaredStatus(f, parentSchema, opts.Parent.Kind, ps)
	}
	if len(ps.list) > 0 {
		return nil, ps.err()
	}
	r.undeclared = undeclaredEngineStatus(parentSchema)
	r.state = declaresState(parentSchema) && !setsState(f.status)
	switch {
	case r.schema != nil:
		if r.defaulter, err = defaulterOf(r.schema); err != nil {
			return nil, fmt.Errorf("%s: spec.schema: %w", path, err)
		}
	case opts.ParentSchema != nil:
		if r.defaulter, err = NewDefaulter(opts.ParentSchema); err != nil {
			return nil, fmt.Errorf("%s: the parent kind's CRD: %w", path, err)
		}
	}
	if r.resources, err = order(f, ps); err != nil {
		return nil, err
	}
	if r.childTypes, err = childTypes(r.resources, f.status, opts.Resource); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.externalTypes, r.externalType, err = externalTypes(r.resources, f.status, opts.External, ps); err != nil {
		return nil, err
	}
	return r, nil
}

// undeclaredStatus reports the status fields of f that the parent's
// schema does not declare: the API server drops them from what resyncd
// applies, so the status would differ, and be written, every pass. A
// field declared with any value (x-kubernetes-preserve-unknown-fields, as
// `resyncd crd` declares one it cannot type offline) is declared; a
// status that keeps unknown fields, or declares none, checks nothing.
func undeclaredStatus(f *file, parent *spec.Schema, kind string, ps *problems) {
	fields, ok := f.status.value.(map[string]any)
	if parent == nil || !ok {
		return
	}
	st, found := parent.Properties["status"]
	if !found || len(st.Properties) == 0 || preservesUnknown(&st) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if _, found := st.Properties[k]; found {
			continue
		}
		ps.add(f.line, "spec.status."+k, "is not a field of %s's status in its CustomResourceDefinition: the API server would drop it, "+
			"and the status would be written again every pass; declare it in the CRD's status schema, or remove it", kind)
	}
}

// engineStatus are the status fields the engine writes beside a graph's.
var engineStatus = []string{"observedGeneration", "conditions"}

// undeclaredEngineStatus lists those of engineStatus that the parent's
// status schema does not declare: a CRD that kro generated declares
// conditions and no observedGeneration, and the API server refuses a
// status apply with a field it does not know. A status that keeps unknown
// fields, or declares none, declares them all.
func undeclaredEngineStatus(parent *spec.Schema) []string {
	if parent == nil {
		return nil
	}
	st, found := parent.Properties["status"]
	if !found || len(st.Properties) == 0 || preservesUnknown(&st) {
		return nil
	}
	var out []string
	for _, k := range engineStatus {
		if _, found := st.Properties[k]; !found {
			out = append(out, k)
		}
	}
	return out
}

// stateField is the status field of kro's instance state.
const stateField = "state"

// declaresState says whether the parent's status schema declares a string
// state.
func declaresState(parent *spec.Schema) bool {
	if parent == nil {
		return false
	}
	st, found := parent.Properties["status"]
	if !found {
		return false
	}
	state, found := st.Properties[stateField]
	return found && state.Type.Contains("string")
}

// setsState says whether the status template t sets state itself.
func setsState(t *tmpl) bool {
	if t == nil {
		return false
	}
	m, ok := t.value.(map[string]any)
	_, set := m[stateField]
	return ok && set
}

// preservesUnknown says whether s keeps fields it does not declare.
func preservesUnknown(s *spec.Schema) bool {
	v, ok := s.Extensions["x-kubernetes-preserve-unknown-fields"].(bool)
	return ok && v
}

// resolveTypes asks Schemas for the type of the parent and of every kind
// of child, and returns them with the parent's schema; without Schemas
// it returns an empty map.
func resolveTypes(f *file, opts Options, ps *problems) (map[string]*apiservercel.DeclType, *spec.Schema, error) {
	types := map[string]*apiservercel.DeclType{}
	if opts.Schemas == nil {
		return types, nil, nil
	}
	parent, err := opts.Schemas.ResolveSchema(opts.Parent)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the schema of the parent kind %s: %w", f.path, opts.Parent.Kind, err)
	}
	types[ParentVar] = declTypeOf(parent, "__parent__")
	for _, res := range f.resources {
		gv, err := schema.ParseGroupVersion(res.apiVersion)
		if err != nil {
			ps.add(res.line, res.where()+".template.apiVersion", "%q: %v", res.apiVersion, err)
			continue
		}
		s, err := opts.Schemas.ResolveSchema(gv.WithKind(res.kind))
		if err != nil {
			ps.add(res.line, res.where()+res.body(), "%s %s: no schema from the API server (is the kind served?): %v", res.apiVersion, res.kind, err)
			continue
		}
		t := declTypeOf(s, "__"+res.id+"__")
		if t != nil && res.external != nil && res.external.selector {
			// A selector reads a list of the kind's objects.
			t = apiservercel.NewListType(t, MaxExternalObjects)
		}
		types[res.id] = t
	}
	if len(ps.list) > 0 {
		return nil, nil, ps.err()
	}
	return types, parent, nil
}

// resource compiles the expressions of one resource and checks what they
// may refer to: includeWhen the parent only, readyWhen the resource
// itself only, the template the parent and other resources.
func (c *compiler) resource(res *resource, t *apiservercel.DeclType) {
	for _, e := range res.includeWhen {
		if c.compile(e) {
			c.only(e, "the parent ("+ParentVar+")", ParentVar)
			c.expect(e, cel.BoolType, "includeWhen")
		}
	}
	if res.collection() {
		c.collection(res, t)
		return
	}
	for _, e := range res.readyWhen {
		if c.compile(e) {
			c.only(e, "the resource itself ("+res.id+")", res.id)
			c.expect(e, cel.BoolType, "readyWhen")
		}
	}
	if x := res.external; x != nil {
		// Read before any child is rendered, by the engine: its name,
		// namespace and selector can depend on the parent alone.
		c.template(x.metadata, nil, "externalRef", res)
		for _, e := range x.metadata.expressions() {
			for _, ref := range e.refs {
				if ref != ParentVar {
					c.ps.add(e.line, e.where, "${%s} refers to %s; an external reference is read before any child is rendered, so it may refer to the parent (%s) only", e.src, ref, ParentVar)
				}
			}
		}
		return
	}
	c.template(res.template, t, res.kind, res)
}

// body is the key of what r reads or writes: template or externalRef.
func (r *resource) body() string {
	if r.external != nil {
		return ".externalRef"
	}
	return ".template"
}

// template compiles the expressions of a template and checks each value's
// type against the field it fills, when t types the template's root.
func (c *compiler) template(tp *tmpl, t *apiservercel.DeclType, what string, res *resource) {
	for _, s := range tp.slots {
		field := fieldType(t, s.path)
		for _, p := range s.parts {
			e := p.expr
			if e == nil || !c.compile(e) {
				continue
			}
			if res != nil {
				if slices.Contains(e.refs, res.id) {
					c.ps.add(e.line, e.where, "${%s} refers to %s, the resource it is part of", e.src, res.id)
				}
				for _, ref := range e.refs {
					if ref != ParentVar && ref != res.id && !slices.Contains(res.deps, ref) {
						res.deps = append(res.deps, ref)
					}
				}
			}
			switch {
			case !s.standalone():
				c.expect(e, cel.StringType, "text inside a string")
			case field != nil:
				c.expect(e, field.CelType(), fmt.Sprintf("%s's %s", what, pathString(s.path)))
			}
		}
	}
}

// only reports each variable e reads that is not one of allowed.
func (c *compiler) only(e *expr, what string, allowed ...string) {
	for _, ref := range e.refs {
		if !slices.Contains(allowed, ref) {
			c.ps.add(e.line, e.where, "${%s} refers to %s; it may refer to %s only", e.src, ref, what)
		}
	}
}

// fieldType follows path from t to the type of the field it leads to;
// nil when t is nil or the path leaves what the schema describes.
func fieldType(t *apiservercel.DeclType, path []any) *apiservercel.DeclType {
	for _, p := range path {
		if t == nil {
			return nil
		}
		switch k := p.(type) {
		case string:
			switch {
			case t.IsObject():
				name, ok := apiservercel.Escape(k)
				fd, found := t.Fields[name]
				if !ok || !found {
					return nil
				}
				t = fd.Type
			case t.IsMap():
				t = t.ElemType
			default:
				return nil
			}
		case int:
			if !t.IsList() {
				return nil
			}
			t = t.ElemType
		}
	}
	return t
}

// order sorts the resources so that each comes after those it refers to,
// as kro orders them (its status.topologicalOrder, and its apply order):
// of the resources whose references are all placed, the one declared
// first. A cycle is reported with its path.
func order(f *file, ps *problems) ([]*resource, error) {
	byID := map[string]*resource{}
	for _, r := range f.resources {
		byID[r.id] = r
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(r *resource) bool
	visit = func(r *resource) bool {
		switch state[r.id] {
		case done:
			return true
		case visiting:
			i := slices.Index(stack, r.id)
			cycle := append(slices.Clone(stack[i:]), r.id)
			ps.add(r.line, r.where(), "is part of a cycle of references: %s", strings.Join(cycle, " → "))
			return false
		}
		state[r.id] = visiting
		stack = append(stack, r.id)
		for _, d := range r.deps {
			if !visit(byID[d]) {
				return false
			}
		}
		stack = stack[:len(stack)-1]
		state[r.id] = done
		return true
	}
	for _, r := range f.resources {
		if !visit(r) {
			return nil, ps.err()
		}
	}
	out := make([]*resource, 0, len(f.resources))
	placed := map[string]bool{}
	for len(out) < len(f.resources) {
		for _, r := range f.resources {
			if !placed[r.id] && !slices.ContainsFunc(r.deps, func(d string) bool { return !placed[d] }) {
				placed[r.id] = true
				out = append(out, r)
				break
			}
		}
	}
	return out, nil
}

// readinessKeep are the fields the kstatus-style readiness of a child
// without readyWhen reads.
var readinessKeep = []string{"metadata.generation", "status", "spec.replicas", "spec.type", "spec.updateStrategy"}

// childTypes lists the kinds of the resources, each once, in apply order,
// with the fields of their live objects that expressions and readiness
// read.
func childTypes(resources []*resource, status *tmpl, resourceOf func(schema.GroupVersionKind) (schema.GroupVersionResource, error)) ([]desired.ChildType, error) {
	if resourceOf == nil {
		resourceOf = func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
			gvr, _ := meta.UnsafeGuessKindToResource(gvk)
			return gvr, nil
		}
	}
	reads := pathsRead(resources, status)
	var out []desired.ChildType
	index := map[schema.GroupVersionKind]int{}
	for _, r := range resources {
		if r.external != nil {
			continue
		}
		gv, _ := schema.ParseGroupVersion(r.apiVersion)
		gvk := gv.WithKind(r.kind)
		i, ok := index[gvk]
		if !ok {
			gvr, err := resourceOf(gvk)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", r.where(), r.apiVersion, r.kind, err)
			}
			i = len(out)
			index[gvk] = i
			out = append(out, desired.ChildType{GVR: gvr, Kind: r.kind})
		}
		out[i].Anywhere = out[i].Anywhere || r.namespace != ""
		out[i].ClusterScoped = r.clusterScoped
		keep := out[i].Keep
		for _, p := range reads[r.id] {
			keep = append(keep, strings.Join(p, "."))
		}
		if len(r.readyWhen) == 0 {
			keep = append(keep, readinessKeep...)
		}
		if r.collection() {
			keep = append(keep, r.eachReads()...)
		}
		out[i].Keep = compact(keep)
	}
	return out, nil
}

// pathsRead returns, by id, every field path an expression reads of it.
func pathsRead(resources []*resource, status *tmpl) map[string][][]string {
	reads := map[string][][]string{}
	var all []*expr
	for _, r := range resources {
		all = append(all, r.expressions()...)
	}
	if status != nil {
		all = append(all, status.expressions()...)
	}
	for _, e := range all {
		for v, paths := range e.paths {
			reads[v] = append(reads[v], paths...)
		}
	}
	return reads
}

// externalTypes lists the kinds of the external references, each once, in
// apply order, with the fields expressions read of them, and the index of
// each reference's kind. A namespace on a reference to a cluster-scoped
// kind is reported.
func externalTypes(resources []*resource, status *tmpl, resourceOf func(schema.GroupVersionKind) (schema.GroupVersionResource, bool, error),
	ps *problems) ([]desired.ExternalType, map[string]int, error) {
	if resourceOf == nil {
		resourceOf = func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
			gvr, _ := meta.UnsafeGuessKindToResource(gvk)
			return gvr, true, nil
		}
	}
	reads := pathsRead(resources, status)
	var out []desired.ExternalType
	byID := map[string]int{}
	index := map[schema.GroupVersionKind]int{}
	for _, r := range resources {
		if r.external == nil {
			continue
		}
		gv, _ := schema.ParseGroupVersion(r.apiVersion)
		gvk := gv.WithKind(r.kind)
		i, ok := index[gvk]
		if !ok {
			gvr, namespaced, err := resourceOf(gvk)
			if err != nil {
				ps.add(r.external.line, r.where()+".externalRef", "%s %s: %v", r.apiVersion, r.kind, err)
				continue
			}
			i = len(out)
			index[gvk] = i
			out = append(out, desired.ExternalType{GVR: gvr, Kind: r.kind, Namespaced: namespaced})
		}
		if r.external.namespace && !out[i].Namespaced {
			ps.add(r.external.line, r.where()+".externalRef.metadata.namespace", "%s %s is cluster-scoped: remove the namespace", r.apiVersion, r.kind)
		}
		byID[r.id] = i
		keep := out[i].Keep
		for _, p := range reads[r.id] {
			if r.external.selector {
				// Expressions read the list: what they read of its items is
				// not a path of the variable.
				p = nil
			}
			keep = append(keep, strings.Join(p, "."))
		}
		out[i].Keep = compact(keep)
	}
	return out, byID, ps.err()
}

// compact sorts paths and drops those inside another: "" (the whole
// object) swallows every other.
func compact(paths []string) []string {
	slices.Sort(paths)
	paths = slices.Compact(paths)
	var out []string
	for _, p := range paths {
		if len(out) > 0 && (out[len(out)-1] == "" || strings.HasPrefix(p, out[len(out)-1]+".")) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// expressions returns every expression of r.
func (r *resource) expressions() []*expr {
	if r.external != nil {
		return slices.Concat(r.includeWhen, r.readyWhen, r.external.metadata.expressions())
	}
	out := slices.Concat(r.includeWhen, r.readyWhen, r.template.expressions())
	for _, it := range r.forEach {
		out = append(out, it.expr)
	}
	return out
}

// expressions returns every expression of t.
func (t *tmpl) expressions() []*expr {
	var out []*expr
	for _, s := range t.slots {
		for _, p := range s.parts {
			if p.expr != nil {
				out = append(out, p.expr)
			}
		}
	}
	return out
}
