package graph

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/desired"
)

const externalGraph = "../../testdata/kro/external-config.yaml"

// TestExternalRefs: a graph's external references, evaluated for one
// parent: a name from its spec in its namespace, a selector with a value
// from its spec; one kind, kept whole since a list is read as a whole.
func TestExternalRefs(t *testing.T) {
	r, err := Load(externalGraph, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]desired.ExternalType{{GVR: configMapsGVR, Kind: "ConfigMap", Namespaced: true, Keep: []string{""}}},
		r.ExternalTypes()); diff != "" {
		t.Errorf("ExternalTypes (-want +got):\n%s", diff)
	}
	if len(r.ChildTypes()) != 2 {
		t.Errorf("ChildTypes = %+v: want the ConfigMap and the ServiceAccount, no external kind", r.ChildTypes())
	}
	refs, err := r.ExternalRefs(teamApp(t, r))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ref := range refs {
		got = append(got, ref.ID+": "+desired.WhereRef(r.ExternalTypes()[ref.Type], ref))
	}
	want := []string{"platform: v1 ConfigMap shop/platform-settings", "teamConfigs: v1 ConfigMap in shop selected by team=payments"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ExternalRefs (-want +got):\n%s", diff)
	}
}

// TestRenderExternal: a child that reads an external object waits while
// it is not read or does not exist, naming it; the child that reads none
// is rendered all the same. Found, the child has its values, and so has
// the status.
func TestRenderExternal(t *testing.T) {
	r, err := Load(externalGraph, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := teamApp(t, r)
	platform := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "platform-settings", "namespace": "shop"}, "data": map[string]any{"region": "eu-west-1"}}
	team := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "pay-db", "namespace": "shop"}}
	tests := []struct {
		name     string
		external []desired.External
		wantKids []string
		wantWait string
	}{
		{"not read", nil, []string{"ServiceAccount/checkout"}, "settings waits for platform: v1 ConfigMap shop/platform-settings was not read"},
		{"missing", []desired.External{{ID: "platform"}, {ID: "teamConfigs"}}, []string{"ServiceAccount/checkout"},
			"settings waits for platform: v1 ConfigMap shop/platform-settings does not exist"},
		{"found", []desired.External{{ID: "platform", Objects: []map[string]any{platform}}, {ID: "teamConfigs", Objects: []map[string]any{team}}},
			[]string{"ConfigMap/checkout-settings", "ServiceAccount/checkout"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := r.RenderWith(p, nil, tt.external)
			if err != nil {
				t.Fatal(err)
			}
			var kids []string
			for _, c := range g.Children {
				kids = append(kids, c.GetKind()+"/"+c.GetName())
			}
			if diff := cmp.Diff(tt.wantKids, kids); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			var wait string
			if len(g.Waiting) > 0 {
				wait = g.Waiting[0].Message
				if g.Waiting[0].Reason != "WaitingForPlatform" {
					t.Errorf("reason %q, want WaitingForPlatform", g.Waiting[0].Reason)
				}
			}
			if wait != tt.wantWait {
				t.Errorf("waiting: %q, want %q", wait, tt.wantWait)
			}
			st, err := r.Status(p, desired.Observation{External: tt.external, Waiting: g.Waiting})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantWait != "" {
				if _, ok := st.Fields["region"]; ok || st.Readiness.Reason != "WaitingForPlatform" {
					t.Errorf("status %+v: want WaitingForPlatform and no region yet", st)
				}
				return
			}
			data := g.Children[0].Object["data"]
			if diff := cmp.Diff(map[string]any{"region": "eu-west-1", "teams": "1"}, data); diff != "" {
				t.Errorf("settings data (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"region": "eu-west-1", "teamConfigs": int64(1)}, st.Fields); diff != "" {
				t.Errorf("status fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExternalReadiness: an external reference nothing reads still makes
// the parent wait while it does not exist, and its readyWhen decides.
func TestExternalReadiness(t *testing.T) {
	r, err := Parse("g.yaml", []byte(`
apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: g}
spec:
  resources:
    - id: gate
      readyWhen: ["${gate.data.?open.orValue('') == 'yes'}"]
      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: gate, namespace: ops}}
    - id: skipped
      includeWhen: ["${schema.spec.off == false}"]
      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: never}}
    - id: account
      template: {apiVersion: v1, kind: ServiceAccount, metadata: {name: "${schema.metadata.name}"}}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := decode(t, []byte(`{"apiVersion": "example.com/v1", "kind": "App", "metadata": {"name": "a", "namespace": "shop"}, "spec": {"off": true}}`))
	refs, err := r.ExternalRefs(p)
	if err != nil || len(refs) != 1 || refs[0].Namespace != "ops" {
		t.Fatalf("ExternalRefs = %+v, %v: want gate in ops only, skipped left out by its includeWhen", refs, err)
	}
	gate := func(open string) []desired.External {
		return []desired.External{{ID: "gate", Objects: []map[string]any{{"metadata": map[string]any{"name": "gate"}, "data": map[string]any{"open": open}}}}}
	}
	for _, tt := range []struct {
		name     string
		external []desired.External
		want     string
	}{
		{"missing", []desired.External{{ID: "gate"}}, "WaitingForGate: v1 ConfigMap ops/gate does not exist"},
		{"not ready", gate("no"), "GateNotReady: v1 ConfigMap ops/gate: readyWhen"},
		{"ready", gate("yes"), "Ready: 2 of 2 resources ready"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := desired.Observation{External: tt.external, Children: []desired.Child{{Kind: "ServiceAccount", Name: "a", Object: map[string]any{"apiVersion": "v1"}}}}
			st, err := r.Status(p, obs)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Readiness.Reason + ": " + st.Readiness.Message; !strings.HasPrefix(got, tt.want) {
				t.Errorf("readiness %q, want %q…", got, tt.want)
			}
		})
	}
}

// teamApp is the instance of testdata/kro, with its schema's defaults.
func teamApp(t *testing.T, r *Renderer) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("../../testdata/kro/instances/external-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	p := &unstructured.Unstructured{Object: obj}
	p.SetNamespace("shop")
	r.Default(p)
	return p
}

// TestExternalRefsChosen: a reference's namespace is the parent's choice
// (ExternalRef.Chosen) only when an expression gives it, whatever it
// evaluates to; written out, or left out, it is the graph's. ChosenReads
// lists those references with the namespace as written and its line.
func TestExternalRefsChosen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.yaml")
	if err := os.WriteFile(path, []byte(`apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: chosen}
spec:
  resources:
    - id: own
      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
    - id: literal
      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: platform}}
    - id: fromSpec
      externalRef:
        apiVersion: v1
        kind: Secret
        metadata:
          name: c
          namespace: ${schema.spec.secretNamespace}
    - id: selected
      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {namespace: "team-${schema.spec.team}", selector: {}}}
    - id: everywhere
      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {selector: {matchLabels: {tier: gold}}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "App",
		"metadata": map[string]any{"name": "x", "namespace": "shop"}, "spec": map[string]any{"secretNamespace": "bank", "team": "ads"}}}
	refs, err := r.ExternalRefs(p)
	if err != nil {
		t.Fatal(err)
	}
	type read struct {
		ID, Namespace string
		Chosen        bool
	}
	var got []read
	for _, ref := range refs {
		got = append(got, read{ref.ID, ref.Namespace, ref.Chosen})
	}
	want := []read{{"own", "shop", false}, {"literal", "platform", false}, {"fromSpec", "bank", true}, {"selected", "team-ads", true}, {"everywhere", "", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ExternalRefs (-want +got):\n%s", diff)
	}
	wantReads := []Placement{
		{ID: "fromSpec", Line: 10, APIVersion: "v1", Kind: "Secret", Namespace: "${schema.spec.secretNamespace}", NamespaceLine: 16, Expression: true},
		{ID: "selected", Line: 17, APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-${schema.spec.team}", NamespaceLine: 18, Expression: true},
	}
	if diff := cmp.Diff(wantReads, r.ChosenReads()); diff != "" {
		t.Errorf("ChosenReads (-want +got):\n%s", diff)
	}
}
