package graph

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types/ref"
	"github.com/google/go-cmp/cmp"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/resyncd/resyncd/desired"
)

// evalKro compiles src in a graph's environment, with an untyped parent,
// and evaluates it against parent within budget.
func evalKro(t *testing.T, src string, parent map[string]any, budget uint64) (ref.Val, error) {
	t.Helper()
	e, err := env([]string{ParentVar}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, iss := e.Compile(src)
	if iss.Err() != nil {
		t.Fatalf("${%s}: %v", src, iss.Err())
	}
	prg, err := e.Program(a, programOptions(budget)...)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(map[string]any{ParentVar: parent})
	return out, err
}

// TestKroFunctions: each function gives kro's answer. The seeded values
// were computed apart, from kro's algorithm: SHA-256 of the seed, 4 bytes
// big-endian per character from byte 4i mod 32, mod 36 into 0-9a-z.
func TestKroFunctions(t *testing.T) {
	tests := []struct {
		src     string
		want    any
		wantErr string
	}{
		{src: `random.seededString(10, 'u-1')`, want: "d5h7y2bqd5"},
		{src: `random.seededString(5, 'hello')`, want: "imeyo"},
		{src: `random.seededString(1, '')`, want: "e"},
		// kro's string repeats every 8 characters.
		{src: `random.seededString(20, '3f2a7b9c-1d4e-4f6a-8b2c-9e0d1f3a5b7c')`, want: "2qmtdxei2qmtdxei2qmt"},
		{src: `random.seededString(10, 'u-1') == random.seededString(10, 'u-1')`, want: true},
		{src: `random.seededString(0, 'u-1')`, wantErr: "the length is 0; it must be positive"},
		{src: `random.seededString(-1, 'u-1')`, wantErr: "the length is -1; it must be positive"},
		{src: `random.seededString(4194304, 'u-1')`, wantErr: "the length 4194304 is more than the 3145728 bytes an object can hold"},
		{src: `random.seededInt(30000, 32768, 'u-1')`, want: int64(31033)},
		{src: `random.seededInt(0, 10, 'hello')`, want: int64(2)},
		{src: `random.seededInt(-5, 5, '')`, want: int64(-3)},
		{src: `random.seededInt(-9223372036854775808, 9223372036854775807, 'u-1')`, want: int64(2470927352683093321)},
		{src: `random.seededInt(5, 5, 'u-1')`, wantErr: "min 5 must be less than max 5"},

		{src: `json.unmarshal('{"name": "test", "count": 42}')`, want: map[string]any{"name": "test", "count": float64(42)}},
		{src: `json.unmarshal('[1, "a", true]')`, want: []any{float64(1), "a", true}},
		{src: `json.unmarshal('{"a": {"b": ["x", "y"]}}').a.b[1]`, want: "y"},
		{src: `json.unmarshal('{"a": {"b": ["x", "y"]}}').?a.?c.orValue('none')`, want: "none"},
		// Numbers are doubles, as under kro.
		{src: `type(json.unmarshal('3')) == double && json.unmarshal('3') == 3`, want: true},
		{src: `json.unmarshal('null') == null`, want: true},
		{src: `json.unmarshal('{"a"}')`, wantErr: "json.unmarshal: invalid character '}' after object key"},
		{src: `json.unmarshal('')`, wantErr: "json.unmarshal: unexpected end of JSON input"},

		{src: `json.marshal({'name': 'test', 'count': 42})`, want: `{"count":42,"name":"test"}`},
		{src: `json.marshal([1, 2.5, 'a', true, null])`, want: `[1,2.5,"a",true,null]`},
		{src: `json.marshal('<a&b>')`, want: `"\u003ca\u0026b\u003e"`},
		{src: `json.marshal(b'hello')`, want: `"aGVsbG8="`},
		{src: `json.marshal(18446744073709551615u)`, want: `18446744073709551615`},
		{src: `json.marshal({'d': duration('90s'), 't': timestamp('2024-05-01T10:00:00+02:00')})`, want: `{"d":"1m30s","t":"2024-05-01T08:00:00Z"}`},
		{src: `json.marshal({'none': optional.none(), 'some': optional.of(1)})`, want: `{"none":null,"some":1}`},
		{src: `json.marshal({'q': quantity('0.1')})`, want: `{"q":"100m"}`},
		{src: `json.marshal(json.unmarshal('{"b": [1, {"c": null}], "a": 1.5}'))`, want: `{"a":1.5,"b":[1,{"c":null}]}`},
		{src: `json.marshal(schema.spec)`, want: `{"n":3,"s":"x"}`},
		// omit() leaves out what it fills, as in a template.
		{src: `json.marshal({'a': 1, 'b': omit(), 'c': [1, omit(), 2]})`, want: `{"a":1,"c":[1,2]}`},
		{src: `json.marshal(omit())`, wantErr: "omit() has no JSON form"},
		{src: `json.marshal({1: 'a'})`, wantErr: "a map key is int 1; JSON keys are strings"},
		{src: `json.marshal(1.0 / 0.0)`, wantErr: "json.marshal: json: unsupported value: +Inf"},

		{src: `omit() == omit()`, wantErr: "omit() cannot be compared"},
		{src: `omit() + 1`, wantErr: "no such overload"},
		{src: `string(omit())`, wantErr: "no such overload"},
		{src: `true ? omit() : 1`, want: omit{}},
		{src: `[1, omit(), 2]`, want: []any{int64(1), int64(2)}},
		{src: `{'a': omit(), 'b': 1}`, want: map[string]any{"b": int64(1)}},

		{src: `{'a': 1}.merge({'a': 2, 'b': 2})`, want: map[string]any{"a": int64(2), "b": int64(2)}},
		{src: `{}.merge({'a': 'x'})`, want: map[string]any{"a": "x"}},
		{src: `{'a': {'x': 1}}.merge({'a': {'y': 2}})`, want: map[string]any{"a": map[string]any{"y": int64(2)}}},
		{src: `{'app': 'shop'}.merge(schema.spec)`, want: map[string]any{"app": "shop", "n": int64(3), "s": "x"}},
		{src: `{'a': {'x': 1, 'l': [1]}}.deepMerge({'a': {'y': 2, 'l': [2]}, 'b': 3})`,
			want: map[string]any{"a": map[string]any{"x": int64(1), "y": int64(2), "l": []any{int64(2)}}, "b": int64(3)}},
		{src: `{'a': {'x': 1}}.deepMerge({'a': 'flat'})`, want: map[string]any{"a": "flat"}},
		{src: `{}.deepMerge({'a': 1})`, want: map[string]any{"a": int64(1)}},
		{src: `{'a': 1}.deepMerge({})`, want: map[string]any{"a": int64(1)}},
		{src: `{'a': 1}.deepMerge([1])`, wantErr: "no such overload: map.deepMerge(list): both must be maps"},

		{src: `lists.setAtIndex([1, 2, 3], 1, 99)`, want: []any{int64(1), int64(99), int64(3)}},
		{src: `lists.setAtIndex([1, 2, 3], 3, 99)`, wantErr: "lists.setAtIndex: index 3 is out of [0, 3)"},
		{src: `lists.insertAtIndex([1, 2, 3], 0, 99)`, want: []any{int64(99), int64(1), int64(2), int64(3)}},
		{src: `lists.insertAtIndex([1, 2, 3], 3, 99)`, want: []any{int64(1), int64(2), int64(3), int64(99)}},
		{src: `lists.insertAtIndex([], 0, 'a')`, want: []any{"a"}},
		{src: `lists.insertAtIndex([1], 2, 99)`, wantErr: "lists.insertAtIndex: index 2 is out of [0, 1]"},
		{src: `lists.removeAtIndex([1, 2, 3], 1)`, want: []any{int64(1), int64(3)}},
		{src: `lists.removeAtIndex([1, 2, 3], -1)`, wantErr: "lists.removeAtIndex: index -1 is out of [0, 3)"},
		{src: `lists.removeAtIndex([], 0)`, wantErr: "lists.removeAtIndex: index 0 is out of [0, 0)"},
		{src: `lists.setAtIndex(lists.setAtIndex(['a', 'b'], 0, 'b'), 1, 'a')`, want: []any{"b", "a"}},

		{src: `base64.encode(hash.md5('hello world'))`, want: "XrY7u+Ae7tCTyyK7j1rNww=="},
	}
	parent := map[string]any{"spec": map[string]any{"s": "x", "n": int64(3)}}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			out, err := evalKro(t, tt.src, parent, DefaultCostBudget)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want an error with %q", out, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := native(out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// typedParent is a parent type with a bounded and an unbounded string,
// a map of strings and a list of strings.
func typedParent() *apiservercel.DeclType {
	str := func(maxLength int64) spec.Schema {
		s := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
		if maxLength > 0 {
			s.MaxLength = &maxLength
		}
		return s
	}
	maxItems := int64(1000)
	s := &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
		"spec": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
			"name":     str(63),
			"blob":     str(0),
			"replicas": {SchemaProps: spec.SchemaProps{Type: []string{"integer"}}},
			"labels": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, AdditionalProperties: &spec.SchemaOrBool{
				Allows: true, Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}}},
			"tags": {SchemaProps: spec.SchemaProps{Type: []string{"array"}, MaxItems: &maxItems,
				Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, MaxLength: ptr(int64(63))}}}}},
		}}},
	}}}
	return openapi.SchemaDeclType(s, true).MaybeAssignTypeName("__parent__")
}

