package graph

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/resyncd/resyncd/desired"
)

// A resource with forEach is a collection: one child for each combination
// of its iterators' items, as kro makes them. It is one resource of the
// order; other expressions read it by its id as the list of its items'
// live objects, and its readyWhen judges each item as `each`.

// MaxCollectionSize is how many children one collection of one parent may
// make, kro's limit: a parent whose collection would make more is Stalled
// with ReasonCollectionTooLarge before any item is rendered.
const MaxCollectionSize = 1000

// maxIterators is how many iterators a forEach may have, kro's limit.
const maxIterators = 10

// EachVar is the variable that holds one item of a collection in its
// readyWhen.
const EachVar = "each"

// Stalled reasons of a parent whose collection cannot be rendered.
const (
	// ReasonCollectionTooLarge: the iterators' lists combine into more
	// than MaxCollectionSize items.
	ReasonCollectionTooLarge = "CollectionTooLarge"
	// ReasonDuplicateName: two items of a collection have one name.
	ReasonDuplicateName = "DuplicateName"
)

// iterator is one entry of a forEach: a variable and the list it takes
// its values from.
type iterator struct {
	name string
	line int
	expr *expr
}

// iteratorReserved are the names kro refuses for an iterator, besides
// those refused for an id: its own keywords.
var iteratorReserved = map[string]bool{"apiVersion": true, "context": true, "dependency": true, "dependencies": true,
	EachVar: true, "externalRef": true, "externalReference": true, "externalRefs": true, "externalReferences": true,
	"graph": true, "instance": true, "item": true, "items": true, "kind": true, "kro": true, "metadata": true,
	"object": true, "resource": true, "resourcegraphdefinition": true, "resourceGraphDefinition": true,
	"resources": true, "root": true, "runtime": true, "self": true, "serviceAccountName": true, "spec": true,
	"status": true, "this": true, "variables": true, "vars": true, "version": true}

// collection says whether r makes a child for each item of its forEach.
// An empty forEach makes a plain resource, as under kro.
func (r *resource) collection() bool { return len(r.forEach) > 0 }

