package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// bakery is a kro graph of a parent kind no other test installs; SPEC is
// its SimpleSchema's spec, GROUP its group, REPLICAS the expression of the Deployment's
// replicas.
const bakery = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: bakery}
spec:
  schema:
    apiVersion: v1alpha1
    group: GROUP
    kind: Bakery
    spec:
SPEC
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${schema.metadata.name}"}
        spec:
          replicas: REPLICAS
          selector: {matchLabels: {app: "${schema.metadata.name}"}}
          template:
            metadata: {labels: {app: "${schema.metadata.name}"}}
            spec: {containers: [{name: oven, image: nginx}]}
`

const bakerySpec = `      name: string | required=true
      loaves: integer | default=1 maximum=100`

// bakeryFiles writes the bakery graph in group with spec and replicas, and a
// configuration that watches it (by the graph alone, installCRD set) and
// HttpServices; it returns the flags that use them.
func bakeryFiles(t *testing.T, dir, group, spec, replicas string) []string {
	t.Helper()
	g := strings.NewReplacer("GROUP", group, "SPEC", spec, "REPLICAS", replicas).Replace(bakery)
	if err := os.WriteFile(filepath.Join(dir, "bakery.yaml"), []byte(g), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(`log: {level: error}
resources:
  - {graph: bakery.yaml, installCRD: true, namespaces: [bakery]}
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, namespaces: [bakery]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", cfg, "--kubeconfig", kc}
}

// TestInstallCRD: with installCRD, a start applies the CRD made from the
// graph's spec.schema before the passes; the next start writes nothing;
// a change that would break the objects stored is refused with the reason,
// the CRD left as it was and the resource down while the others pass; a
// compatible change (a new optional field) is applied.
func TestInstallCRD(t *testing.T) {
	t.Parallel()
	dyn := dynamic.NewForConfigOrDie(env(t).Config)
	crds := dyn.Resource(crdsGVR)
	const name = "bakeries.bakery.example.com"
	dir := t.TempDir()
	get := func(t *testing.T) *unstructured.Unstructured {
		t.Helper()
		crd, err := crds.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return crd
	}
	specFields := func(crd *unstructured.Unstructured) []string {
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		props, _, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties")
		var out []string
		for k := range props {
			out = append(out, k)
		}
		return sortedStrings(out)
	}

	flags := bakeryFiles(t, dir, "bakery.example.com", bakerySpec, "${schema.spec.loaves}")
	if out, code := resyncd(t, append([]string{"once"}, flags...)...); code != 0 {
		t.Fatalf("first start: exit %d\n%s", code, out)
	}
	created := get(t)
	if got := specFields(created); strings.Join(got, ",") != "loaves,name" {
		t.Errorf("spec fields of the CRD applied: %v", got)
	}
	if m := created.GetManagedFields(); len(m) == 0 || m[0].Manager != "resyncd" {
		t.Errorf("managed fields: %+v", m)
	}

	if out, code := resyncd(t, append([]string{"once"}, flags...)...); code != 0 {
		t.Fatalf("second start: exit %d\n%s", code, out)
	}
	if rv := get(t).GetResourceVersion(); rv != created.GetResourceVersion() {
		t.Errorf("second start wrote the CRD: resourceVersion %s, was %s", rv, created.GetResourceVersion())
	}

	// loaves removed: objects that set it would lose it.
	flags = bakeryFiles(t, dir, "bakery.example.com", "      name: string | required=true", "${1}")
	out, code := resyncd(t, append([]string{"once"}, flags...)...)
	want := "resources[0]: CRD not applied: bakeries.bakery.example.com would change in a way that breaks the objects stored (" +
		filepath.Join(dir, "bakery.yaml") + ":5): v1alpha1: spec.loaves: would be removed"
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("breaking change: exit %d, output:\n%s\nwant: %s", code, out, want)
	}
	if !strings.Contains(out, "httpservices.v1alpha1.resyncd.io") || strings.Contains(out, "bakeries.v1alpha1") {
		t.Errorf("the other resource passes, the one down does not:\n%s", out)
	}
	if rv := get(t).GetResourceVersion(); rv != created.GetResourceVersion() {
		t.Errorf("a refused change wrote the CRD: resourceVersion %s, was %s", rv, created.GetResourceVersion())
	}

	flags = bakeryFiles(t, dir, "bakery.example.com", bakerySpec+"\n      crust: string | default=soft", "${schema.spec.loaves}")
	if out, code := resyncd(t, append([]string{"once"}, flags...)...); code != 0 {
		t.Fatalf("compatible change: exit %d\n%s", code, out)
	}
	if got := specFields(get(t)); strings.Join(got, ",") != "crust,loaves,name" {
		t.Errorf("spec fields after a compatible change: %v", got)
	}
}

// TestValidateOfflineTyped: a type error over the parent's fields is
// refused offline, typed by the CRD spec.schema makes, as it is against
// the API server that serves that CRD.
func TestValidateOfflineTyped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const group = "typed.bakery.example.com"
	flags := bakeryFiles(t, dir, group, bakerySpec, "${schema.spec.loaves}")
	if out, code := resyncd(t, append([]string{"once"}, flags...)...); code != 0 {
		t.Fatalf("install the CRD: exit %d\n%s", code, out)
	}
	flags = bakeryFiles(t, dir, group, bakerySpec, "${schema.spec.loaves + schema.spec.name}")
	want := filepath.Join(dir, "bakery.yaml") + ":19: resources[deployment].template.spec.replicas: ${schema.spec.loaves + schema.spec.name}: " +
		"at 1:20: found no matching overload for '_+_' applied to '(int, string)'"
	out, code := resyncd(t, "validate", flags[0], flags[1])
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("offline: exit %d, output:\n%s\nwant: %s", code, out, want)
	}
	out, code = resyncd(t, append([]string{"validate"}, flags...)...)
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("--kubeconfig: exit %d, output:\n%s\nwant: %s", code, out, want)
	}
}

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}
