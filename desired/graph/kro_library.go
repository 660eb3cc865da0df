package graph

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// kroLibrary declares the functions of kro's CEL library that its graphs
// use beyond the hash functions and the libraries of CRD rules:
//
//	random.seededString(int, string) string   the same seed, the same string, as under kro
//	random.seededInt(int, int, string) int    in [min, max)
//	json.marshal(dyn) string                  keys sorted, as kro writes it
//	json.unmarshal(string) dyn                numbers as doubles, as kro reads them
//	omit() dyn                                leaves the field or list item out
//	map.merge(map) map                        the argument's keys win
//	dyn.deepMerge(dyn) dyn                    maps merged at every depth
//	lists.setAtIndex(list, int, T) list
//	lists.insertAtIndex(list, int, T) list
//	lists.removeAtIndex(list, int) list
//
// Each declares its cost, estimated and actual, by the size of what it
// reads and makes. A call runs to its end before the cost tracker sees
// it, so every function that could make something large also stops by
// itself at maxCallSize.
func kroLibrary() cel.EnvOption { return cel.Lib(kroLib{}) }

type kroLib struct{}

func (kroLib) LibraryName() string { return "resyncd.io/kro" }

// maxCallSize bounds what one call may read or make, in bytes: the
// largest request the API server accepts, since what a graph makes ends
// up in an object.
const maxCallSize = uint64(apiservercel.DefaultMaxRequestSizeBytes)

// jsonCostPerByte is what json.marshal and json.unmarshal cost per byte
// of JSON. Parsing allocates a value per token: about ten times the work
// per byte of the string traversals CEL charges 0.1 for.
const jsonCostPerByte = 1

// The overloads, by id; their costs are keyed by them.
const (
	overloadSeededString  = "random_seededString_int_string"
	overloadSeededInt     = "random_seededInt_int_int_string"
	overloadJSONMarshal   = "json_marshal_dyn"
	overloadJSONUnmarshal = "json_unmarshal_string"
	overloadOmit          = "omit"
	overloadMerge         = "map_merge_map"
	overloadDeepMerge     = "dyn_deepMerge_dyn"
	overloadSetAtIndex    = "lists_setAtIndex_list_int_T"
	overloadInsertAtIndex = "lists_insertAtIndex_list_int_T"
	overloadRemoveAtIndex = "lists_removeAtIndex_list_int"
)

func (kroLib) CompileOptions() []cel.EnvOption {
	list := cel.ListType(cel.TypeParamType("T"))
	mapKV := cel.MapType(cel.TypeParamType("K"), cel.TypeParamType("V"))
	var estimates []checker.CostOption
	for id, c := range kroCosts {
		estimates = append(estimates, checker.OverloadCostEstimate(id, c.estimate))
	}
	return []cel.EnvOption{
		cel.Function("random.seededString", cel.Overload(overloadSeededString,
			[]*cel.Type{cel.IntType, cel.StringType}, cel.StringType, cel.BinaryBinding(seededString))),
		cel.Function("random.seededInt", cel.Overload(overloadSeededInt,
			[]*cel.Type{cel.IntType, cel.IntType, cel.StringType}, cel.IntType, cel.FunctionBinding(seededInt))),
		cel.Function("json.marshal", cel.Overload(overloadJSONMarshal,
			[]*cel.Type{cel.DynType}, cel.StringType, cel.UnaryBinding(jsonMarshal))),
		cel.Function("json.unmarshal", cel.Overload(overloadJSONUnmarshal,
			[]*cel.Type{cel.StringType}, cel.DynType, cel.UnaryBinding(jsonUnmarshal))),
		cel.Function("omit", cel.Overload(overloadOmit,
			nil, cel.DynType, cel.FunctionBinding(func(...ref.Val) ref.Val { return omitVal{} }))),
		cel.Function("merge", cel.MemberOverload(overloadMerge,
			[]*cel.Type{mapKV, mapKV}, mapKV, cel.BinaryBinding(merge))),
		cel.Function("deepMerge", cel.MemberOverload(overloadDeepMerge,
			[]*cel.Type{cel.DynType, cel.DynType}, cel.DynType, cel.BinaryBinding(deepMerge))),
		cel.Function("lists.setAtIndex", cel.Overload(overloadSetAtIndex,
			[]*cel.Type{list, cel.IntType, cel.TypeParamType("T")}, list, cel.FunctionBinding(setAtIndex))),
		cel.Function("lists.insertAtIndex", cel.Overload(overloadInsertAtIndex,
			[]*cel.Type{list, cel.IntType, cel.TypeParamType("T")}, list, cel.FunctionBinding(insertAtIndex))),
		cel.Function("lists.removeAtIndex", cel.Overload(overloadRemoveAtIndex,
			[]*cel.Type{list, cel.IntType}, list, cel.BinaryBinding(removeAtIndex))),
		cel.CostEstimatorOptions(estimates...),
	}
}

