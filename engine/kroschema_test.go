package engine

import (
	"os"
	"path/filepath"
	"testing"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestStatusFitsKroCRD: a parent kind whose CRD kro generated declares, in
// its status, conditions (kro's shape: a plain list) and the graph's
// fields, but no observedGeneration. resyncd's status apply leaves out
// what the schema does not declare, instead of failing every pass with
// "field not declared in schema": the parent shows Ready and the graph's
// field, and the pass after writes nothing.
func TestStatusFitsKroCRD(t *testing.T) {
	ns := "kro-status"
	path := filepath.Join(t.TempDir(), "kro-status.yaml")
	rgd := `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: kro-status}
spec:
  schema:
    apiVersion: v1alpha1
    group: kro-status.example.com
    kind: KroStatus
    spec:
      value: string | default="v"
    status:
      configName: ${config.metadata.name}
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data: {value: "${schema.spec.value}"}
`
	if err := os.WriteFile(path, []byte(rgd), 0o600); err != nil {
		t.Fatal(err)
	}
	h, gvr := kroHarnessWith(t, ns, path, func(crd *extv1.CustomResourceDefinition) {
		str := extv1.JSONSchemaProps{Type: "string"}
		cond := extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{
			"type": str, "status": str, "reason": str, "message": str, "lastTransitionTime": str,
			"observedGeneration": {Type: "integer"},
		}}
		st := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
		delete(st.Properties, "observedGeneration")
		st.Properties["conditions"] = extv1.JSONSchemaProps{Type: "array", Items: &extv1.JSONSchemaPropsOrArray{Schema: &cond}}
		st.Properties["state"] = str
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"] = st
	})
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "KroStatus",
		"metadata": map[string]any{"name": "one", "namespace": ns}, "spec": map[string]any{},
	}}
	if _, err := h.dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := h.sync()
	if rep.Failed != 0 || rep.Statuses != 1 {
		t.Errorf("pass 1: failed %d, statuses %d; want 0 and 1", rep.Failed, rep.Statuses)
	}
	p := h.mustGet(gvr, ns, "one")
	st, _, _ := unstructured.NestedMap(p.Object, "status")
	if st["configName"] != "one" {
		t.Errorf("status.configName = %v, want one: %v", st["configName"], st)
	}
	if _, found := st["observedGeneration"]; found {
		t.Errorf("status.observedGeneration = %v: the schema does not declare it", st["observedGeneration"])
	}
	if r := condition(t, p, "Ready"); r["status"] != "True" {
		t.Errorf("Ready = %v, want True", r)
	}
	if st["state"] != "ACTIVE" {
		t.Errorf("status.state = %v, want ACTIVE, as kro shows a Ready instance", st["state"])
	}
	h.log.reset()
	rep = h.sync()
	if w := writes(h.log.reset()); len(w) != 0 || rep.Failed != 0 {
		t.Errorf("pass 2: writes %v, failed %d; want none", w, rep.Failed)
	}
}
