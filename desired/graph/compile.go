package graph

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// expr is one expression of a graph, compiled once when the graph is
// loaded.
type expr struct {
	src   string
	line  int
	where string
	ast   *cel.Ast
	// refs are the variables it reads — ParentVar and resource ids — sorted.
	refs []string
	// paths are, for each variable it reads, the field paths it reads; an
	// empty path stands for the whole object.
	paths map[string][][]string
	// programs run it under cost limits that halve from the budget down
	// (see meter.eval); the first is planned when the graph is compiled,
	// the others when a parent's evaluation first needs them, since a
	// program takes about 100 KB.
	programs []*program
	// estimate is the worst case the checker computed; zero when no
	// schema bounds the sizes it reads.
	estimate checker.CostEstimate
}

// minLimit is the smallest cost limit an expression is run under: below
// it, the budget is spent.
const minLimit = 1000

// env builds the CEL environment of a graph: the libraries CRD validation
// rules have, base64, kro's hash functions and the rest of kro's library
// (kroLibrary), and one variable per name, typed when types has its schema
// (an object that keeps unknown fields reads those as dyn: openProvider).
// Unlike CRD rules, literals may mix types ({'port': 80, 'name': 'http'}),
// as objects do.
func env(names []string, types map[string]*apiservercel.DeclType) (*cel.Env, error) {
	base, err := cel.NewEnv(
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		library.URLs(), library.Regex(), library.Lists(library.ListsVersion(1)), library.Quantity(),
		library.IP(), library.CIDR(), library.Format(), library.SemverLib(library.SemverVersion(1)),
		ext.Strings(ext.StringsVersion(2)), ext.Sets(), ext.TwoVarComprehensions(), ext.Lists(ext.ListsVersion(3)),
		ext.Encoders(), hashes(), kroLibrary(),
		cel.ASTValidators(cel.ValidateDurationLiterals(), cel.ValidateTimestampLiterals(), cel.ValidateRegexLiterals()),
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false), rangeEstimate()),
	)
	if err != nil {
		return nil, err
	}
	var opts []cel.EnvOption
	var decls []*apiservercel.DeclType
	for _, n := range names {
		t := cel.DynType
		if d := types[n]; d != nil {
			t = d.CelType()
			decls = append(decls, d)
		}
		opts = append(opts, cel.Variable(n, t))
	}
	if len(decls) > 0 {
		provider := apiservercel.NewDeclTypeProvider(decls...)
		provider.SetRecognizeKeywordAsFieldName(true)
		typed, err := provider.WithTypeProvider(base.CELTypeProvider())
		if err != nil {
			return nil, err
		}
		opts = append([]cel.EnvOption{cel.CustomTypeProvider(openProvider{typed}), cel.CustomTypeAdapter(typed)}, opts...)
	}
	return base.Extend(opts...)
}

// programOptions are those of CRD validation rules, and limit.
func programOptions(limit uint64) []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
		cel.CostTracking(&library.CostEstimator{}),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostLimit(limit),
	}
}

// compiler compiles the expressions of one graph.
type compiler struct {
	env   *cel.Env
	types map[string]*apiservercel.DeclType
	// maxEstimate rejects an expression whose estimated cost is higher;
	// 0 skips the estimate (no schema bounds the sizes).
	maxEstimate uint64
	budget      uint64
	ps          *problems
	// local are the variables of one resource only, a collection's
	// iterators or each, with their types where known: read like the
	// others, but no reference to another resource.
	local map[string]*apiservercel.DeclType
}

// compile parses and checks e, finds what it reads, estimates its cost and
// plans its programs; problems go to c.ps.
func (c *compiler) compile(e *expr) bool {
	a, iss := c.env.Compile(e.src)
	if iss.Err() != nil {
		c.ps.add(e.line, e.where, "${%s}: %s", e.src, oneLine(iss.Err()))
		return false
	}
	e.ast = a
	e.paths = map[string][][]string{}
	reads(a.NativeRep().Expr(), c.declared(), e.paths)
	for v := range e.paths {
		if _, ok := c.local[v]; !ok {
			e.refs = append(e.refs, v)
		}
	}
	sort.Strings(e.refs)
	if c.maxEstimate > 0 {
		sz := &sizes{types: c.types, local: c.local}
		est, err := c.env.EstimateCost(a, &joins{CostEstimator: library.CostEstimator{SizeEstimator: sz}, sizes: sz})
		if err != nil {
			c.ps.add(e.line, e.where, "${%s}: estimate its cost: %v", e.src, err)
			return false
		}
		e.estimate = est
		if est.Max > c.maxEstimate {
			worst := fmt.Sprint(est.Max)
			if est.Max == math.MaxUint64 {
				worst = "unbounded"
			}
			c.ps.add(e.line, e.where, "${%s}: estimated cost %s exceeds the limit of %d (cel.maxEstimatedCost); "+
				"bound the lists and strings it iterates over (maxItems, maxLength in the schema) or iterate less", e.src, worst, c.maxEstimate)
			return false
		}
	}
	for limit := c.budget; ; limit /= 2 {
		e.programs = append(e.programs, &program{env: c.env, ast: a, limit: limit})
		if limit/2 < minLimit {
			break
		}
	}
	if _, err := e.programs[0].get(); err != nil {
		c.ps.add(e.line, e.where, "${%s}: %v", e.src, err)
		return false
	}
	return true
}

