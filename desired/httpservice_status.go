package desired

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Condition types, in the kstatus convention.
const (
	// ConditionReady is True when every child is applied and the Deployment
	// has its desired replicas ready.
	ConditionReady = "Ready"
	// ConditionReconciling is True while writes are queued or children are
	// rolling out.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when a permanent error blocks progress.
	ConditionStalled = "Stalled"
)

// Withheld values of Observation.
const (
	// WithheldPaused: spec.paused is true.
	WithheldPaused = "paused"
	// WithheldWarn: the resource's mode is warn.
	WithheldWarn = "warn"
	// WithheldDisabled: the parent carries resyncd.io/reconcile: disabled.
	WithheldDisabled = "disabled"
)

type httpServiceStatus struct {
	ObservedGeneration int64              `json:"observedGeneration"`
	Replicas           int32              `json:"replicas"`
	ReadyReplicas      int32              `json:"readyReplicas"`
	URL                string             `json:"url,omitempty"`
	LastAppliedTime    *metav1.Time       `json:"lastAppliedTime,omitempty"`
	Conditions         []metav1.Condition `json:"conditions"`
}

// deploymentStatus is the part of a Deployment's status readiness needs.
type deploymentStatus struct {
	ObservedGeneration  int64 `json:"observedGeneration"`
	Replicas            int32 `json:"replicas"`
	UpdatedReplicas     int32 `json:"updatedReplicas"`
	ReadyReplicas       int32 `json:"readyReplicas"`
	AvailableReplicas   int32 `json:"availableReplicas"`
	UnavailableReplicas int32 `json:"unavailableReplicas"`
}

// Status implements Renderer.
func (HTTPService) Status(parent *unstructured.Unstructured, obs Observation) (map[string]any, error) {
	var old httpServiceStatus
	if raw, ok := parent.Object["status"].(map[string]any); ok {
		// A status that does not decode is replaced, not fatal.
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &old)
	}
	gen := parent.GetGeneration()
	st := httpServiceStatus{ObservedGeneration: gen, LastAppliedTime: old.LastAppliedTime, Conditions: old.Conditions}
	if obs.Applied {
		t := metav1.NewTime(obs.Now.UTC().Truncate(1e9))
		st.LastAppliedTime = &t
	}
	spec, specErr := parseHTTPService(parent)
	if specErr == nil {
		st.URL = serviceURL(parent, spec)
	}
	dep, hasDep := findChild(obs.Children, "Deployment", parent.GetName())
	var ds deploymentStatus
	if hasDep {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(dep.Status, &ds)
		st.Replicas, st.ReadyReplicas = ds.Replicas, ds.ReadyReplicas
	}

	ready, reconciling, stalled := judge(parent, spec, obs, dep, hasDep, ds)
	for _, c := range []metav1.Condition{ready, reconciling, stalled} {
		c.ObservedGeneration = gen
		c.LastTransitionTime = metav1.NewTime(obs.Now.UTC().Truncate(1e9))
		meta.SetStatusCondition(&st.Conditions, c) // keeps the old transition time if the status is unchanged
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: status: %w", parent.GetNamespace(), parent.GetName(), err)
	}
	return out, nil
}