func ptr[T any](v T) *T { return &v }

// typedCompiler compiles against typedParent, estimating costs as a
// graph loaded with schemas does.
func typedCompiler(t *testing.T) *compiler {
	t.Helper()
	types := map[string]*apiservercel.DeclType{ParentVar: typedParent()}
	e, err := env([]string{ParentVar}, types)
	if err != nil {
		t.Fatal(err)
	}
	return &compiler{env: e, types: types, maxEstimate: DefaultMaxEstimatedCost, budget: DefaultCostBudget, ps: &problems{}}
}

// TestKroFunctionTypes: the checker accepts each function with the types
// kro declares and rejects other arguments when the graph is loaded.
func TestKroFunctionTypes(t *testing.T) {
	tests := []struct {
		src     string
		want    string // the output type, or the error
		wantErr bool
	}{
		{src: `random.seededString(8, schema.spec.name)`, want: "string"},
		{src: `random.seededString('8', schema.spec.name)`, want: "found no matching overload for 'random.seededString' applied to '(string, string)'", wantErr: true},
		{src: `random.seededString(8, schema.spec.replicas)`, want: "found no matching overload for 'random.seededString' applied to '(int, int)'", wantErr: true},
		{src: `random.seededInt(1, 10, schema.spec.name)`, want: "int"},
		{src: `random.seededInt(1, 10)`, want: "found no matching overload for 'random.seededInt' applied to '(int, int)'", wantErr: true},
		{src: `json.unmarshal(schema.spec.blob)`, want: "dyn"},
		{src: `json.unmarshal(schema.spec.replicas)`, want: "found no matching overload for 'json.unmarshal' applied to '(int)'", wantErr: true},
		{src: `json.marshal(schema.spec)`, want: "string"},
		{src: `omit()`, want: "dyn"},
		{src: `omit(1)`, want: "found no matching overload for 'omit' applied to '(int)'", wantErr: true},
		{src: `has(schema.spec.replicas) ? schema.spec.replicas : omit()`, want: "dyn"},
		{src: `schema.spec.labels.merge({'app': 'shop'})`, want: "map(string, string)"},
		{src: `schema.spec.labels.merge({'replicas': 1})`, want: "found no matching overload for 'merge' applied to 'map(string, string).(map(string, int))'", wantErr: true},
		{src: `schema.spec.labels.merge(schema.spec.tags)`, want: "found no matching overload for 'merge' applied to 'map(string, string).(list(string))'", wantErr: true},
		{src: `schema.spec.deepMerge({'replicas': 1})`, want: "dyn"},
		{src: `lists.setAtIndex(schema.spec.tags, 0, 'a')`, want: "list(string)"},
		{src: `lists.setAtIndex(schema.spec.tags, 0, 1)`, want: "found no matching overload for 'lists.setAtIndex' applied to '(list(string), int, int)'", wantErr: true},
		{src: `lists.insertAtIndex(schema.spec.tags, 0, 'a')`, want: "list(string)"},
		{src: `lists.removeAtIndex(schema.spec.tags, 'a')`, want: "found no matching overload for 'lists.removeAtIndex' applied to '(list(string), string)'", wantErr: true},
		{src: `hash.md5(schema.spec.name)`, want: "bytes"},
		{src: `hash.md5(schema.spec.replicas)`, want: "found no matching overload for 'hash.md5' applied to '(int)'", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			c := typedCompiler(t)
			e := &expr{src: tt.src, where: "test"}
			ok := c.compile(e)
			if tt.wantErr {
				if ok || len(c.ps.list) != 1 || !strings.Contains(c.ps.list[0].text, tt.want) {
					t.Fatalf("problems %v; want one with %q", c.ps.list, tt.want)
				}
				return
			}
			if !ok {
				t.Fatalf("problems %v", c.ps.list)
			}
			if got := e.ast.OutputType().String(); got != tt.want {
				t.Errorf("type %s, want %s", got, tt.want)
			}
		})
	}
}

