package engine

import (
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/resyncd/resyncd/desired"
)

// Condition types, in the kstatus convention.
const (
	// ConditionReady is True when nothing is pending and the renderer's
	// Readiness says the children do what the parent asks.
	ConditionReady = "Ready"
	// ConditionReconciling is True while writes are queued or the children
	// are still getting ready.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when a permanent error blocks progress.
	ConditionStalled = "Stalled"
)

// Withheld says why a parent's child writes are not made on purpose; empty:
// they are made.
type Withheld string

const (
	// WithheldPaused says the renderer's Policy has the parent paused.
	WithheldPaused Withheld = "paused"
	// WithheldWarn says the resource's mode is warn.
	WithheldWarn Withheld = "warn"
	// WithheldDisabled says the parent carries resyncd.io/reconcile: disabled.
	WithheldDisabled Withheld = "disabled"
)

// Held is a child that resyncd neither repairs nor prunes because it
// carries resyncd.io/reconcile: disabled.
type Held struct {
	// Object is Kind/namespace/name.
	Object string
	// Drifted says the child differs from what the parent renders.
	Drifted bool
}

// Observation is what the engine saw and did for one parent in a pass:
// what the parent's renderer is given, and what the engine builds the
// conditions from besides.
type Observation struct {
	desired.Observation
	// Pending counts the child writes that remain: deferred by the budget,
	// failed transiently, or withheld by warn mode or spec.paused.
	Pending int
	// Withheld says the pending writes are withheld on purpose, not
	// waiting.
	Withheld Withheld
	// Held are the children that carry resyncd.io/reconcile: disabled.
	Held []Held
	// Unmanaged says why an instance of kro's lacks kro's finalizer and
	// labels; Unresolved that its graph could not be rendered for it.
	Unmanaged  string
	Unresolved bool
}

// Compose is the whole status resyncd writes for parent: the renderer's
// fields, observedGeneration, and the Ready, Reconciling and Stalled
// conditions built from what the engine observed and the renderer's
// readiness verdict. A condition whose status did not change keeps its
// transition time. The engine owns the conditions, so that every kind of
// parent gets the same ones, and its Events follow them.
func Compose(parent *unstructured.Unstructured, obs Observation, st desired.Status) (map[string]any, error) {
	var old struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if raw, ok := parent.Object["status"].(map[string]any); ok {
		// Conditions that do not decode are replaced, not fatal.
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &old)
	}
	gen := parent.GetGeneration()
	conds := old.Conditions
	if obs.Failure == nil {
		obs.Failure = st.Failure
	}
	ready, reconciling, stalled := judge(obs, st.Readiness)
	for _, c := range []metav1.Condition{ready, reconciling, stalled} {
		c.ObservedGeneration = gen
		c.LastTransitionTime = metav1.NewTime(obs.Now.UTC().Truncate(1e9))
		meta.SetStatusCondition(&conds, c) // keeps the old transition time if the status is unchanged
	}
	out := maps.Clone(st.Fields)
	if out == nil {
		out = map[string]any{}
	}
	out["observedGeneration"] = gen
	list := make([]any, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return nil, fmt.Errorf("%s/%s: status: %w", parent.GetNamespace(), parent.GetName(), err)
		}
		list[i] = m
	}
	out["conditions"] = list
	return out, nil
}

// judge returns the Ready, Reconciling and Stalled conditions, without
// times and generations.
func judge(obs Observation, r desired.Readiness) (ready, reconciling, stalled metav1.Condition) {
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
					fmt.Sprintf("%d child writes needed; the parent is paused (spec.paused), so resyncd does not make them", obs.Pending)),
				cond(ConditionReconciling, metav1.ConditionFalse, "Paused", "The parent is paused (spec.paused)"), stalled
		case WithheldWarn:
			return cond(ConditionReady, metav1.ConditionFalse, "Drifted",
					fmt.Sprintf("%d child writes needed; the resource is in warn mode, so resyncd does not make them", obs.Pending)),
				cond(ConditionReconciling, metav1.ConditionFalse, "WarnMode", "The resource is in warn mode"), stalled
		case WithheldDisabled:
			return cond(ConditionReady, metav1.ConditionFalse, "Drifted",
					fmt.Sprintf("%d child writes needed; the parent has %s: %s, so resyncd does not make them", obs.Pending, desired.AnnotationReconcile, desired.Disabled)),
				cond(ConditionReconciling, metav1.ConditionFalse, "ReconcileDisabled", desired.AnnotationReconcile+" is "+desired.Disabled), stalled
		}
		msg := fmt.Sprintf("%d child writes queued for the next pass", obs.Pending)
		return cond(ConditionReady, metav1.ConditionFalse, "WritesPending", msg),
			cond(ConditionReconciling, metav1.ConditionTrue, "WritesPending", msg), stalled
	}
	if held := heldDrifted(obs.Held); held != "" {
		msg := "Drifted children are held by " + desired.AnnotationReconcile + ": " + desired.Disabled + " and not repaired: " + held
		return cond(ConditionReady, metav1.ConditionFalse, "ChildHeld", msg),
			cond(ConditionReconciling, metav1.ConditionFalse, "ChildHeld", msg), stalled
	}
	if !r.Ready {
		return cond(ConditionReady, metav1.ConditionFalse, r.Reason, r.Message),
			cond(ConditionReconciling, metav1.ConditionTrue, r.Reason, r.Message), stalled
	}
	msg := r.Message
	if len(obs.Held) > 0 {
		msg += "; held by " + desired.AnnotationReconcile + ": " + desired.Disabled + " (in sync, not repaired if changed): " + heldNames(obs.Held)
	}
	return cond(ConditionReady, metav1.ConditionTrue, r.Reason, msg),
		cond(ConditionReconciling, metav1.ConditionFalse, "Reconciled", "Every child is applied"), stalled
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
