package graph

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/runtime"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// omit is what a value that leaves its field out converts to: null, an
// optional with no value, or omit().
type omit struct{}

// native converts a CEL value to the JSON-like value of an unstructured
// object: quantities in their canonical form, timestamps as RFC 3339.
func native(v ref.Val) (any, error) {
	switch x := v.(type) {
	case types.Null, omitVal:
		return omit{}, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return int64(x), nil
	case types.Double:
		return float64(x), nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return string(x), nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339), nil
	case types.Duration:
		return x.String(), nil
	case *types.Optional:
		if !x.HasValue() {
			return omit{}, nil
		}
		return native(x.GetValue())
	case apiservercel.Quantity:
		return x.String(), nil
	case apiservercel.URL:
		return x.String(), nil
	}
	// A value read from an object as it is: copied, so that the child
	// never shares maps with the parent or a live object.
	switch raw := v.Value().(type) {
	case map[string]any, []any:
		return runtime.DeepCopyJSONValue(raw), nil
	}
	if l, ok := v.(traits.Lister); ok {
		var out []any
		it := l.Iterator()
		for it.HasNext() == types.True {
			e, err := native(it.Next())
			if err != nil {
				return nil, err
			}
			if _, skip := e.(omit); !skip {
				out = append(out, e)
			}
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	}
	if m, ok := v.(traits.Mapper); ok {
		out := map[string]any{}
		it := m.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key is %s %v; object keys are strings", k.Type().TypeName(), k.Value())
			}
			e, err := native(m.Get(k))
			if err != nil {
				return nil, err
			}
			if _, skip := e.(omit); !skip {
				out[string(ks)] = e
			}
		}
		return out, nil
	}
	if types.IsError(v) {
		return nil, v.(*types.Err)
	}
	return nil, fmt.Errorf("a value of type %s (%v) has no place in an object", v.Type().TypeName(), reflect.TypeOf(v.Value()))
}

// text converts a CEL value to the text it stands for inside a longer
// string.
func text(v ref.Val) (string, error) {
	if _, ok := v.(omitVal); ok {
		// As under kro, where the string would be a concatenation.
		return "", errors.New("omit() leaves a whole field out; it cannot be part of a string")
	}
	n, err := native(v)
	if err != nil {
		return "", err
	}
	switch x := n.(type) {
	case string:
		return x, nil
	case int64, float64, bool:
		return fmt.Sprint(x), nil
	case omit:
		return "", nil
	}
	return "", fmt.Errorf("a %s cannot be part of a string; only strings, numbers and booleans can", v.Type().TypeName())
}