// TestKroFunctionEstimates: each function's estimated cost grows with
// what it reads, so a graph whose worst case is over the limit is refused
// when it is loaded, and one within it is not.
func TestKroFunctionEstimates(t *testing.T) {
	tests := []struct {
		src  string
		over bool
	}{
		// 1,000 tags of at most 63 bytes.
		{src: `schema.spec.tags.map(t, json.unmarshal(t))`},
		{src: `schema.spec.tags.map(t, random.seededString(63, t))`},
		// The blob has no maxLength: up to what a request holds, 1,000 times.
		{src: `schema.spec.tags.map(t, json.unmarshal(schema.spec.blob))`, over: true},
		{src: `schema.spec.tags.map(t, json.marshal(schema.spec.blob))`, over: true},
		{src: `schema.spec.tags.map(t, json.marshal(schema.spec))`, over: true},
		{src: `schema.spec.tags.map(t, random.seededString(schema.spec.replicas, t))`, over: true},
		{src: `schema.spec.tags.map(t, random.seededInt(0, 10, schema.spec.blob))`, over: true},
		{src: `schema.spec.tags.map(t, hash.sha256(schema.spec.blob))`, over: true},
		{src: `schema.spec.tags.map(t, schema.spec.deepMerge({'a': t}))`, over: true},
		{src: `schema.spec.tags.map(t, json.unmarshal(schema.spec.blob).merge({'a': t}))`, over: true},
		{src: `schema.spec.tags.map(t, lists.setAtIndex(json.unmarshal(schema.spec.blob), 0, t))`, over: true},
		{src: `schema.spec.tags.map(t, lists.setAtIndex(schema.spec.tags, 0, t))`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			c := typedCompiler(t)
			e := &expr{src: tt.src, where: "test"}
			ok := c.compile(e)
			if tt.over {
				if ok || len(c.ps.list) != 1 || !strings.Contains(c.ps.list[0].text, "exceeds the limit of 100000000") {
					t.Fatalf("estimate %d, problems %v; want it over the limit", e.estimate.Max, c.ps.list)
				}
				return
			}
			if !ok {
				t.Fatalf("problems %v", c.ps.list)
			}
		})
	}
}

