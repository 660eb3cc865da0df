package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// handEdit merge-patches an object as another client, kubectl patch
// --type=merge would.
func handEdit(t *testing.T, h *harness, gvr schema.GroupVersionResource, ns, name, body string) {
	t.Helper()
	if _, err := h.dyn.Resource(gvr).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(body),
		metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatalf("merge patch of %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

// repairedInOnePass runs one pass after a hand edit and checks that it
// updated the child, left the parent not Stalled, and kept the other
// client's annotation.
func repairedInOnePass(t *testing.T, h *harness, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	rep := h.sync()
	if rep.Updated != 1 || rep.Failed != 0 || rep.Stalled != 0 {
		t.Errorf("pass after the hand edit: updated %d, failed %d, stalled %d; want 1, 0, 0", rep.Updated, rep.Failed, rep.Stalled)
	}
	if s := condition(t, h.mustGet(httpServices, ns, name), "Stalled"); s["status"] != "False" {
		t.Errorf("parent Stalled = %v, want False", s)
	}
	got := h.mustGet(gvr, ns, name)
	if a := got.GetAnnotations()["team"]; a != "payments" {
		t.Errorf("the other client's annotation is gone or changed: %q", a)
	}
	if rep := h.sync(); rep.Updated != 0 || rep.Failed != 0 {
		t.Errorf("pass after the repair: updated %d, failed %d; want 0, 0", rep.Updated, rep.Failed)
	}
	return got
}

// portsOf returns a list of port items as "name=port" strings.
func portsOf(items []any, portField string) []string {
	var out []string
	for _, it := range items {
		m := it.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v", m["name"], m[portField]))
	}
	return out
}

// TestServicePortsReplacedByHand: another client replaced the Service's
// ports with a merge patch, so that resyncd's apply would make two ports
// named http. One pass takes the list back.
func TestServicePortsReplacedByHand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("svcports"))
	h.namespace("svcports")
	h.createParent("svcports", "web", map[string]any{"image": "nginx:1.27", "port": int64(80)})
	h.sync()

	handEdit(t, h, services, "svcports", "web",
		`{"metadata":{"annotations":{"team":"payments"}},"spec":{"ports":[{"name":"http","port":81,"targetPort":8080}]}}`)
	svc := repairedInOnePass(t, h, services, "svcports", "web")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if got := strings.Join(portsOf(ports, "port"), ","); got != "http=80" {
		t.Errorf("Service ports = %s, want http=80", got)
	}
}

// TestContainerPortsReplacedByHand: another client replaced the
// Deployment's containers, and with them the container's ports, with a
// merge patch; resyncd's apply would make two container ports named http.
func TestContainerPortsReplacedByHand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("ctrports"))
	h.namespace("ctrports")
	h.createParent("ctrports", "web", map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	h.sync()

	handEdit(t, h, deployments, "ctrports", "web",
		`{"metadata":{"annotations":{"team":"payments"}},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.27","ports":[{"name":"http","containerPort":8081}]}]}}}}`)
	dep := repairedInOnePass(t, h, deployments, "ctrports", "web")
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	ports, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "ports")
	if got := strings.Join(portsOf(ports, "containerPort"), ","); got != "http=8080" {
		t.Errorf("container ports = %s, want http=8080", got)
	}
}

// TestEnvReplacedByHand: another client replaced an env var by name with
// one read from a field; resyncd's apply would give it both value and
// valueFrom.
func TestEnvReplacedByHand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("envbyname"))
	h.namespace("envbyname")
	h.createParent("envbyname", "web", map[string]any{"image": "nginx:1.27", "port": int64(8080),
		"env": []any{map[string]any{"name": "MODE", "value": "prod"}}})
	h.sync()

	handEdit(t, h, deployments, "envbyname", "web",
		`{"metadata":{"annotations":{"team":"payments"}},"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.27",`+
			`"env":[{"name":"MODE","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]}]}}}}`)
	dep := repairedInOnePass(t, h, deployments, "envbyname", "web")
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	env, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "env")
	got, _ := json.Marshal(env)
	if string(got) != `[{"name":"MODE","value":"prod"}]` {
		t.Errorf("env = %s, want MODE=prod only", got)
	}
}

// TestListNotTakenFromOthers: a Service of the parent's name that is not
// resyncd's keeps the ports and the field ownership another client gave
// it; the parent is Stalled, NameTaken, as it is for any such object.
func TestListNotTakenFromOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("notmine"))
	h.namespace("notmine")
	h.foreignService("notmine", "web", nil)
	handEdit(t, h, services, "notmine", "web", `{"spec":{"ports":[{"name":"http","port":81,"targetPort":8080}]}}`)
	before := h.mustGet(services, "notmine", "web")
	h.createParent("notmine", "web", map[string]any{"image": "nginx:1.27", "port": int64(80)})
	h.sync()

	after := h.mustGet(services, "notmine", "web")
	if after.GetResourceVersion() != before.GetResourceVersion() {
		mf, _ := json.Marshal(after.GetManagedFields())
		t.Errorf("a Service resyncd does not own was written: managedFields %s", mf)
	}
	if s := condition(t, h.mustGet(httpServices, "notmine", "web"), "Stalled"); s["status"] != "True" || s["reason"] != ReasonNameTaken {
		t.Errorf("parent Stalled = %v, want True/%s", s, ReasonNameTaken)
	}
}

// TestInvalidLists: the lists a 422 answer names, as paths into
// managedFields; a cause outside any list, or another error, names none.
func TestInvalidLists(t *testing.T) {
	t.Parallel()
	gk := schema.GroupKind{Kind: "Service"}
	invalid := func(fields ...string) error {
		var errs field.ErrorList
		for _, f := range fields {
			errs = append(errs, field.Invalid(field.NewPath(f), "", "bad"))
		}
		return apierrors.NewInvalid(gk, "web", errs)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{invalid("spec.ports[1].name"), "[[spec ports]]"},
		{invalid("spec.template.spec.containers[0].env[0].valueFrom", "spec.template.spec.containers[0].env[2].value"), "[[spec template spec containers  env]]"},
		{invalid("spec.replicas"), "[]"},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "web", nil), "[]"},
	} {
		if got := fmt.Sprint(invalidLists(c.err)); got != c.want {
			t.Errorf("invalidLists(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

// TestAdoptedServicePortsTakenBack: a Service handed over with
// resyncd.io/adopt whose port of the same name differs is taken over in
// the pass that adopts it, though resyncd has applied nothing to it yet.
func TestAdoptedServicePortsTakenBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("adoptports"))
	h.namespace("adoptports")
	h.foreignService("adoptports", "web", map[string]string{"resyncd.io/adopt": "HttpService.resyncd.io/web", "team": "payments"})
	handEdit(t, h, services, "adoptports", "web", `{"spec":{"ports":[{"name":"http","port":81,"targetPort":8080}]}}`)
	h.createParent("adoptports", "web", map[string]any{"image": "nginx:1.27", "port": int64(80)})
	rep := h.sync()
	if rep.Failed != 0 || rep.Stalled != 0 {
		t.Errorf("adopting pass: failed %d, stalled %d; want 0, 0", rep.Failed, rep.Stalled)
	}
	svc := h.mustGet(services, "adoptports", "web")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if got := strings.Join(portsOf(ports, "port"), ","); got != "http=80" {
		t.Errorf("Service ports = %s, want http=80", got)
	}
	if a := svc.GetAnnotations()["team"]; a != "payments" {
		t.Errorf("the other client's annotation is gone or changed: %q", a)
	}
}