func (kroLib) ProgramOptions() []cel.ProgramOption {
	var trackers []interpreter.CostTrackerOption
	for id, c := range kroCosts {
		trackers = append(trackers, interpreter.OverloadCostTracker(id, c.actual))
	}
	return []cel.ProgramOption{cel.CostTrackerOptions(trackers...)}
}

// cost is an overload's cost: estimated when the graph is compiled, from
// the sizes the checker knows, and actual, from the values of a call.
type cost struct {
	estimate checker.FunctionEstimator
	actual   interpreter.FunctionTracker
}

var kroCosts = map[string]cost{
	overloadSeededString: {
		estimate: func(est checker.CostEstimator, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
			n := checker.SizeEstimate{Min: 1, Max: maxCallSize}
			if l, ok := intLiteral(args[0]); ok && l > 0 {
				n = checker.SizeEstimate{Min: uint64(l), Max: uint64(l)}
			}
			c := one().Add(traversal(sizeOf(est, args[1]))).Add(traversal(n))
			return &checker.CallEstimate{CostEstimate: c, ResultSize: &n}
		},
		actual: func(args []ref.Val, result ref.Val) *uint64 {
			n := uint64(0)
			if s, ok := result.(types.String); ok {
				n = uint64(len(s))
			}
			return total(1 + traverse(length(args[1])) + traverse(n))
		},
	},
	overloadSeededInt: {
		estimate: func(est checker.CostEstimator, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
			return &checker.CallEstimate{CostEstimate: one().Add(traversal(sizeOf(est, args[2])))}
		},
		actual: func(args []ref.Val, _ ref.Val) *uint64 { return total(1 + traverse(length(args[2]))) },
	},
	overloadJSONUnmarshal: {
		estimate: func(est checker.CostEstimator, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
			// A value parsed from n bytes has at most n items, or n bytes.
			sz := sizeOf(est, args[0])
			return &checker.CallEstimate{CostEstimate: one().Add(sz.MultiplyByCostFactor(jsonCostPerByte)), ResultSize: &sz}
		},
		actual: func(args []ref.Val, _ ref.Val) *uint64 {
			n := length(args[0])
			if n > maxCallSize {
				return total(1) // refused before parsing
			}
			return total(1 + n*jsonCostPerByte)
		},
	},
	overloadJSONMarshal: {
		estimate: func(est checker.CostEstimator, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
			out := checker.SizeEstimate{Min: 1, Max: maxCallSize}
			switch args[0].Type().Kind() {
			case types.BoolKind, types.IntKind, types.UintKind, types.DoubleKind, types.NullTypeKind:
				out.Max = 32
			case types.StringKind:
				// Quoted, each character escaped at worst.
				sz := sizeOf(est, args[0])
				out.Max = min(out.Max, sz.Multiply(checker.SizeEstimate{Min: 6, Max: 6}).Add(checker.SizeEstimate{Min: 2, Max: 2}).Max)
			}
			return &checker.CallEstimate{CostEstimate: one().Add(out.MultiplyByCostFactor(jsonCostPerByte)), ResultSize: &out}
		},
		actual: func(_ []ref.Val, result ref.Val) *uint64 {
			if s, ok := result.(types.String); ok {
				return total(1 + uint64(len(s))*jsonCostPerByte)
			}
			return total(1 + spent(result)*jsonCostPerByte)
		},
	},
	overloadOmit: {
		estimate: func(checker.CostEstimator, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
			return &checker.CallEstimate{CostEstimate: one()}
		},
		actual: func([]ref.Val, ref.Val) *uint64 { return total(1) },
	},
	overloadMerge: {
		estimate: func(est checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
			l, r := sizeOf(est, *target), sizeOf(est, args[0])
			out := checker.SizeEstimate{Min: max(l.Min, r.Min), Max: l.Add(r).Max}
			return &checker.CallEstimate{CostEstimate: one().Add(l.Add(r).AsCost()), ResultSize: &out}
		},
		actual: func(args []ref.Val, _ ref.Val) *uint64 { return total(1 + size(args[0]) + size(args[1])) },
	},
	overloadDeepMerge: {
		estimate: func(est checker.CostEstimator, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
			// Nested maps merge too, and the checker knows only the sizes
			// at the top: at worst, as many entries as deepMerge visits.
			l, r := sizeOf(est, *target), sizeOf(est, args[0])
			out := l.Add(r)
			return &checker.CallEstimate{CostEstimate: one().Add(checker.CostEstimate{Min: 0, Max: maxMergeEntries}), ResultSize: &out}
		},
		actual: func(args []ref.Val, result ref.Val) *uint64 {
			if types.IsError(result) {
				return total(1 + spent(result))
			}
			// The merge does not say what it visited: count it again,
			// without making anything.
			l, lok := args[0].(traits.Mapper)
			r, rok := args[1].(traits.Mapper)
			if !lok || !rok {
				return total(1)
			}
			var n uint64
			_, _ = mergeMaps(l, r, &n, false)
			return total(1 + n)
		},
	},
	overloadSetAtIndex:    listCopy(0),
	overloadInsertAtIndex: listCopy(1),
	overloadRemoveAtIndex: listCopy(0),
}