// TestKroFunctionCosts: a function called on large values in a loop
// spends the parent's budget and stops with CostExceeded; the same
// expression on small values renders. Each call also stops by itself
// short of making more than an object can hold.
func TestKroFunctionCosts(t *testing.T) {
	mb := strings.Repeat("a", 1<<20)
	big := map[string]any{}
	for i := range 2000 {
		big[fmt.Sprint("k", i)] = "v"
	}
	list := make([]any, 10000)
	for i := range list {
		list[i] = int64(i)
	}
	tests := []struct {
		src string
		// spec is the parent's spec when the expression must exceed the
		// budget; small one where it must not.
		spec, small map[string]any
	}{
		{src: `lists.range(20).map(i, json.unmarshal(schema.spec.s)).size()`,
			spec: map[string]any{"s": `"` + mb + `"`}, small: map[string]any{"s": `"a"`}},
		{src: `lists.range(20).map(i, json.marshal(schema.spec.s)).size()`,
			spec: map[string]any{"s": mb}, small: map[string]any{"s": "a"}},
		// A list of references to one large string: cheap to make, 10 GB of JSON.
		{src: `json.marshal(lists.range(10000).map(i, schema.spec.s))`,
			spec: map[string]any{"s": mb}, small: map[string]any{"s": "a"}},
		{src: `lists.range(100).map(i, random.seededString(schema.spec.n, 'seed')).size()`,
			spec: map[string]any{"n": int64(1 << 20)}, small: map[string]any{"n": int64(10)}},
		{src: `lists.range(100).map(i, random.seededInt(0, 10, schema.spec.s)).size()`,
			spec: map[string]any{"s": mb}, small: map[string]any{"s": "a"}},
		{src: `lists.range(100).map(i, hash.sha256(schema.spec.s)).size()`,
			spec: map[string]any{"s": mb}, small: map[string]any{"s": "a"}},
		{src: `lists.range(1000).map(i, schema.spec.m.merge({'x': 'y'})).size()`,
			spec: map[string]any{"m": big}, small: map[string]any{"m": map[string]any{"a": "b"}}},
		{src: `lists.range(1000).map(i, schema.spec.m.deepMerge({'x': 'y'})).size()`,
			spec: map[string]any{"m": big}, small: map[string]any{"m": map[string]any{"a": "b"}}},
		// 1,000 keys all naming one map of 2,000: 4 million entries to merge.
		{src: `lists.range(1000).transformMap(i, v, schema.spec.m).deepMerge(lists.range(1000).transformMap(i, v, schema.spec.m)).size()`,
			spec: map[string]any{"m": big}, small: map[string]any{"m": map[string]any{"a": "b"}}},
		{src: `lists.range(1000).map(i, lists.setAtIndex(schema.spec.l, 0, i)).size()`,
			spec: map[string]any{"l": list}, small: map[string]any{"l": []any{int64(1)}}},
		{src: `lists.range(1000).map(i, lists.insertAtIndex(schema.spec.l, 0, i)).size()`,
			spec: map[string]any{"l": list}, small: map[string]any{"l": []any{int64(1)}}},
		{src: `lists.range(1000).map(i, lists.removeAtIndex(schema.spec.l, 0)).size()`,
			spec: map[string]any{"l": list}, small: map[string]any{"l": []any{int64(1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			graph := []byte(`apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: cost}
spec:
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data:
          out: "${string(` + tt.src + `)}"
`)
			r, err := Parse("cost.yaml", graph, Options{})
			if err != nil {
				t.Fatal(err)
			}
			parent := webApp(t, `{}`)
			parent.Object["spec"] = tt.small
			if _, err := r.Render(parent, nil); err != nil {
				t.Fatalf("small values: %v", err)
			}
			parent.Object["spec"] = tt.spec
			_, err = r.Render(parent, nil)
			var ie *desired.InvalidError
			if !errors.As(err, &ie) || ie.Reason != ReasonCostExceeded {
				t.Fatalf("got %v, want CostExceeded", err)
			}
		})
	}
}

// TestKroFunctionLimits: a call that would read or make more than an
// object can hold fails by itself, before making it.
func TestKroFunctionLimits(t *testing.T) {
	big := map[string]any{}
	for i := range 2000 {
		big[fmt.Sprint("k", i)] = "v"
	}
	tests := []struct {
		src     string
		spec    map[string]any
		wantErr string
	}{
		{src: `json.unmarshal(schema.spec.s)`, spec: map[string]any{"s": strings.Repeat(" ", 3<<20+1) + "1"},
			wantErr: "json.unmarshal: the string is 3145730 bytes, more than the 3145728 an object can hold"},
		{src: `json.marshal(lists.range(4).map(i, schema.spec.s))`, spec: map[string]any{"s": strings.Repeat("a", 1<<20)},
			wantErr: "json.marshal: the JSON is larger than the 3145728 bytes an object can hold"},
		// 1,000 keys all naming one map of 2,000 entries.
		{src: `lists.range(1000).transformMap(i, v, schema.spec.m).deepMerge(lists.range(1000).transformMap(i, v, schema.spec.m))`,
			spec: map[string]any{"m": big}, wantErr: "deepMerge: it would visit more than the 1048576 entries an object can hold"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			// A budget no call reaches: the function stops by itself.
			out, err := evalKro(t, tt.src, map[string]any{"spec": tt.spec}, 1<<62)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("got %v, %v; want %q", out, err, tt.wantErr)
			}
		})
	}
}