// readForEach reads a resource's forEach: a list of single-key mappings,
// each an iterator's name and the expression of its list.
func readForEach(n *yaml.Node, externalRef bool, where string, ps *problems) []*iterator {
	if n == nil {
		return nil
	}
	if externalRef {
		ps.add(n.Line, where, "and externalRef exclude each other: a collection is made, an external reference only read; keep one")
	}
	if n.Kind != yaml.SequenceNode {
		ps.add(n.Line, where, "must be a list of iterators, each a name and the list it ranges over, as `- region: ${schema.spec.regions}`")
		return nil
	}
	if len(n.Content) > maxIterators {
		ps.add(n.Line, where, "has %d iterators; at most %d are allowed", len(n.Content), maxIterators)
	}
	var out []*iterator
	seen := map[string]bool{}
	for i, c := range n.Content {
		w := fmt.Sprintf("%s[%d]", where, i)
		if c.Kind != yaml.MappingNode || len(c.Content) != 2 {
			ps.add(c.Line, w, "must map exactly one iterator name to its list, as `- region: ${schema.spec.regions}`")
			continue
		}
		k, v := c.Content[0], c.Content[1]
		name := k.Value
		switch {
		case !idPattern.MatchString(name):
			ps.add(k.Line, w, "iterator %q is not an identifier in lowerCamelCase (a letter, then letters and digits)", name)
			continue
		case reserved[name] || iteratorReserved[name]:
			ps.add(k.Line, w, "iterator %q is a reserved word", name)
			continue
		case seen[name]:
			ps.add(k.Line, w, "iterator %q is declared twice in this forEach", name)
			continue
		}
		seen[name] = true
		parts, err := split(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || len(parts) != 1 || parts[0].expr == nil {
			ps.add(v.Line, w+"."+name, "%q must be exactly one expression, \"${…}\", that gives a list", v.Value)
			continue
		}
		out = append(out, &iterator{name: name, line: k.Line, expr: &expr{src: parts[0].expr.src, line: v.Line, where: w + "." + name}})
	}
	return out
}

// checkIterators reports the iterators named like a resource: inside the
// collection the name would stand for two things.
func checkIterators(f *file, ps *problems) {
	ids := map[string]bool{}
	for _, r := range f.resources {
		ids[r.id] = true
	}
	for _, r := range f.resources {
		for _, it := range r.forEach {
			if ids[it.name] {
				ps.add(it.line, r.where()+".forEach", "iterator %q is also the id of a resource; rename one", it.name)
			}
		}
	}
}

// variables are the types of the variables of every expression: the
// parent's and each resource's, with a collection's id the list, of at
// most MaxCollectionSize items, of its kind's objects (of any value when
// its kind has no schema). types is returned as it is without a
// collection.
func variables(f *file, types map[string]*apiservercel.DeclType) map[string]*apiservercel.DeclType {
	var vars map[string]*apiservercel.DeclType
	for _, r := range f.resources {
		if !r.collection() {
			continue
		}
		if vars == nil {
			vars = maps.Clone(types)
		}
		t := types[r.id]
		if t == nil {
			t = apiservercel.DynType
		}
		vars[r.id] = apiservercel.NewListType(t, MaxCollectionSize)
	}
	if vars == nil {
		return types
	}
	return vars
}

// collection compiles what a collection adds to a resource: the
// iterators' expressions, each a list and none reading another iterator;
// the template with the iterators declared, typed as their lists' items,
// and every iterator part of the name; readyWhen over each item only.
// t types one item.
func (c *compiler) collection(res *resource, t *apiservercel.DeclType) {
	base, baseLocal := c.env, c.local
	defer func() { c.env, c.local = base, baseLocal }()
	where := res.where() + ".forEach"
	// Declared here only to say so when an iterator's list reads another.
	var dyn []cel.EnvOption
	c.local = map[string]*apiservercel.DeclType{}
	for _, it := range res.forEach {
		dyn = append(dyn, cel.Variable(it.name, cel.DynType))
		c.local[it.name] = nil
	}
	if !c.extend(res.line, where, dyn...) {
		return
	}
	var typed []cel.EnvOption
	local := map[string]*apiservercel.DeclType{}
	for _, it := range res.forEach {
		elem, decl := c.iteratorType(res, it)
		typed = append(typed, cel.Variable(it.name, elem))
		local[it.name] = decl
	}
	c.env, c.local = base, local
	if !c.extend(res.line, where, typed...) {
		return
	}
	c.template(res.template, t, res.kind, res)
	c.identity(res)
	each := cel.DynType
	if t != nil {
		each = t.CelType()
	}
	c.env, c.local = base, map[string]*apiservercel.DeclType{EachVar: t}
	if !c.extend(res.line, res.where()+".readyWhen", cel.Variable(EachVar, each)) {
		return
	}
	for _, e := range res.readyWhen {
		if c.compile(e) {
			c.only(e, "each item of the collection ("+EachVar+")")
			c.expect(e, cel.BoolType, "readyWhen")
		}
	}
}

// extend extends the compiler's environment with opts.
func (c *compiler) extend(line int, where string, opts ...cel.EnvOption) bool {
	e, err := c.env.Extend(opts...)
	if err != nil {
		c.ps.add(line, where, "declare its variables: %v", err)
		return false
	}
	c.env = e
	return true
}

// iteratorType compiles the list of it and returns the type of its items,
// as CEL and, where a schema says, as the declared type that bounds the
// sizes of what the template reads of them. The resources the list reads
// become res's dependencies.
func (c *compiler) iteratorType(res *resource, it *iterator) (*cel.Type, *apiservercel.DeclType) {
	e := it.expr
	if !c.compile(e) {
		return cel.DynType, nil
	}
	for _, v := range slices.Sorted(maps.Keys(e.paths)) {
		if _, ok := c.local[v]; ok {
			c.ps.add(e.line, e.where, "${%s} reads the iterator %s: the iterators of a forEach are independent, their items combined as a cartesian product; "+
				"to range over what depends on another item, make one list of the pairs with map() and flatten()", e.src, v)
		}
	}
	if callsOmit(e.ast.NativeRep().Expr()) {
		c.ps.add(e.line, e.where, "${%s}: omit() leaves a field of a template out; a forEach needs a list", e.src)
	}
	for _, ref := range e.refs {
		switch {
		case ref == res.id:
			c.ps.add(e.line, e.where, "${%s} refers to %s, the collection it makes", e.src, res.id)
		case ref != ParentVar && !slices.Contains(res.deps, ref):
			res.deps = append(res.deps, ref)
		}
	}
	got := e.ast.OutputType()
	if !fits(got, cel.ListType(cel.DynType)) {
		c.ps.add(e.line, e.where, "${%s} is of type %s, but a forEach iterates over a list", e.src, got)
		return cel.DynType, nil
	}
	elem := cel.DynType
	if got.Kind() == types.ListKind {
		elem = got.Parameters()[0]
	}
	var decl *apiservercel.DeclType
	if root, path, ok := selection(e.ast.NativeRep().Expr()); ok {
		steps := make([]any, len(path))
		for i, p := range path {
			steps[i] = p
		}
		if l := fieldType(c.types[root], steps); l != nil && l.IsList() {
			decl = l.ElemType
		}
	}
	return elem, decl
}

// identity reports the iterators the name of res does not read (its
// namespace counts too, where a template may set one): items that differ
// only in such an iterator would have one name.
func (c *compiler) identity(res *resource) {
	used := map[string]bool{}
	for _, s := range res.template.slots {
		if p := pathString(s.path); p != "metadata.name" && p != "metadata.namespace" {
			continue
		}
		for _, pt := range s.parts {
			if pt.expr != nil {
				for v := range pt.expr.paths {
					used[v] = true
				}
			}
		}
	}
	for _, it := range res.forEach {
		if !used[it.name] {
			c.ps.add(it.line, res.where()+".forEach", "iterator %s is not part of metadata.name: items that differ only in %s would have one name; "+
				"use every iterator in the name", it.name, it.name)
		}
	}
}

// callsOmit says whether e calls omit().
func callsOmit(e celast.Expr) bool {
	switch e.Kind() {
	case celast.CallKind:
		call := e.AsCall()
		if call.FunctionName() == "omit" {
			return true
		}
		if call.IsMemberFunction() && callsOmit(call.Target()) {
			return true
		}
		return slices.ContainsFunc(call.Args(), callsOmit)
	case celast.SelectKind:
		return callsOmit(e.AsSelect().Operand())
	case celast.ListKind:
		return slices.ContainsFunc(e.AsList().Elements(), callsOmit)
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			if me := en.AsMapEntry(); callsOmit(me.Key()) || callsOmit(me.Value()) {
				return true
			}
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if callsOmit(f.AsStructField().Value()) {
				return true
			}
		}
	case celast.ComprehensionKind:
		cp := e.AsComprehension()
		return slices.ContainsFunc([]celast.Expr{cp.IterRange(), cp.AccuInit(), cp.LoopCondition(), cp.LoopStep(), cp.Result()}, callsOmit)
	}
	return false
}

