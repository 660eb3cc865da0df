package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/resyncd/resyncd/desired"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func statusParent(spec map[string]any, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resyncd.io/v1alpha1", "kind": "HttpService",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u1", "generation": int64(4)},
		"spec":     spec,
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func deploymentChild(generation int64, status map[string]any) desired.Child {
	return desired.Child{Kind: "Deployment", Name: "web", Generation: generation, Status: status}
}

// fullStatus is an HttpService's whole status: the renderer's fields and
// what Compose adds.
type fullStatus struct {
	ObservedGeneration int64              `json:"observedGeneration"`
	Replicas           int32              `json:"replicas"`
	ReadyReplicas      int32              `json:"readyReplicas"`
	URL                string             `json:"url,omitempty"`
	LastAppliedTime    *metav1.Time       `json:"lastAppliedTime,omitempty"`
	Conditions         []metav1.Condition `json:"conditions"`
}

// composed is the status resyncd writes: HTTPService's, composed.
func composed(p *unstructured.Unstructured, obs Observation) (map[string]any, error) {
	st, err := desired.HTTPService{}.Status(p, obs.Observation)
	if err != nil {
		return nil, err
	}
	return Compose(p, obs, st)
}

func decodeStatus(t *testing.T, m map[string]any) fullStatus {
	t.Helper()
	var st fullStatus
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// reasons returns type → "Status/Reason" of each condition.
func reasons(st fullStatus) map[string]string {
	out := map[string]string{}
	for _, c := range st.Conditions {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

func TestStatusConditions(t *testing.T) {
	t.Parallel()
	spec := map[string]any{"image": "nginx", "port": int64(8080), "replicas": int64(2)}
	available := map[string]any{"observedGeneration": int64(7), "replicas": int64(2), "updatedReplicas": int64(2),
		"readyReplicas": int64(2), "availableReplicas": int64(2)}
	tests := []struct {
		name string
		spec map[string]any
		obs  Observation
		want map[string]string
	}{
		{"available", spec, Observation{Observation: desired.Observation{Children: []desired.Child{deploymentChild(7, available)}}},
			map[string]string{"Ready": "True/Available", "Reconciling": "False/Reconciled", "Stalled": "False/NoError"}},
		{"no controller", spec, Observation{Observation: desired.Observation{Children: []desired.Child{deploymentChild(1, nil)}}},
			map[string]string{"Ready": "False/WaitingForController", "Reconciling": "True/WaitingForController", "Stalled": "False/NoError"}},
		{"rolling out", spec, Observation{Observation: desired.Observation{Children: []desired.Child{deploymentChild(7, map[string]any{
			"observedGeneration": int64(7), "replicas": int64(3), "updatedReplicas": int64(1), "readyReplicas": int64(2), "availableReplicas": int64(2)})}}},
			map[string]string{"Ready": "False/RollingOut", "Reconciling": "True/RollingOut", "Stalled": "False/NoError"}},
		{"missing", spec, Observation{},
			map[string]string{"Ready": "False/DeploymentMissing", "Reconciling": "True/DeploymentMissing", "Stalled": "False/NoError"}},
		{"writes pending", spec, Observation{Observation: desired.Observation{Children: []desired.Child{deploymentChild(7, available)}}, Pending: 2},
			map[string]string{"Ready": "False/WritesPending", "Reconciling": "True/WritesPending", "Stalled": "False/NoError"}},
		{"paused with drift", spec, Observation{Observation: desired.Observation{Children: []desired.Child{deploymentChild(7, available)}}, Pending: 1, Withheld: WithheldPaused},
			map[string]string{"Ready": "False/Drifted", "Reconciling": "False/Paused", "Stalled": "False/NoError"}},
		{"warn with drift", spec, Observation{Pending: 1, Withheld: WithheldWarn},
			map[string]string{"Ready": "False/Drifted", "Reconciling": "False/WarnMode", "Stalled": "False/NoError"}},
		{"parent reconcile disabled", spec, Observation{Pending: 2, Withheld: WithheldDisabled},
			map[string]string{"Ready": "False/Drifted", "Reconciling": "False/ReconcileDisabled", "Stalled": "False/NoError"}},
		{"held child drifted", spec, Observation{Observation: desired.Observation{Children: []desired.Child{deploymentChild(7, available)}}, Held: []Held{{Object: "Deployment/shop/web", Drifted: true}}},
			map[string]string{"Ready": "False/ChildHeld", "Reconciling": "False/ChildHeld", "Stalled": "False/NoError"}},
		{"held child in sync", spec, Observation{Observation: desired.Observation{Children: []desired.Child{deploymentChild(7, available)}}, Held: []Held{{Object: "Deployment/shop/web"}}},
			map[string]string{"Ready": "True/Available", "Reconciling": "False/Reconciled", "Stalled": "False/NoError"}},
		{"name taken", spec, Observation{Observation: desired.Observation{Failure: &desired.Failure{Reason: "NameTaken", Message: "Service/shop/web exists"}, Children: []desired.Child{deploymentChild(7, available)}}},
			map[string]string{"Ready": "False/Stalled", "Reconciling": "False/Stalled", "Stalled": "True/NameTaken"}},
		{"stalled", spec, Observation{Observation: desired.Observation{Failure: &desired.Failure{Reason: "Invalid", Message: "Deployment.apps \"web\" is invalid"}}},
			map[string]string{"Ready": "False/Stalled", "Reconciling": "False/Stalled", "Stalled": "True/Invalid"}},
		{"autoscaled counts what the autoscaler asked", map[string]any{"image": "nginx", "port": int64(80),
			"resources":   map[string]any{"requests": map[string]any{"cpu": "100m"}},
			"autoscaling": map[string]any{"maxReplicas": int64(5)}},
			Observation{Observation: desired.Observation{Children: []desired.Child{deploymentChild(7, map[string]any{"observedGeneration": int64(7),
				"replicas": int64(4), "updatedReplicas": int64(4), "readyReplicas": int64(4), "availableReplicas": int64(4)})}}},
			map[string]string{"Ready": "True/Available", "Reconciling": "False/Reconciled", "Stalled": "False/NoError"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obs.Now = t0
			m, err := composed(statusParent(tt.spec, nil), tt.obs)
			if err != nil {
				t.Fatal(err)
			}
			st := decodeStatus(t, m)
			if diff := cmp.Diff(tt.want, reasons(st)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			for _, c := range st.Conditions {
				if c.ObservedGeneration != 4 || c.Message == "" {
					t.Errorf("%s: observedGeneration %d, message %q", c.Type, c.ObservedGeneration, c.Message)
				}
			}
			if st.ObservedGeneration != 4 {
				t.Errorf("observedGeneration = %d, want 4", st.ObservedGeneration)
			}
		})
	}
}

// TestStatusStable: a second pass that changes nothing yields the same
// status, transition times and lastAppliedTime included, so no write.
func TestStatusStable(t *testing.T) {
	t.Parallel()
	spec := map[string]any{"image": "nginx", "port": int64(8080), "service": map[string]any{"port": int64(80)}}
	obs := Observation{Observation: desired.Observation{Now: t0, Applied: true, Children: []desired.Child{deploymentChild(1, nil)}}}
	first, err := composed(statusParent(spec, nil), obs)
	if err != nil {
		t.Fatal(err)
	}
	st := decodeStatus(t, first)
	if st.URL != "http://web.shop.svc:80" {
		t.Errorf("url = %q", st.URL)
	}
	if st.LastAppliedTime == nil || !st.LastAppliedTime.Time.Equal(t0) {
		t.Errorf("lastAppliedTime = %v, want %v", st.LastAppliedTime, t0)
	}

	later := Observation{Observation: desired.Observation{Now: t0.Add(time.Hour), Children: obs.Children}}
	second, err := composed(statusParent(spec, first), later)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("status changed on a pass that changed nothing (-first +second):\n%s", diff)
	}

	// A transition moves only the transition time of the conditions that changed.
	ready := Observation{Observation: desired.Observation{Now: t0.Add(2 * time.Hour), Children: []desired.Child{deploymentChild(1, map[string]any{
		"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)})}}}
	third, err := composed(statusParent(spec, second), ready)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Time{}
	for _, c := range decodeStatus(t, third).Conditions {
		got[c.Type] = c.LastTransitionTime.Time
	}
	want := map[string]time.Time{"Ready": t0.Add(2 * time.Hour), "Reconciling": t0.Add(2 * time.Hour), "Stalled": t0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transition times (-want +got):\n%s", diff)
	}
}

// TestStatusNamesHeldChild: a held child shows in the Ready message, in
// sync or not, with the annotation that holds it.
func TestStatusNamesHeldChild(t *testing.T) {
	t.Parallel()
	spec := map[string]any{"image": "nginx", "port": int64(8080)}
	available := map[string]any{"observedGeneration": int64(7), "replicas": int64(1), "updatedReplicas": int64(1),
		"readyReplicas": int64(1), "availableReplicas": int64(1)}
	for _, drifted := range []bool{false, true} {
		obs := Observation{Observation: desired.Observation{Now: t0, Children: []desired.Child{deploymentChild(7, available)}}, Held: []Held{{Object: "Service/shop/web", Drifted: drifted}}}
		m, err := composed(statusParent(spec, nil), obs)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range decodeStatus(t, m).Conditions {
			if c.Type == ConditionReady && (!strings.Contains(c.Message, "Service/shop/web") || !strings.Contains(c.Message, desired.AnnotationReconcile)) {
				t.Errorf("drifted=%v: Ready message %q does not name the held child and %s", drifted, c.Message, desired.AnnotationReconcile)
			}
		}
	}
}