// listCopy is the cost of a function that copies its list argument,
// growing it by grow items.
func listCopy(grow uint64) cost {
	return cost{
		estimate: func(est checker.CostEstimator, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
			l := sizeOf(est, args[0])
			out := l.Add(checker.SizeEstimate{Min: grow, Max: grow})
			return &checker.CallEstimate{CostEstimate: one().Add(out.AsCost()), ResultSize: &out}
		},
		actual: func(args []ref.Val, _ ref.Val) *uint64 { return total(1 + size(args[0]) + grow) },
	}
}

func one() checker.CostEstimate { return checker.CostEstimate{Min: 1, Max: 1} }

// traversal is what reading a string of size sz costs, as CEL charges it.
func traversal(sz checker.SizeEstimate) checker.CostEstimate {
	return sz.MultiplyByCostFactor(common.StringTraversalCostFactor)
}

func traverse(n uint64) uint64 {
	return uint64(math.Ceil(float64(n) * common.StringTraversalCostFactor))
}

// sizeOf is the size the checker knows of n, or what the estimator says.
func sizeOf(est checker.CostEstimator, n checker.AstNode) checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return *sz
	}
	if sz := est.EstimateSize(n); sz != nil {
		return *sz
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

func intLiteral(n checker.AstNode) (int64, bool) {
	if e := n.Expr(); e != nil && e.Kind() == celast.LiteralKind {
		i, ok := e.AsLiteral().(types.Int)
		return int64(i), ok
	}
	return 0, false
}

func total(c uint64) *uint64 { return &c }

// length is the size in bytes of a string or bytes value; 1 otherwise.
func length(v ref.Val) uint64 {
	switch x := v.(type) {
	case types.String:
		return uint64(len(x))
	case types.Bytes:
		return uint64(len(x))
	}
	return 1
}

// size is the number of items of a list or map; 1 otherwise.
func size(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 1
}

// spentError is the error of a call that did work before it failed, so
// that a failing call in a loop costs what it did.
type spentError struct {
	err   error
	spent uint64
}

func (e *spentError) Error() string { return e.err.Error() }
func (e *spentError) Unwrap() error { return e.err }

func spentErr(spent uint64, err error) ref.Val {
	return types.WrapErr(&spentError{err: err, spent: spent})
}

// spent is the work a failed call did, as its spentError says.
func spent(v ref.Val) uint64 {
	if e, ok := v.(*types.Err); ok {
		var se *spentError
		if errors.As(e, &se) {
			return se.spent
		}
	}
	return 0
}

// alphanumeric is kro's alphabet for random.seededString.
const alphanumeric = "0123456789abcdefghijklmnopqrstuvwxyz"

// seededString is kro's: the i-th character is a 32-bit big-endian word
// of the seed's SHA-256, taken at byte 4i modulo the digest's 32 bytes,
// modulo the alphabet's 36. The string thus repeats every 8 characters;
// kro's names depend on it, so resyncd keeps it.
func seededString(count, seed ref.Val) ref.Val {
	n := int64(count.(types.Int))
	if n <= 0 {
		return types.NewErr("random.seededString: the length is %d; it must be positive", n)
	}
	if uint64(n) > maxCallSize {
		return types.NewErr("random.seededString: the length %d is more than the %d bytes an object can hold", n, maxCallSize)
	}
	sum := sha256.Sum256([]byte(seed.(types.String)))
	out := make([]byte, n)
	for i := range out {
		w := binary.BigEndian.Uint32(sum[i*4%len(sum):])
		out[i] = alphanumeric[w%uint32(len(alphanumeric))]
	}
	return types.String(string(out))
}

// seededInt is kro's: the seed's SHA-256's first 8 bytes, big-endian,
// modulo the size of [min, max), added to min.
func seededInt(args ...ref.Val) ref.Val {
	lo, hi := int64(args[0].(types.Int)), int64(args[1].(types.Int))
	if lo >= hi {
		return types.NewErr("random.seededInt: min %d must be less than max %d", lo, hi)
	}
	sum := sha256.Sum256([]byte(args[2].(types.String)))
	// Unsigned arithmetic: the range of [MinInt64, MaxInt64) fits in a
	// uint64 only.
	span := uint64(hi) - uint64(lo)
	return types.Int(uint64(lo) + binary.BigEndian.Uint64(sum[:8])%span)
}

// jsonUnmarshal parses JSON as kro does: objects as maps, numbers as
// doubles.
func jsonUnmarshal(s ref.Val) ref.Val {
	str := s.(types.String)
	if uint64(len(str)) > maxCallSize {
		return types.NewErr("json.unmarshal: the string is %d bytes, more than the %d an object can hold", len(str), maxCallSize)
	}
	var v any
	if err := json.Unmarshal([]byte(str), &v); err != nil {
		return types.WrapErr(fmt.Errorf("json.unmarshal: %w", err))
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// jsonMarshal writes a value as kro does: keys sorted, null as null,
// bytes in base64, durations and timestamps as the strings Kubernetes
// writes. An item or field set to omit() is left out.
func jsonMarshal(v ref.Val) ref.Val {
	if _, ok := v.(omitVal); ok {
		return types.NewErr("json.marshal: omit() has no JSON form; it leaves a field out")
	}
	var n uint64
	native, err := jsonNative(v, &n)
	if err == nil {
		var b []byte
		if b, err = json.Marshal(native); err == nil {
			return types.String(b)
		}
	}
	return spentErr(n, fmt.Errorf("json.marshal: %w", err))
}

// errTooLarge says a value's JSON would not fit in an object.
var errTooLarge = fmt.Errorf("the JSON is larger than the %d bytes an object can hold", maxCallSize)

// jsonNative converts v to what encoding/json writes, counting in n about
// as many bytes as it will write, and stops past maxCallSize: a list of a
// thousand references to one large object is cheap to make and large to
// write.
func jsonNative(v ref.Val, n *uint64) (any, error) {
	if *n > maxCallSize {
		return nil, errTooLarge
	}
	*n += 2
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		return float64(x), nil
	case types.String:
		*n += uint64(len(x))
		return string(x), nil
	case types.Bytes:
		*n += uint64(len(x)) * 4 / 3
		return []byte(x), nil
	case types.Duration:
		return x.String(), nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339), nil
	case *types.Optional:
		if !x.HasValue() {
			return nil, nil
		}
		return jsonNative(x.GetValue(), n)
	case apiservercel.Quantity:
		return x.String(), nil
	case apiservercel.URL:
		return x.String(), nil
	}
	if l, ok := v.(traits.Lister); ok {
		out := []any{}
		for it := l.Iterator(); it.HasNext() == types.True; {
			e := it.Next()
			if _, skip := e.(omitVal); skip {
				continue
			}
			j, err := jsonNative(e, n)
			if err != nil {
				return nil, err
			}
			out = append(out, j)
		}
		return out, nil
	}
	if m, ok := v.(traits.Mapper); ok {
		out := map[string]any{}
		for it := m.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key is %s %v; JSON keys are strings", k.Type().TypeName(), k.Value())
			}
			e := m.Get(k)
			if _, skip := e.(omitVal); skip {
				continue
			}
			*n += uint64(len(ks)) + 3
			j, err := jsonNative(e, n)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = j
		}
		return out, nil
	}
	if types.IsError(v) {
		return nil, v.(*types.Err)
	}
	return nil, fmt.Errorf("a value of type %s has no JSON form", v.Type().TypeName())
}

