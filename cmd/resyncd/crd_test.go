package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/resyncd/resyncd/internal/fixture"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestCRDAccepted: the API server takes the CRD `resyncd crd` prints for
// each graph of testdata/kro, establishes it, and fills in what the
// schema defaults on a parent written without it; the status subresource
// takes resyncd's conditions, and an immutable field stays as it was.
func TestCRDAccepted(t *testing.T) {
	t.Parallel()
	dyn := dynamic.NewForConfigOrDie(env(t).Config)
	ns := "crd-accepted"
	tests := []struct {
		graph, parent, wantSpec string
	}{
		{"storefront", `{apiVersion: kro.run/v1alpha1, kind: Storefront, metadata: {name: shop}, spec: {name: shop}}`,
			`{name: shop, image: "nginx:1.27", replicas: 2, port: 8080, ingress: {enabled: false, host: shop.example.com}}`},
		{"team-roster", `{apiVersion: roster.example.com/v1beta1, kind: Person, metadata: {name: ann}, spec: {name: ann, nickname: an, contacts: [{value: a@b.c}]}}`,
			`{name: ann, nickname: an, height: 1.75, level: 1, tags: [new], settings: {theme: dark, beta: {enabled: false}}, contacts: [{kind: email, value: a@b.c}]}`},
		{"legacy-queue", `{apiVersion: kro.run/v1alpha1, kind: Queue, metadata: {name: q}, spec: {name: q}}`,
			`{name: q, retention: {days: 7, archive: {enabled: true, bucket: archive}}}`},
		{"graph-kind", `{apiVersion: notes.example.com/v1, kind: Note, metadata: {name: note}, spec: {text: hi}}`,
			`{text: hi, color: green}`},
		{"external-config", `{apiVersion: kro.run/v1alpha1, kind: TeamApp, metadata: {name: checkout}, spec: {team: payments}}`,
			`{team: payments, platformConfig: platform-settings}`},
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.graph, func(t *testing.T) {
			out, code := resyncd(t, "crd", "--graph", "../../testdata/kro/"+tt.graph+".yaml")
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			gvr := establish(t, dyn, decode(t, out))
			parents := dyn.Resource(gvr).Namespace(ns)

			created, err := parents.Create(t.Context(), decode(t, tt.parent), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create the parent: %v", err)
			}
			if diff := cmp.Diff(decode(t, tt.wantSpec).Object, created.Object["spec"]); diff != "" {
				t.Errorf("spec as the server stored it (-want +got):\n%s", diff)
			}

			created.Object["status"] = map[string]any{"observedGeneration": int64(1), "conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "Ready", "message": "ok", "observedGeneration": int64(1),
				"lastTransitionTime": "2026-01-01T00:00:00Z"}}}
			st, err := parents.UpdateStatus(t.Context(), created, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("write the status: %v", err)
			}
			if got, _, _ := unstructured.NestedSlice(st.Object, "status", "conditions"); len(got) != 1 {
				t.Errorf("conditions as the server stored them: %v", got)
			}
		})
	}

	t.Run("immutable", func(t *testing.T) {
		people := dyn.Resource(schema.GroupVersionResource{Group: "roster.example.com", Version: "v1beta1", Resource: "people"}).Namespace(ns)
		p, err := people.Get(t.Context(), "ann", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(p.Object, "anna", "spec", "nickname"); err != nil {
			t.Fatal(err)
		}
		if _, err := people.Update(t.Context(), p, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("changing an immutable field: %v, want invalid", err)
		}
	})
}

// establish creates crd, unless another test of the package did, and
// waits until the API server serves it; it returns the resource of its
// first version.
func establish(t *testing.T, dyn dynamic.Interface, crd *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()
	if _, err := dyn.Resource(crdsGVR).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create the CRD: %v", err)
	}
	fixture.Eventually(t, crd.GetName()+" Established", 30*time.Second, func() bool {
		got, err := dyn.Resource(crdsGVR).Get(t.Context(), crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return true
			}
		}
		return false
	})
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	return schema.GroupVersionResource{Group: group, Version: versions[0].(map[string]any)["name"].(string), Resource: plural}
}

// decode reads one YAML object.
func decode(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCRDErrors: crd exits 1 naming the file, the line and the field.
func TestCRDErrors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte(`apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
spec:
  schema:
    apiVersion: v1alpha1
    kind: Bad
    spec:
      replicas: integer | default=many
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := resyncd(t, "crd", "--graph", path)
	if want := path + ":8: spec.schema.spec.replicas: default=many: is not an integer"; code != 1 || out != want {
		t.Errorf("exit %d, output:\n%s\nwant:\n%s", code, out, want)
	}
	if out, code := resyncd(t, "crd", "--graph", "../../testdata/graphs/httpservice.yaml"); code != 1 || !strings.Contains(out, "httpservice.yaml:10: spec.schema: is missing") {
		t.Errorf("a graph without spec.schema: exit %d, output:\n%s", code, out)
	}
}