// judge returns the Ready, Reconciling and Stalled conditions, without
// times and generations.
func judge(parent *unstructured.Unstructured, spec *httpServiceSpec, obs Observation, dep Child, hasDep bool, ds deploymentStatus) (ready, reconciling, stalled metav1.Condition) {
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	if f := obs.Failure; f != nil {
		return cond(ConditionReady, metav1.ConditionFalse, "Stalled", "Blocked by a permanent error; see the Stalled condition"),
			cond(ConditionReconciling, metav1.ConditionFalse, "Stalled", "resyncd cannot make progress until the error is fixed"),
			cond(ConditionStalled, metav1.ConditionTrue, f.Reason, f.Message)
	}
	stalled = cond(ConditionStalled, metav1.ConditionFalse, "NoError", "No permanent error")
	if obs.Pending > 0 {
		switch obs.Withheld {
		case WithheldPaused:
			return cond(ConditionReady, metav1.ConditionFalse, "Drifted",
					fmt.Sprintf("%d child writes needed; spec.paused is true, so resyncd does not make them", obs.Pending)),
				cond(ConditionReconciling, metav1.ConditionFalse, "Paused", "spec.paused is true"), stalled
		case WithheldWarn:
			return cond(ConditionReady, metav1.ConditionFalse, "Drifted",
					fmt.Sprintf("%d child writes needed; the resource is in warn mode, so resyncd does not make them", obs.Pending)),
				cond(ConditionReconciling, metav1.ConditionFalse, "WarnMode", "The resource is in warn mode"), stalled
		case WithheldDisabled:
			return cond(ConditionReady, metav1.ConditionFalse, "Drifted",
					fmt.Sprintf("%d child writes needed; the parent has %s: %s, so resyncd does not make them", obs.Pending, AnnotationReconcile, Disabled)),
				cond(ConditionReconciling, metav1.ConditionFalse, "ReconcileDisabled", AnnotationReconcile+" is "+Disabled), stalled
		}
		msg := fmt.Sprintf("%d child writes queued for the next pass", obs.Pending)
		return cond(ConditionReady, metav1.ConditionFalse, "WritesPending", msg),
			cond(ConditionReconciling, metav1.ConditionTrue, "WritesPending", msg), stalled
	}
	if held := heldDrifted(obs.Held); held != "" {
		msg := "Drifted children are held by " + AnnotationReconcile + ": " + Disabled + " and not repaired: " + held
		return cond(ConditionReady, metav1.ConditionFalse, "ChildHeld", msg),
			cond(ConditionReconciling, metav1.ConditionFalse, "ChildHeld", msg), stalled
	}
	idle := cond(ConditionReconciling, metav1.ConditionFalse, "Reconciled", "Every child is applied")
	if !hasDep {
		msg := fmt.Sprintf("Deployment %s/%s does not exist yet", parent.GetNamespace(), parent.GetName())
		return cond(ConditionReady, metav1.ConditionFalse, "DeploymentMissing", msg),
			cond(ConditionReconciling, metav1.ConditionTrue, "DeploymentMissing", msg), stalled
	}
	if ds.ObservedGeneration < dep.Generation {
		msg := fmt.Sprintf("The deployment controller has not processed Deployment %s/%s generation %d yet (status.observedGeneration %d); "+
			"if this lasts, check that kube-controller-manager is running", parent.GetNamespace(), parent.GetName(), dep.Generation, ds.ObservedGeneration)
		return cond(ConditionReady, metav1.ConditionFalse, "WaitingForController", msg),
			cond(ConditionReconciling, metav1.ConditionTrue, "WaitingForController", msg), stalled
	}
	want := ds.Replicas // autoscaled: whatever the autoscaler asked for
	if spec != nil && spec.Autoscaling == nil {
		want = 1
		if spec.Replicas != nil {
			want = *spec.Replicas
		}
	}
	if ds.UpdatedReplicas < want || ds.Replicas > ds.UpdatedReplicas || ds.AvailableReplicas < want || ds.ReadyReplicas < want {
		msg := fmt.Sprintf("Deployment %s/%s is rolling out: %d of %d replicas updated, %d ready, %d available",
			parent.GetNamespace(), parent.GetName(), ds.UpdatedReplicas, want, ds.ReadyReplicas, ds.AvailableReplicas)
		return cond(ConditionReady, metav1.ConditionFalse, "RollingOut", msg),
			cond(ConditionReconciling, metav1.ConditionTrue, "RollingOut", msg), stalled
	}
	msg := fmt.Sprintf("%d of %d replicas ready", ds.ReadyReplicas, want)
	if len(obs.Held) > 0 {
		msg += "; held by " + AnnotationReconcile + ": " + Disabled + " (in sync, not repaired if changed): " + heldNames(obs.Held)
	}
	return cond(ConditionReady, metav1.ConditionTrue, "Available", msg), idle, stalled
}

// heldDrifted names the drifted held children, or is empty.
func heldDrifted(held []Held) string {
	var names []string
	for _, h := range held {
		if h.Drifted {
			names = append(names, h.Object)
		}
	}
	return strings.Join(names, ", ")
}

func heldNames(held []Held) string {
	names := make([]string, len(held))
	for i, h := range held {
		names[i] = h.Object
	}
	return strings.Join(names, ", ")
}

func findChild(children []Child, kind, name string) (Child, bool) {
	for _, c := range children {
		if c.Kind == kind && c.Name == name {
			return c, true
		}
	}
	return Child{}, false
}
