package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
)

// corpusChildren is, for each graph of testdata/kro, how many children
// its instance (testdata/kro/instances) has once converged.
var corpusChildren = map[string]int{
	"app-rbac":           3,
	"external-config":    2,
	"fan-out":            7,
	"graph-kind":         1,
	"json-settings":      2,
	"legacy-queue":       1,
	"network-guard":      2,
	"nightly-report":     3,
	"seeded-credentials": 2,
	"stateful-cache":     3,
	"status-only":        0,
	"storefront":         3,
	"team-roster":        1,
	"team-space":         4,
	"tenant-namespace":   3,
	"web-stack":          4,
}

// corpusPlacement is, for the graphs of testdata/kro whose children leave
// their parent's namespace, what their watched resource allows.
var corpusPlacement = map[string]string{
	"tenant-namespace": "childNamespaces: [corpus-apps]",
	"team-space":       `clusterScopedChildren: true, childNamespaces: ["team-*"]`,
}

// TestCorpusConverges runs every graph of testdata/kro on the API server,
// each parent kind installed from what `resyncd crd` prints and one
// instance of it written the kro way: within a few passes of `once` every
// child is created, the parent's status written, and the next pass
// writes nothing.
func TestCorpusConverges(t *testing.T) {
	t.Parallel()
	dyn := dynamic.NewForConfigOrDie(env(t).Config)
	ns := "corpus"
	for _, n := range []string{ns, "corpus-apps"} {
		if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": n}}},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob("../../testdata/kro/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type member struct {
		name     string
		gvr      schema.GroupVersionResource
		parent   *unstructured.Unstructured
		renderer *graph.Renderer
	}
	var members []member
	cfg := "log: {level: error}\nmetrics: {address: \"127.0.0.1:0\"}\nhealth: {address: \"127.0.0.1:0\"}\nresources:\n"
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".yaml")
		if _, ok := corpusChildren[name]; !ok {
			t.Errorf("%s: not in corpusChildren: how many children does its instance have?", name)
			continue
		}
		out, code := resyncd(t, "crd", "--graph", p)
		if code != 0 {
			t.Fatalf("%s: crd: exit %d:\n%s", name, code, out)
		}
		gvr := establish(t, dyn, decode(t, out))
		parent := decode(t, readFile(t, filepath.Join("../../testdata/kro/instances", name+".yaml")))
		created, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), parent, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: create the instance: %v", name, err)
		}
		createExternal(t, dyn, ns, filepath.Join("../../testdata/kro/instances", name+".external.yaml"))
		r, err := graph.Load(p, graph.Options{})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, member{name, gvr, created, r})
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		// The parent kind comes from the graph's spec.schema, as kro derives it.
		placement := ""
		if p, ok := corpusPlacement[name]; ok {
			placement = ", " + p
		}
		cfg += fmt.Sprintf("  - {graph: %q, namespaces: [%s]%s}\n", abs, ns, placement)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	// Children that refer to others are created a pass after them: as
	// many passes as the deepest graph has levels, then one that writes
	// nothing.
	converged := false
	var out string
	for pass := 1; pass <= 6 && !converged; pass++ {
		var code int
		out, code = resyncd(t, "once", "--config", cfgPath, "--kubeconfig", kc)
		if code != 0 {
			t.Fatalf("pass %d: exit %d:\n%s", pass, code, out)
		}
		converged = writes(t, out) == 0
	}
	if !converged {
		t.Fatalf("still writing after 6 passes:\n%s", out)
	}

	for _, m := range members {
		var children int
		for _, ct := range m.renderer.ChildTypes() {
			where := ns // children outside the namespace: anywhere, by the parent's namespace label
			if ct.Anywhere || ct.ClusterScoped {
				where = ""
			}
			list, err := dyn.Resource(ct.GVR).Namespace(where).List(t.Context(), metav1.ListOptions{
				LabelSelector: desired.ChildSelector(m.parent.GroupVersionKind().GroupKind()) + "," + desired.LabelParent + "=" + m.parent.GetName()})
			if err != nil {
				t.Fatal(err)
			}
			children += len(list.Items)
		}
		if children != corpusChildren[m.name] {
			t.Errorf("%s: %d children on the server, want %d", m.name, children, corpusChildren[m.name])
		}
		p, err := dyn.Resource(m.gvr).Namespace(ns).Get(t.Context(), m.parent.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if g, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration"); g != p.GetGeneration() {
			t.Errorf("%s: status.observedGeneration %d, generation %d", m.name, g, p.GetGeneration())
		}
		conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		for _, c := range conds {
			if c := c.(map[string]any); c["type"] == "Stalled" && c["status"] == "True" {
				t.Errorf("%s: Stalled: %v", m.name, c["message"])
			}
		}
	}

	// Status fields computed from the spec with its defaults, and from
	// the live children.
	get := func(resource, name string) map[string]any {
		p, err := dyn.Resource(schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: resource}).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, _ := p.Object["status"].(map[string]any)
		return st
	}
	// 4 CPUs at 30, and the default 4 GiB at 5.
	if st := get("quotas", "payments"); st["monthlyCost"] != int64(140) || st["summary"] != "payments gets 4 CPUs and 4 GiB" {
		t.Errorf("Quota status: %v", st)
	}
	// The workers of the tenant's JSON, read back from the live ConfigMap.
	if st := get("workers", "thumbnails"); st["workers"] != int64(5) {
		t.Errorf("Worker status: %v", st)
	}
	// Read from the external ConfigMaps, which resyncd never writes.
	if st := get("teamapps", "checkout"); st["region"] != "eu-west-1" || st["teamConfigs"] != int64(1) {
		t.Errorf("TeamApp status: %v", st)
	}
	// Children outside the parent's namespace, where the resource allows.
	if st := get("teamspaces", "search"); st["namespace"] != "team-search" {
		t.Errorf("TeamSpace status: %v", st)
	}
	app, err := dyn.Resource(schema.GroupVersionResource{Group: "tenant.example.com", Version: "v1alpha1", Resource: "apps"}).Namespace(ns).Get(t.Context(), "checkout", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(app.Object, "status", "service"); got != "corpus-apps/checkout" {
		t.Errorf("App status.service: %q, want corpus-apps/checkout", got)
	}
	if st := get("webstacks", "storefront"); st["endpoint"] != "http://storefront.corpus.svc:80" || st["replicas"] != int64(3) {
		t.Errorf("WebStack status: %v", st)
	}
}

// createExternal creates, as a person would, the objects of path (none
// when there is no such file): those the graph's external references read.
func createExternal(t *testing.T, dyn dynamic.Interface, ns, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		u := decode(t, doc)
		gvr := schema.GroupVersionResource{Version: "v1", Resource: strings.ToLower(u.GetKind()) + "s"}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

// writes sums the write columns of once's summary.
func writes(t *testing.T, summary string) int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(summary), "\n")
	head := strings.Fields(strings.Replace(lines[0], "IN SYNC", "IN_SYNC", 1))
	n := 0
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		for i, h := range head {
			switch h {
			case "CREATED", "UPDATED", "DELETED", "RELEASED", "STATUSES":
				v, err := strconv.Atoi(f[i])
				if err != nil {
					t.Fatalf("summary line %q: %v", l, err)
				}
				n += v
			}
		}
	}
	return n
}
