package graph

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/desired"
)

// TestHTTPServiceGraph renders the golden HttpServices and 1,000 generated
// ones with the built-in renderer and with testdata/graphs/httpservice.yaml
// and finds the children equal.
func TestHTTPServiceGraph(t *testing.T) {
	g, err := Load("../../testdata/graphs/httpservice.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	parents := goldenParents(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		parents = append(parents, generateHTTPService(rng, i))
	}
	autoscaled := 0
	for _, p := range parents {
		want, err := desired.HTTPService{}.Render(p, nil)
		if err != nil {
			t.Fatalf("%s: the built-in renderer refuses a generated parent: %v", p.GetName(), err)
		}
		got, err := g.Render(p, nil)
		if err != nil {
			t.Fatalf("%s: %v", p.GetName(), err)
		}
		if len(want.Children) == 3 {
			autoscaled++
		}
		if diff := cmp.Diff(objects(want), objects(got)); diff != "" {
			spec, _ := yaml.Marshal(p.Object["spec"])
			t.Fatalf("%s: children differ (-built-in +graph):\n%s\nspec:\n%s", p.GetName(), diff, spec)
		}
	}
	if autoscaled == 0 || autoscaled == len(parents) {
		t.Errorf("%d of %d parents autoscaled: the generator covers one branch only", autoscaled, len(parents))
	}
}

func objects(g desired.Graph) []map[string]any {
	var out []map[string]any
	for _, c := range g.Children {
		out = append(out, c.Object)
	}
	return out
}

func goldenParents(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	inputs, err := filepath.Glob("../../testdata/render/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, decode(t, data))
	}
	return out
}

// generateHTTPService makes a valid HttpService with every optional field
// present or absent at random, as the API server would store it (ints as
// int64).
func generateHTTPService(rng *rand.Rand, i int) *unstructured.Unstructured {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	spec := map[string]any{
		"image": fmt.Sprintf("ghcr.io/acme/app-%d:1.%d", i, rng.IntN(20)),
		"port":  int64(1 + rng.IntN(65535)),
	}
	if rng.IntN(2) == 0 {
		spec["replicas"] = int64(rng.IntN(11))
	}
	if n := rng.IntN(4); n > 0 || rng.IntN(4) == 0 {
		env := []any{}
		for j := range n {
			e := map[string]any{"name": fmt.Sprintf("VAR_%d", j)}
			switch rng.IntN(3) {
			case 0:
				e["value"] = pick("a", "prod", "x y")
			case 1:
				e["value"] = ""
			}
			env = append(env, e)
		}
		spec["env"] = env
	}
	quantity := func(kind string) any {
		if kind == "cpu" {
			if rng.IntN(4) == 0 {
				return int64(1 + rng.IntN(3))
			}
			return pick("0.1", "100m", "250m", "1", "1.5", "2000m")
		}
		return pick("64Mi", "128Mi", "1Gi", "500M", "1e9", "134217728")
	}
	autoscale := rng.IntN(3) == 0
	if autoscale || rng.IntN(2) == 0 {
		res := map[string]any{}
		requests, limits := map[string]any{}, map[string]any{}
		if autoscale || rng.IntN(2) == 0 {
			requests["cpu"] = quantity("cpu")
		}
		if rng.IntN(2) == 0 {
			requests["memory"] = quantity("memory")
		}
		if rng.IntN(2) == 0 {
			limits["memory"] = quantity("memory")
		}
		if len(requests) > 0 || rng.IntN(3) == 0 {
			res["requests"] = requests
		}
		if len(limits) > 0 || rng.IntN(3) == 0 {
			res["limits"] = limits
		}
		spec["resources"] = res
	}
	if rng.IntN(2) == 0 {
		spec["healthCheck"] = map[string]any{"path": pick("/", "/healthz", "/ready")}
	}
	if rng.IntN(2) == 0 {
		svc := map[string]any{}
		if rng.IntN(2) == 0 {
			svc["type"] = pick("ClusterIP", "NodePort", "LoadBalancer")
		}
		if rng.IntN(2) == 0 {
			svc["port"] = int64(1 + rng.IntN(65535))
		}
		spec["service"] = svc
	}
	if autoscale {
		a := map[string]any{"maxReplicas": int64(2 + rng.IntN(20))}
		if rng.IntN(2) == 0 {
			a["minReplicas"] = int64(1 + rng.IntN(2))
		}
		if rng.IntN(2) == 0 {
			a["targetCPUUtilizationPercentage"] = int64(1 + rng.IntN(100))
		}
		spec["autoscaling"] = a
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resyncd.io/v1alpha1",
		"kind":       "HttpService",
		"metadata": map[string]any{
			"name": fmt.Sprintf("app-%d", i), "namespace": pick("shop", "blog", "default"),
			"uid": fmt.Sprintf("00000000-0000-4000-8000-%012d", i), "generation": int64(1),
		},
		"spec": spec,
	}}
}

// decode reads a YAML object as the API server's JSON gives it: integers
// as int64.
func decode(t testing.TB, data []byte) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}
