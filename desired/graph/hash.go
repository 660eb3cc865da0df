package graph

import (
	"crypto/sha256"
	"hash/fnv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// hashes declares the hash functions kro's graphs use to name content:
// hash.fnv64a(string) and hash.sha256(string), each giving bytes, which
// base64.encode turns into text.
func hashes() cel.EnvOption {
	return cel.Lib(hashLib{})
}

type hashLib struct{}

func (hashLib) LibraryName() string { return "resyncd.io/hash" }

func (hashLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("hash.fnv64a", cel.Overload("hash_fnv64a_string", []*cel.Type{cel.StringType}, cel.BytesType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				h := fnv.New64a()
				_, _ = h.Write([]byte(v.(types.String)))
				return types.Bytes(h.Sum(nil))
			}))),
		cel.Function("hash.sha256", cel.Overload("hash_sha256_string", []*cel.Type{cel.StringType}, cel.BytesType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				sum := sha256.Sum256([]byte(v.(types.String)))
				return types.Bytes(sum[:])
			}))),
	}
}

func (hashLib) ProgramOptions() []cel.ProgramOption { return nil }
