package engine

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/desired"
)

// TestComposeKro: an instance of kro's shows kro's four conditions and
// state, said from the same verdict as Ready, Reconciling and Stalled,
// with Ready mirroring the first condition that is not True and the
// transition times kept while a status holds.
func TestComposeKro(t *testing.T) {
	t.Parallel()
	p := func(status map[string]any) *unstructured.Unstructured {
		u := statusParent(map[string]any{}, status)
		u.SetAPIVersion("kro.run/v1alpha1")
		u.SetKind("Greeting")
		return u
	}
	ready := desired.Status{Readiness: desired.Readiness{Ready: true, Reason: "Ready", Message: "1 of 1 resources ready"}}
	waiting := desired.Status{Readiness: desired.Readiness{Reason: "Waiting", Message: "Deployment web: 0 of 1 ready"}}
	failed := &desired.Failure{Reason: ReasonNameTaken, Message: "ConfigMap shop/web is someone else's"}
	for _, c := range []struct {
		name  string
		obs   Observation
		st    desired.Status
		state string
		want  map[string]string // type → status/reason
		msg   string            // of Ready
	}{
		{"ready", Observation{}, ready, stateActive, map[string]string{
			kroInstanceManaged: "True/Managed", kroGraphResolved: "True/Resolved", kroResourcesReady: "True/AllResourcesReady", ConditionReady: "True/Ready"}, ""},
		{"waiting", Observation{}, waiting, stateInProgress, map[string]string{
			kroInstanceManaged: "True/Managed", kroGraphResolved: "True/Resolved", kroResourcesReady: "False/NotReady", ConditionReady: "False/NotReady"},
			"awaiting resource readiness: Deployment web: 0 of 1 ready"},
		{"a name taken", Observation{Observation: desired.Observation{Failure: failed}}, ready, stateError, map[string]string{
			kroInstanceManaged: "True/Managed", kroGraphResolved: "True/Resolved", kroResourcesReady: "False/NameTaken", ConditionReady: "False/NameTaken"},
			"resource error: ConfigMap shop/web is someone else's"},
		{"unrenderable", Observation{Observation: desired.Observation{Failure: &desired.Failure{Reason: "InvalidSpec", Message: "spec.port: no such field"}}, Unresolved: true},
			ready, stateError, map[string]string{
				kroInstanceManaged: "True/Managed", kroGraphResolved: "False/ResolutionFailed", kroResourcesReady: "Unknown/NotResolved", ConditionReady: "False/ResolutionFailed"},
			"InvalidSpec: spec.port: no such field"},
		{"finalizer not written", Observation{Unmanaged: "forbidden"}, ready, stateActive, map[string]string{
			kroInstanceManaged: "False/ManagementFailed", kroGraphResolved: "True/Resolved", kroResourcesReady: "True/AllResourcesReady", ConditionReady: "False/ManagementFailed"},
			"kro's finalizer and labels not written: forbidden"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.obs.Now = t0
			out, err := composeKro(p(nil), c.obs, c.st)
			if err != nil {
				t.Fatal(err)
			}
			if out["state"] != c.state {
				t.Errorf("state = %v, want %s", out["state"], c.state)
			}
			st := decodeStatus(t, out)
			var types []string
			for _, cond := range st.Conditions {
				types = append(types, cond.Type)
				if cond.ObservedGeneration != 4 {
					t.Errorf("%s: observedGeneration %d, want 4", cond.Type, cond.ObservedGeneration)
				}
				if cond.Type == ConditionReady && cond.Message != c.msg {
					t.Errorf("Ready message %q, want %q", cond.Message, c.msg)
				}
			}
			if diff := cmp.Diff([]string{kroInstanceManaged, kroGraphResolved, kroResourcesReady, ConditionReady}, types); diff != "" {
				t.Errorf("condition types (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.want, reasons(st)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}

	// kstatus's conditions of an earlier status are dropped; a condition
	// whose status holds keeps its transition time.
	first, err := composeKro(p(nil), Observation{Observation: desired.Observation{Now: t0}}, waiting)
	if err != nil {
		t.Fatal(err)
	}
	first["conditions"] = append(first["conditions"].([]any), map[string]any{"type": ConditionStalled, "status": "False",
		"reason": "NoError", "message": "", "lastTransitionTime": "2026-11-30T09:00:00Z"})
	second, err := composeKro(p(first), Observation{Observation: desired.Observation{Now: t0.Add(time.Hour)}}, ready)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Time{}
	for _, c := range decodeStatus(t, second).Conditions {
		got[c.Type] = c.LastTransitionTime.Time
	}
	want := map[string]time.Time{kroInstanceManaged: t0, kroGraphResolved: t0, kroResourcesReady: t0.Add(time.Hour), ConditionReady: t0.Add(time.Hour)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transition times (-want +got):\n%s", diff)
	}
	if s := stalledOf(second); len(s) != 0 {
		t.Errorf("stalledOf an ACTIVE instance = %v, want none", s)
	}
}

// TestManageOps: the patch puts on only what the instance lacks, against
// the resourceVersion read; none when it has it all.
func TestManageOps(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"kro.run/owned": "true", "kro.run/resource-graph-definition-name": "greeting"}
	u := statusParent(map[string]any{}, nil)
	u.SetResourceVersion("7")
	got := manageOps(u, labels, "kro.run/finalizer")
	want := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: "u1"}, {Op: "replace", Path: "/metadata/resourceVersion", Value: "7"},
		{Op: "add", Path: "/metadata/labels", Value: labels}, {Op: "add", Path: "/metadata/finalizers", Value: []string{"kro.run/finalizer"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a bare instance (-want +got):\n%s", diff)
	}
	u.SetLabels(map[string]string{"team": "a", "kro.run/owned": "true"})
	u.SetFinalizers([]string{"other/finalizer"})
	got = manageOps(u, labels, "kro.run/finalizer")
	want = append(want[:2:2], jsonPatchOp{Op: "add", Path: "/metadata/labels/kro.run~1resource-graph-definition-name", Value: "greeting"},
		jsonPatchOp{Op: "add", Path: "/metadata/finalizers/-", Value: "kro.run/finalizer"})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("an instance with other labels and finalizers (-want +got):\n%s", diff)
	}
	u.SetLabels(map[string]string{"team": "a", "kro.run/owned": "true", "kro.run/resource-graph-definition-name": "greeting"})
	u.SetFinalizers([]string{"other/finalizer", "kro.run/finalizer"})
	if got := manageOps(u, labels, "kro.run/finalizer"); got != nil {
		t.Errorf("an instance with everything: %v, want no patch", got)
	}
	if got := unholdOps(u, "kro.run/finalizer"); len(got) != 3 || got[2].Path != "/metadata/finalizers/1" {
		t.Errorf("unholdOps = %v, want the removal of /metadata/finalizers/1", got)
	}
}