// maxRange is the most items lists.range makes (cel-go's limit, which
// env keeps).
const maxRange = 1_000_000

// rangeEstimate estimates lists.range(n), forEach's way to count, by the
// most it can make when n is not a literal, where cel-go's own estimate
// has no bound and would refuse every such graph against schemas.
func rangeEstimate() checker.CostOption {
	return checker.OverloadCostEstimate("lists_range", func(_ checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
		if target != nil || len(args) != 1 {
			return nil
		}
		size := checker.SizeEstimate{Min: 0, Max: maxRange}
		if e := args[0].Expr(); e.Kind() == celast.LiteralKind {
			if v, ok := e.AsLiteral().(types.Int); ok {
				n := uint64(max(0, min(int64(v), maxRange)))
				size = checker.SizeEstimate{Min: n, Max: n}
			}
		}
		// As cel-go counts it: one a list item, one for the call, and the
		// list's making.
		base := uint64(1 + common.ListCreateBaseCost)
		cost := checker.CostEstimate{Min: size.Min + base, Max: size.Max + base}
		return &checker.CallEstimate{CostEstimate: cost, ResultSize: &size}
	})
}

// eachReads are the fields of its live objects that r's readyWhen reads
// of each item.
func (r *resource) eachReads() []string {
	var out []string
	for _, e := range r.readyWhen {
		for _, p := range e.paths[EachVar] {
			out = append(out, strings.Join(p, "."))
		}
	}
	return out
}

