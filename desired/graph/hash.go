package graph

import (
	"crypto/md5"
	"crypto/sha256"
	"hash/fnv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// hashes declares the hash functions kro's graphs use to name content:
// hash.fnv64a(string), hash.sha256(string) and hash.md5(string), each
// giving bytes, which base64.encode turns into text. Each costs what
// reading its string costs.
func hashes() cel.EnvOption {
	return cel.Lib(hashLib{})
}

type hashLib struct{}

func (hashLib) LibraryName() string { return "resyncd.io/hash" }

// hashOverloads are the overload ids, which their costs are keyed by.
var hashOverloads = []string{"hash_fnv64a_string", "hash_sha256_string", "hash_md5_string"}

func (hashLib) CompileOptions() []cel.EnvOption {
	var estimates []checker.CostOption
	for _, id := range hashOverloads {
		estimates = append(estimates, checker.OverloadCostEstimate(id,
			func(est checker.CostEstimator, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
				return &checker.CallEstimate{CostEstimate: one().Add(traversal(sizeOf(est, args[0])))}
			}))
	}
	return []cel.EnvOption{
		cel.Function("hash.fnv64a", cel.Overload(hashOverloads[0], []*cel.Type{cel.StringType}, cel.BytesType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				h := fnv.New64a()
				_, _ = h.Write([]byte(v.(types.String)))
				return types.Bytes(h.Sum(nil))
			}))),
		cel.Function("hash.sha256", cel.Overload(hashOverloads[1], []*cel.Type{cel.StringType}, cel.BytesType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				sum := sha256.Sum256([]byte(v.(types.String)))
				return types.Bytes(sum[:])
			}))),
		cel.Function("hash.md5", cel.Overload(hashOverloads[2], []*cel.Type{cel.StringType}, cel.BytesType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				// Not for security: kro offers it to name content.
				sum := md5.Sum([]byte(v.(types.String)))
				return types.Bytes(sum[:])
			}))),
		cel.CostEstimatorOptions(estimates...),
	}
}

func (hashLib) ProgramOptions() []cel.ProgramOption {
	var trackers []interpreter.CostTrackerOption
	for _, id := range hashOverloads {
		trackers = append(trackers, interpreter.OverloadCostTracker(id,
			func(args []ref.Val, _ ref.Val) *uint64 { return total(1 + traverse(length(args[0]))) }))
	}
	return []cel.ProgramOption{cel.CostTrackerOptions(trackers...)}
}