// program is an expression's program under one cost limit, planned once,
// when first used.
type program struct {
	env   *cel.Env
	ast   *cel.Ast
	limit uint64
	once  sync.Once
	prg   cel.Program
	err   error
}

func (p *program) get() (cel.Program, error) {
	p.once.Do(func() { p.prg, p.err = p.env.Program(p.ast, programOptions(p.limit)...) })
	return p.prg, p.err
}

// expect reports e if its type cannot be what the place it fills needs:
// a scalar of another type, a list where no list goes, a map or object
// where a scalar or list goes. Objects are not compared field by field.
func (c *compiler) expect(e *expr, want *cel.Type, what string) {
	got := e.ast.OutputType()
	if got.Kind() == types.OpaqueKind && got.TypeName() == "optional_type" {
		got = got.Parameters()[0]
	}
	if want == nil || fits(got, want) {
		return
	}
	c.ps.add(e.line, e.where, "${%s} is of type %s, but %s is %s", e.src, got, what, describe(want))
}

// fits says whether a value of type got may fill a field of type want.
func fits(got, want *cel.Type) bool {
	loose := func(t *cel.Type) bool {
		return t.Kind() == types.DynKind || t.Kind() == types.AnyKind || t.Kind() == types.NullTypeKind
	}
	if loose(got) || loose(want) {
		return true
	}
	object := func(t *cel.Type) bool { return t.Kind() == types.StructKind || t.Kind() == types.MapKind }
	switch {
	case object(want):
		return object(got)
	case want.Kind() == types.ListKind:
		return got.Kind() == types.ListKind
	}
	return want.IsAssignableType(got)
}

// describe names a field's type for a person: a scalar's CEL name, or
// object or list.
func describe(t *cel.Type) string {
	switch t.Kind() {
	case types.StructKind, types.MapKind:
		return "an object"
	case types.ListKind:
		return "a list"
	}
	return t.String()
}

func (c *compiler) declared() map[string]bool {
	m := map[string]bool{}
	for n := range c.types {
		m[n] = true
	}
	for n := range c.local {
		m[n] = true
	}
	return m
}

// reads records, for each variable of vars that e reads, the longest field
// paths it reads of it: "deployment.status.replicas" reads
// [status replicas] of deployment.
func reads(e celast.Expr, vars map[string]bool, out map[string][][]string) {
	if root, path, ok := selection(e); ok {
		if vars[root] {
			if !slices.ContainsFunc(out[root], func(p []string) bool { return slices.Equal(p, path) }) {
				out[root] = append(out[root], path)
			}
		}
		return
	}
	switch e.Kind() {
	case celast.SelectKind:
		reads(e.AsSelect().Operand(), vars, out)
	case celast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			reads(call.Target(), vars, out)
		}
		for _, a := range call.Args() {
			reads(a, vars, out)
		}
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			reads(el, vars, out)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			reads(me.Key(), vars, out)
			reads(me.Value(), vars, out)
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			reads(f.AsStructField().Value(), vars, out)
		}
	case celast.ComprehensionKind:
		cp := e.AsComprehension()
		for _, x := range []celast.Expr{cp.IterRange(), cp.AccuInit(), cp.LoopCondition(), cp.LoopStep(), cp.Result()} {
			reads(x, vars, out)
		}
	}
}

// selection returns the variable and the field path of a chain of field
// selections (x.a.b, x.?a, has(x.a)), if e is one.
func selection(e celast.Expr) (string, []string, bool) {
	switch e.Kind() {
	case celast.IdentKind:
		return e.AsIdent(), nil, true
	case celast.SelectKind:
		s := e.AsSelect()
		root, path, ok := selection(s.Operand())
		return root, append(path, s.FieldName()), ok
	case celast.CallKind:
		call := e.AsCall()
		if call.FunctionName() == operators.OptSelect && len(call.Args()) == 2 && call.Args()[1].Kind() == celast.LiteralKind {
			if f, ok := call.Args()[1].AsLiteral().(types.String); ok {
				root, path, ok := selection(call.Args()[0])
				return root, append(path, string(f)), ok
			}
		}
	}
	return "", nil, false
}