// span is where a collection's items are in a desired.Graph's children.
type span struct{ start, end int }

func (s span) append(refs []int) []int {
	for i := s.start; i < s.end; i++ {
		refs = append(refs, i)
	}
	return refs
}

// renderItems adds the items of collection res to g, each referring to
// what the collection refers to; index has the place in g of each plain
// resource rendered so far.
func (ev *evaluation) renderItems(res *resource, g *desired.Graph, index map[string]int) error {
	objs, err := ev.expand(res, true)
	if err != nil {
		return err
	}
	if w := ev.waits[res.id]; w != nil {
		g.Waiting = append(g.Waiting, *w)
	}
	if objs == nil {
		return nil
	}
	refs := slices.Clip(ev.refs(res, index)) // shared by every item
	if ev.spans == nil {
		ev.spans = map[string]span{}
	}
	ev.spans[res.id] = span{start: len(g.Children), end: len(g.Children) + len(objs)}
	for _, o := range objs {
		g.Children = append(g.Children, o)
		g.Refs = append(g.Refs, refs)
	}
	return nil
}

// expand renders the items of collection res (only their names unless
// whole), and binds res to the list of their live objects once every item
// exists. It returns nil when res is left out or waits.
func (ev *evaluation) expand(res *resource, whole bool) ([]*unstructured.Unstructured, error) {
	if in, err := ev.included(res); !in || err != nil {
		return nil, err
	}
	lists, ok, err := ev.dimensions(res)
	if !ok || err != nil {
		return nil, err
	}
	total := 0
	if len(lists) > 0 {
		total = 1
	}
	for _, l := range lists {
		total *= len(l)
	}
	defer func() {
		for _, it := range res.forEach {
			delete(ev.vars, it.name)
		}
	}()
	var objs []*unstructured.Unstructured
	names := make([]placed, 0, total)
	seen := make(map[string]int, total)
	at := make([]int, len(lists))
	for item := range total {
		for d, l := range lists {
			ev.vars[res.forEach[d].name] = l[at[d]]
		}
		obj, err := ev.build(res, whole)
		if obj == nil || err != nil {
			return nil, err
		}
		key := obj.GetNamespace() + "/" + obj.GetName()
		if first, dup := seen[key]; dup {
			return nil, &desired.InvalidError{Reason: ReasonDuplicateName, Field: res.where() + ".template.metadata.name", Message: fmt.Sprintf(
				"items %d and %d of the collection are both %s %s: each item needs a name of its own; make the name of every iterator, and the parent's name",
				first, item, res.kind, key)}
		}
		seen[key] = item
		names = append(names, placed{namespace: obj.GetNamespace(), name: obj.GetName()})
		if whole {
			objs = append(objs, obj)
		}
		// The first iterator is the outer loop, as under kro.
		for d := len(at) - 1; d >= 0; d-- {
			if at[d]++; at[d] < len(lists[d]) {
				break
			}
			at[d] = 0
		}
	}
	if ev.items == nil {
		ev.items = map[string][]placed{}
	}
	ev.items[res.id] = names
	ev.bind(res, names)
	if objs == nil {
		objs = []*unstructured.Unstructured{}
	}
	return objs, nil
}

