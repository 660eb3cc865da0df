package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/s2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestJobPack: a job holds its parent packed from the end of its plan
// until it runs, and gets back the parent it was planned with, numbers as
// the API server's answer decodes them; a packed job is still a parent's,
// not the orphans'.
func TestJobPack(t *testing.T) {
	t.Parallel()
	object := func() map[string]any {
		return map[string]any{
			"apiVersion": "resyncd.io/v1alpha1", "kind": "HttpService",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "42", "generation": int64(3),
				"labels": map[string]any{"team": "a\"b<c>&"}},
			"spec": map[string]any{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2), "weight": 0.5, "enabled": true,
				"env": []any{map[string]any{"name": "A", "value": "é\n"}}, "none": nil, "empty": map[string]any{}, "list": []any{}},
			"status": map[string]any{"observedGeneration": int64(3), "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
		}
	}
	j := &job{parent: &unstructured.Unstructured{Object: object()}}
	var dict *s2.Dict
	j.pack(&dict)
	if j.parent != nil || len(j.packed) == 0 {
		t.Fatalf("packed: parent %v, %d bytes; want nil and the JSON", j.parent, len(j.packed))
	}
	if j.orphans() {
		t.Error("a packed job is taken for the orphans'")
	}
	if err := j.unpack(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(object(), j.parent.Object); diff != "" {
		t.Errorf("unpacked (-want +got):\n%s", diff)
	}
	if j.packed != nil {
		t.Error("the JSON is kept once unpacked")
	}
	if err := j.unpack(); err != nil || j.parent == nil {
		t.Errorf("unpack of an unpacked job: %v, parent %v", err, j.parent)
	}
	// Another parent of the pass packs against the first: what the two
	// share costs it next to nothing.
	other := func() map[string]any {
		o := object()
		o["metadata"].(map[string]any)["name"], o["metadata"].(map[string]any)["uid"] = "api", "u-2"
		return o
	}
	second := &job{parent: &unstructured.Unstructured{Object: other()}}
	js, err := second.parent.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	second.pack(&dict)
	if len(second.packed) == 0 || len(second.packed) > len(js)/4 {
		t.Errorf("a second parent of %d bytes of JSON packed to %d, want a quarter at most", len(js), len(second.packed))
	}
	if err := second.unpack(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(other(), second.parent.Object); diff != "" {
		t.Errorf("second unpacked (-want +got):\n%s", diff)
	}
	if o := (&job{}); !o.orphans() {
		t.Error("the orphans' job is taken for a parent's")
	}
	broken := &job{packed: []byte(`{"kind":`)}
	if err := broken.unpack(); err == nil || broken.parent != nil {
		t.Errorf("unpack of broken JSON: %v, parent %v; want an error and no parent", err, broken.parent)
	}
}

// TestJobUnreadable: a job whose packed parent cannot be decoded writes
// nothing of that parent's, neither its children nor its status, and
// counts its writes blocked; the other parents' jobs run.
func TestJobUnreadable(t *testing.T) {
	t.Parallel()
	p := newMemPass(t, testConfig("shop"))
	p.parent("shop", "web", map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	p.parent("shop", "api", map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	e, rs := p.engine, p.engine.resources[0]
	rep := ResourceReport{}
	rs.begin()
	jobs, err := e.planPass(t.Context(), rs, &rep)
	if err != nil {
		t.Fatal(err)
	}
	var broken *job
	for _, j := range jobs {
		if j.id == "HttpService/shop/web" {
			broken = j
		}
	}
	if broken == nil || broken.packed == nil {
		t.Fatalf("no packed job of HttpService/shop/web among %d jobs", len(jobs))
	}
	broken.packed = broken.packed[:len(broken.packed)/2]
	if err := e.execute(t.Context(), rs, jobs, &rep); err != nil {
		t.Fatal(err)
	}
	fold(rs.next, &rep, jobs)
	rs.end()
	want := []string{"create-only apply Deployment/shop/api", "create-only apply Service/shop/api", "status apply HttpService/shop/api"}
	if diff := cmp.Diff(want, p.w.log()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if rep.Blocked != 2 || rep.Created != 2 || rep.Statuses != 1 {
		t.Errorf("blocked %d, created %d, statuses %d; want 2 (web's children), 2 and 1 (api's)", rep.Blocked, rep.Created, rep.Statuses)
	}
}