// omitVal is what omit() returns: rendered, it leaves its field or list
// item out (see native); it equals nothing and converts to nothing, so
// that any use other than as a value fails.
type omitVal struct{}

var omitType = types.NewOpaqueType("omit")

func (omitVal) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("omit() has no value to convert to %v; it only leaves a field out", t)
}

func (omitVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return omitType
	}
	return types.NewErr("omit() has no value to convert to %s; it only leaves a field out", t.TypeName())
}

func (omitVal) Equal(ref.Val) ref.Val {
	return types.NewErr("omit() cannot be compared; it only leaves a field out")
}

func (omitVal) Type() ref.Type { return omitType }

func (o omitVal) Value() any { return o }

// String names it in messages: "${…} is omit(), not a bool".
func (omitVal) String() string { return "omit()" }

// merge is kro's map.merge: other's entries, and self's whose keys other
// has not.
func merge(self, other ref.Val) ref.Val {
	l, lok := self.(traits.Mapper)
	r, rok := other.(traits.Mapper)
	if !lok || !rok {
		return types.NewErr("no such overload: %s.merge(%s)", self.Type().TypeName(), other.Type().TypeName())
	}
	out := make(map[ref.Val]ref.Val, int(size(l)+size(r)))
	for _, m := range []traits.Mapper{l, r} {
		for it := m.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			out[k] = m.Get(k)
		}
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}