// dimensions evaluates the list of each iterator of res and checks, before
// any item is rendered, that they combine into no more than
// MaxCollectionSize items. A list that is empty makes the collection
// empty (no list is returned): the lists after it are not evaluated. It
// returns false when res waits for another resource.
func (ev *evaluation) dimensions(res *resource) ([][]any, bool, error) {
	lists := make([][]any, 0, len(res.forEach))
	sizes := make([]int64, 0, len(res.forEach))
	total := int64(1)
	for _, it := range res.forEach {
		v, err := ev.eval(it.expr)
		if err != nil {
			if dep := ev.dependency(it.expr); dep != "" && missingData(err) {
				ev.wait(res, dep, fmt.Sprintf("%s: ${%s}: %v", it.expr.where, it.expr.src, err))
				return nil, false, nil
			}
			return nil, false, ev.invalid(it.expr, err)
		}
		l, ok := v.(traits.Lister)
		if !ok {
			return nil, false, &desired.InvalidError{Reason: "EvaluationFailed", Field: it.expr.where, Message: fmt.Sprintf(
				"${%s} is %s %v, not a list: a forEach iterates over a list", it.expr.src, v.Type().TypeName(), v.Value())}
		}
		n, _ := l.Size().(types.Int)
		if n == 0 {
			return nil, true, nil
		}
		sizes = append(sizes, int64(n))
		if total = min(total*int64(n), MaxCollectionSize+1); total > MaxCollectionSize {
			continue // the others are counted for the message only
		}
		items := make([]any, n)
		for i := range items {
			items[i] = l.Get(types.Int(i))
		}
		lists = append(lists, items)
	}
	if total > MaxCollectionSize {
		return nil, false, tooLarge(res, sizes)
	}
	return lists, true, nil
}

// tooLarge says that the lists of sizes make more items than a collection
// may.
func tooLarge(res *resource, sizes []int64) error {
	product := big.NewInt(1)
	var factors []string
	for _, n := range sizes {
		product.Mul(product, big.NewInt(n))
		factors = append(factors, fmt.Sprint(n))
	}
	what := product.String() + " items"
	if len(sizes) > 1 {
		what += " (" + strings.Join(factors, " × ") + ")"
	}
	return &desired.InvalidError{Reason: ReasonCollectionTooLarge, Field: res.where() + ".forEach", Message: fmt.Sprintf(
		"would make %s; a collection makes at most %d: shorten the lists it iterates over", what, MaxCollectionSize)}
}

// liveItem is the live object of the item of res at p, if it exists.
func (ev *evaluation) liveItem(res *resource, p placed) (desired.Child, bool) {
	c, ok := ev.live[ev.liveKey(res.kind, p.namespace, p.name)]
	return c, ok && sameGroup(c, res)
}

// bind makes res, for the expressions after it, the list of its items'
// live objects, in the order of the items, once every item exists: as
// for a single resource, what refers to a collection waits for it.
func (ev *evaluation) bind(res *resource, names []placed) {
	objs := make([]any, 0, len(names))
	for _, n := range names {
		c, ok := ev.liveItem(res, n)
		if !ok || c.Object == nil {
			return
		}
		objs = append(objs, c.Object)
	}
	ev.vars[res.id] = objs
}

// itemsAbsent says which items of collection res do not exist yet.
func (ev *evaluation) itemsAbsent(res *resource) string {
	var missing []placed
	for _, n := range ev.items[res.id] {
		if _, ok := ev.liveItem(res, n); !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return "it does not exist yet"
	}
	return fmt.Sprintf("%d of its %d items do not exist yet, the first %s %s",
		len(missing), len(ev.items[res.id]), res.kind, missing[0])
}

// itemsReady judges every item of collection res, by its readyWhen with
// the item as each or, without one, by kstatus, and returns the verdict on
// the first that is not ready; nil and the number of items when all are.
// An empty collection is ready.
func (ev *evaluation) itemsReady(res *resource) (*desired.Readiness, int) {
	defer delete(ev.vars, EachVar)
	names := ev.items[res.id]
	for _, n := range names {
		c, ok := ev.liveItem(res, n)
		if !ok {
			return &desired.Readiness{Reason: upper(res.id) + "Missing", Message: fmt.Sprintf("%s %s does not exist yet", res.kind, n)}, 0
		}
		ev.vars[EachVar] = c.Object
		if ready, why := ev.ready(res, c); !ready {
			return &desired.Readiness{Reason: upper(res.id) + "NotReady", Message: fmt.Sprintf("%s %s: %s", res.kind, n, why)}, 0
		}
	}
	return nil, len(names)
}