// TestKroFunctionsGraph renders testdata/graphs/kro-functions.yaml
// offline: names seeded by the parent's uid as kro gives them, JSON
// parsed, merged and written, and the fields omit() leaves out.
func TestKroFunctionsGraph(t *testing.T) {
	r := load(t, "../../testdata/graphs/kro-functions.yaml", Options{})
	parent := func(uid, spec string) *desired.Graph {
		p := decode(t, []byte(`{"apiVersion": "example.resyncd.io/v1alpha1", "kind": "App",
			"metadata": {"name": "shop", "namespace": "team", "uid": "`+uid+`"}, "spec": `+spec+`}`))
		g, err := r.Render(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &g
	}
	full := parent("6b1c5c2e-8f5a-4c1e-9d3b-0a7e2f4c6d81", `{"image": "shop:1", "replicas": 3, "node": "n1", "debug": true,
		"labels": {"tier": "web", "app": "mine"}, "args": ["--v=2"], "settings": "{\"log\": {\"level\": \"debug\"}, \"workers\": 4}"}`)
	minimal := parent("0f4a8d2c-3b6e-4a19-8c5d-7e2f1a9b3c64", `{"image": "shop:1", "settings": "{}"}`)

	want := []map[string]any{
		{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "shop-dsn72w", "namespace": "team"},
			"spec": map[string]any{"selector": map[string]any{"app": "shop"},
				"ports": []any{map[string]any{"port": int64(80), "targetPort": int64(30676)}}}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "shop-config", "namespace": "team",
			"annotations": map[string]any{"example.resyncd.io/settings-hash": "ods3vVibyBZgJeqma0189g=="}},
			"data": map[string]any{
				"settings.json": `{"log":{"format":"json","level":"debug"},"workers":4}`,
				"labels.json":   `{"app":"mine","tier":"web"}`}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "shop", "namespace": "team",
			"labels": map[string]any{"app": "mine", "tier": "web"}},
			"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "shop"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "shop"}},
					"spec": map[string]any{"nodeSelector": map[string]any{"kubernetes.io/hostname": "n1"},
						"containers": []any{map[string]any{"name": "app", "image": "shop:1",
							"args": []any{"--config=/etc/app/settings.json", "--v=2"},
							"env":  []any{map[string]any{"name": "WORKERS", "value": "4"}, map[string]any{"name": "DEBUG", "value": "1"}}}}}}}},
	}
	if diff := cmp.Diff(want, objects(*full)); diff != "" {
		t.Errorf("full parent (-want +got):\n%s", diff)
	}
	want = []map[string]any{
		{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "shop-jw1nd8", "namespace": "team"},
			"spec": map[string]any{"selector": map[string]any{"app": "shop"},
				"ports": []any{map[string]any{"port": int64(80), "targetPort": int64(31148)}}}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "shop-config", "namespace": "team",
			"annotations": map[string]any{"example.resyncd.io/settings-hash": "mZFLkyvTelC5g8XnyQrpOw=="}},
			"data": map[string]any{
				"settings.json": `{"log":{"format":"json","level":"info"},"workers":2}`,
				"labels.json":   `{"app":"shop"}`}},
		// No replicas, no nodeSelector, no DEBUG: omit() left them out.
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "shop", "namespace": "team",
			"labels": map[string]any{"app": "shop"}},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "shop"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "shop"}},
					"spec": map[string]any{
						"containers": []any{map[string]any{"name": "app", "image": "shop:1",
							"args": []any{"--config=/etc/app/settings.json"},
							"env":  []any{map[string]any{"name": "WORKERS", "value": "2"}}}}}}}},
	}
	if diff := cmp.Diff(want, objects(*minimal)); diff != "" {
		t.Errorf("minimal parent (-want +got):\n%s", diff)
	}
}