// deepMerge is kro's dyn.deepMerge: as merge, except that where both
// have a map under a key, the two are merged in turn.
func deepMerge(self, other ref.Val) ref.Val {
	l, lok := self.(traits.Mapper)
	r, rok := other.(traits.Mapper)
	if !lok || !rok {
		return types.NewErr("no such overload: %s.deepMerge(%s): both must be maps", self.Type().TypeName(), other.Type().TypeName())
	}
	var n uint64
	out, err := mergeMaps(l, r, &n, true)
	if err != nil {
		return spentErr(n, fmt.Errorf("deepMerge: %w", err))
	}
	return out
}

// maxMergeEntries bounds the entries one deepMerge visits: an entry's
// JSON takes at least 6 bytes ("k":0,) and a merge visits each entry of
// its result at most twice, so a merge of more makes more than an object
// can hold. Maps that share entries can be small to make and large to
// merge.
const maxMergeEntries = maxCallSize / 3

var errTooManyEntries = fmt.Errorf("it would visit more than the %d entries an object can hold", maxMergeEntries)

// mergeMaps merges other into self at every depth, counting in n the
// entries it visits; unless build, it only counts.
func mergeMaps(self, other traits.Mapper, n *uint64, build bool) (ref.Val, error) {
	// An empty side leaves the other as it is, as kro does.
	if other.Size() == types.IntZero {
		return self, nil
	}
	if self.Size() == types.IntZero {
		return other, nil
	}
	*n += size(self) + size(other)
	if *n > maxMergeEntries {
		return nil, errTooManyEntries
	}
	var out map[ref.Val]ref.Val
	if build {
		out = make(map[ref.Val]ref.Val, int(size(self)+size(other)))
		for it := self.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			out[k] = self.Get(k)
		}
	}
	for it := other.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		v := other.Get(k)
		if sv, found := self.Find(k); found {
			sm, ok1 := sv.(traits.Mapper)
			om, ok2 := v.(traits.Mapper)
			if ok1 && ok2 {
				merged, err := mergeMaps(sm, om, n, build)
				if err != nil {
					return nil, err
				}
				v = merged
			}
		}
		if build {
			out[k] = v
		}
	}
	if !build {
		return nil, nil
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out), nil
}

// index checks i against a list of n items; end says i may be n (to
// insert at the end).
func index(fn string, i, n int64, end bool) ref.Val {
	hi, bracket := n, ")"
	if end {
		hi, bracket = n+1, "]"
	}
	if i < 0 || i >= hi {
		return types.NewErr("%s: index %d is out of [0, %d%s", fn, i, n, bracket)
	}
	return nil
}

// items copies the items of l, with room for one more.
func items(l traits.Lister) []ref.Val {
	out := make([]ref.Val, 0, size(l)+1)
	for it := l.Iterator(); it.HasNext() == types.True; {
		out = append(out, it.Next())
	}
	return out
}

func setAtIndex(args ...ref.Val) ref.Val {
	l := items(args[0].(traits.Lister))
	i := int64(args[1].(types.Int))
	if err := index("lists.setAtIndex", i, int64(len(l)), false); err != nil {
		return err
	}
	l[i] = args[2]
	return types.NewRefValList(types.DefaultTypeAdapter, l)
}

func insertAtIndex(args ...ref.Val) ref.Val {
	l := items(args[0].(traits.Lister))
	i := int64(args[1].(types.Int))
	if err := index("lists.insertAtIndex", i, int64(len(l)), true); err != nil {
		return err
	}
	l = append(l[:i], append([]ref.Val{args[2]}, l[i:]...)...)
	return types.NewRefValList(types.DefaultTypeAdapter, l)
}

func removeAtIndex(list, at ref.Val) ref.Val {
	l := items(list.(traits.Lister))
	i := int64(at.(types.Int))
	if err := index("lists.removeAtIndex", i, int64(len(l)), false); err != nil {
		return err
	}
	return types.NewRefValList(types.DefaultTypeAdapter, append(l[:i], l[i+1:]...))
}