// sizes bounds the sizes of what an expression reads: by the schema where
// it says (maxItems, maxLength, or what fits in the largest request), and
// by the largest request the API server accepts otherwise.
type sizes struct {
	types, local map[string]*apiservercel.DeclType
}

// EstimateSize implements checker.CostEstimator.
func (s *sizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return sz
	}
	path := n.Path()
	if len(path) > 1 && path[0] == mappedItems {
		// An item of what map() made (joins): the value it maps each item to.
		path = path[1 : len(path)-1]
	}
	if l := len(path); l >= 2 && path[l-2] == "metadata" {
		// Whatever a schema says, the API server takes no longer names.
		switch path[l-1] {
		case "name", "generateName":
			return &checker.SizeEstimate{Min: 0, Max: 253}
		case "namespace":
			return &checker.SizeEstimate{Min: 0, Max: 63}
		}
	}
	if e := n.Expr(); e != nil && e.Kind() == celast.ComprehensionKind {
		// What map() and filter() make is no larger than what they range
		// over.
		if root, p, ok := selection(e.AsComprehension().IterRange()); ok {
			path = append([]string{root}, p...)
		}
	}
	if len(path) > 0 {
		t, ok := s.local[path[0]]
		if !ok {
			t = s.types[path[0]]
		}
		if t != nil {
			for _, f := range path[1:] {
				switch {
				case t == nil:
				case f == "@items" && t.IsList(), f == "@values" && t.IsMap():
					t = t.ElemType
				case f == "@keys" && t.IsMap():
					t = t.KeyType
				case t.IsObject():
					if fd, ok := t.Fields[f]; ok {
						t = fd.Type
					} else {
						t = nil
					}
				case t.IsMap():
					t = t.ElemType
				default:
					t = nil
				}
			}
			if t != nil && t.MaxElements > 0 {
				return &checker.SizeEstimate{Min: 0, Max: uint64(t.MaxElements)}
			}
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(apiservercel.DefaultMaxRequestSizeBytes)}
}

// EstimateCallCost implements checker.CostEstimator.
func (s *sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// joins is the estimator of CRD validation rules, but for the join() of
// what map() made, whose items it sizes as the value each item is mapped
// to, as in x.map(c, c.metadata.name).join(','): CEL's own estimate takes
// them for the largest string a request holds.
type joins struct {
	library.CostEstimator
	sizes *sizes
}

// mappedItems starts the path of an item of a list map() made; the rest
// is the path of the value it is mapped to.
const mappedItems = "@mapped"

// EstimateCallCost implements checker.CostEstimator.
func (j *joins) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if function == "join" && target != nil {
		if path := mappedPath((*target).Expr()); path != nil {
			t := checker.AstNode(mapped{AstNode: *target, size: j.sizes.EstimateSize(*target), path: path})
			target = &t
		}
	}
	return j.CostEstimator.EstimateCallCost(function, overloadID, target, args)
}

// mappedPath is, for e a map() over a field path whose every item is
// mapped to a field path of it (x.map(c, c.a.b)), the path of that value:
// [mappedItems, x, @items, a, b]; nil for any other expression.
func mappedPath(e celast.Expr) []string {
	if e == nil || e.Kind() != celast.ComprehensionKind {
		return nil
	}
	cp := e.AsComprehension()
	root, path, ok := selection(cp.IterRange())
	step := cp.LoopStep()
	if !ok || step.Kind() != celast.CallKind || step.AsCall().FunctionName() != operators.Add || len(step.AsCall().Args()) != 2 {
		return nil
	}
	l := step.AsCall().Args()[1]
	if l.Kind() != celast.ListKind || len(l.AsList().Elements()) != 1 {
		return nil
	}
	v, field, ok := selection(l.AsList().Elements()[0])
	if !ok || v != cp.IterVar() {
		return nil
	}
	return slices.Concat([]string{mappedItems, root}, path, []string{"@items"}, field)
}

// mapped is a list map() made, its size known and its items' path given.
type mapped struct {
	checker.AstNode
	size *checker.SizeEstimate
	path []string
}

func (m mapped) ComputedSize() *checker.SizeEstimate { return m.size }
func (m mapped) Path() []string                      { return m.path }

// oneLine keeps of CEL's errors their messages and positions, without the
// source line and caret that only read well on a terminal.
func oneLine(err error) string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "ERROR: ") {
			out = append(out, "at "+strings.TrimPrefix(l, "ERROR: <input>:"))
		}
	}
	if len(out) == 0 {
		return err.Error()
	}
	return strings.Join(out, "; ")
}

// errCostExceeded says a parent's evaluation reached its cost budget.
var errCostExceeded = errors.New("cost budget exceeded")