// TestOmitWhereItHasNoPlace: omit() inside a longer string, or where a
// bool is needed, stalls the parent, naming the expression; where null
// or optional.none() would leave a field out, so does omit().
func TestOmitWhereItHasNoPlace(t *testing.T) {
	graph := func(field string) []byte {
		return []byte(`apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: omit}
spec:
  resources:
    - id: config
      ` + field + `
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data:
          a: "${schema.spec.?a.orValue('') != '' ? schema.spec.a : omit()}"
          b: "${schema.spec.?b.orValue('') != '' ? schema.spec.b : null}"
          c: "${schema.spec.?c.orValue('') != '' ? optional.of(schema.spec.c) : optional.none()}"
          text: "x-${schema.spec.?t.orValue('') != '' ? schema.spec.t : omit()}"
`)
	}
	tests := []struct {
		name, field, spec string
		want              map[string]any
		wantErr           string
	}{
		{name: "all set", spec: `{"a": "1", "b": "2", "c": "3", "t": "4"}`,
			want: map[string]any{"a": "1", "b": "2", "c": "3", "text": "x-4"}},
		{name: "text needs its value", spec: `{}`,
			wantErr: `resources[config].template.data.text: ${schema.spec.?t.orValue('') != '' ? schema.spec.t : omit()}: omit() leaves a whole field out; it cannot be part of a string`},
		{name: "omit, null and none alike", spec: `{"t": "4"}`,
			want: map[string]any{"text": "x-4"}},
		{name: "includeWhen needs a bool", field: `includeWhen: ["${schema.spec.?t.orValue('') != '' ? true : omit()}"]`, spec: `{}`,
			wantErr: `resources[config].includeWhen[0]: ${schema.spec.?t.orValue('') != '' ? true : omit()} is omit(), not a bool`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse("omit.yaml", graph(tt.field), Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := r.Render(webApp(t, tt.spec), nil)
			if tt.wantErr != "" {
				var ie *desired.InvalidError
				if !errors.As(err, &ie) || ie.Error() != tt.wantErr {
					t.Fatalf("got %v; want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, g.Children[0].Object["data"]); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOmitInStatusAndReadiness: a status field set to omit() is left
// out, as one set to null; a readyWhen that gives omit() does not hold.
func TestOmitInStatusAndReadiness(t *testing.T) {
	r, err := Parse("omit.yaml", []byte(`apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: omit}
spec:
  resources:
    - id: config
      readyWhen: ["${has(config.data) ? true : omit()}"]
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
  status:
    kept: ${schema.metadata.name}
    omitted: ${omit()}
    nulled: ${null}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	parent := webApp(t, `{}`)
	cm := desired.Child{Kind: "ConfigMap", Name: "shop", Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "shop"}}}
	st, err := r.Status(parent, desired.Observation{Children: []desired.Child{cm}})
	if err != nil || st.Failure != nil {
		t.Fatalf("failure %v, err %v", st.Failure, err)
	}
	if diff := cmp.Diff(map[string]any{"kept": "shop"}, st.Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	want := desired.Readiness{Reason: "ConfigNotReady",
		Message: "ConfigMap team/shop: readyWhen ${has(config.data) ? true : omit()} is omit()"}
	if diff := cmp.Diff(want, st.Readiness); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
}
