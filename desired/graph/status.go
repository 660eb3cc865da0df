package graph

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/resyncd/resyncd/desired"
)

// Status implements desired.Renderer: the graph's status fields, each
// evaluated against the parent and its live children (a field whose
// expression needs data not there yet is left out; one whose expression
// fails is left out and reported as the status's Failure), and readiness: every
// included resource exists and is ready by its readyWhen or, without one,
// by kstatus's rules.
func (r *Renderer) Status(parent *unstructured.Unstructured, obs desired.Observation) (desired.Status, error) {
	if obs.Failure != nil && obs.Failure.Reason == ReasonCostExceeded {
		// Evaluating again would spend the budget again: keep what was shown.
		return desired.Status{Fields: r.previous(parent)}, nil
	}
	ev := r.evaluation(parent, obs.Children, obs.External)
	for _, res := range r.resources {
		var err error
		if res.collection() {
			_, err = ev.expand(res, false)
		} else {
			_, err = ev.resolve(res, false)
		}
		if err != nil {
			return desired.Status{Fields: r.previous(parent), Readiness: readinessOf(err)}, nil
		}
	}
	fields := map[string]any{}
	var failure *desired.Failure
	if r.status != nil {
		fields = runtime.DeepCopyJSONValue(r.status.value).(map[string]any)
		for _, s := range r.status.slots {
			v, dep, err := ev.fill(s)
			if err != nil && failure == nil {
				// Not data still to come: an expression that fails. The field
				// is left out, and the parent says why.
				var ie *desired.InvalidError
				if errors.As(err, &ie) {
					failure = &desired.Failure{Reason: ie.Reason, Message: ie.Error()}
				} else {
					failure = &desired.Failure{Reason: "EvaluationFailed", Message: err.Error()}
				}
			}
			if err != nil || dep != "" {
				v = omit{}
			}
			set(fields, s.path, v)
		}
		fields = dropOmitted(fields).(map[string]any)
	}
	return desired.Status{Fields: fields, Readiness: ev.readiness(obs), Failure: failure}, nil
}

// previous is what the parent's status shows of the graph's fields.
func (r *Renderer) previous(parent *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	old, _ := parent.Object["status"].(map[string]any)
	if r.status == nil || old == nil {
		return out
	}
	for k := range r.status.value.(map[string]any) {
		if v, ok := old[k]; ok {
			out[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	return out
}

func readinessOf(err error) desired.Readiness {
	var ie *desired.InvalidError
	if errors.As(err, &ie) {
		return desired.Readiness{Reason: ie.Reason, Message: ie.Error()}
	}
	return desired.Readiness{Reason: "EvaluationFailed", Message: err.Error()}
}

// readiness judges the included resources in apply order and reports the
// first that is not ready.
func (ev *evaluation) readiness(obs desired.Observation) desired.Readiness {
	if len(obs.Waiting) > 0 {
		return desired.Readiness{Reason: obs.Waiting[0].Reason, Message: obs.Waiting[0].Message}
	}
	n := 0
	for _, res := range ev.r.resources {
		if ev.excluded[res.id] {
			continue
		}
		if w := ev.waits[res.id]; w != nil {
			return desired.Readiness{Reason: w.Reason, Message: w.Message}
		}
		if res.collection() {
			ready, items := ev.itemsReady(res)
			if ready != nil {
				return *ready
			}
			n += items
			continue
		}
		if res.external != nil {
			if rd, ok := ev.externalReadiness(res); !ok {
				return rd
			}
			n++
			continue
		}
		name := ev.names[res.id]
		c, ok := ev.live[ev.liveKey(res.kind, name.namespace, name.name)]
		if !ok || !sameGroup(c, res) {
			return desired.Readiness{Reason: upper(res.id) + "Missing", Message: fmt.Sprintf("%s %s does not exist yet", res.kind, name)}
		}
		if ready, why := ev.ready(res, c); !ready {
			return desired.Readiness{Reason: upper(res.id) + "NotReady", Message: fmt.Sprintf("%s %s: %s", res.kind, name, why)}
		}
		n++
	}
	return desired.Readiness{Ready: true, Reason: "Ready", Message: fmt.Sprintf("%d of %d resources ready", n, n)}
}

// ready judges one live child: by its readyWhen, or by kstatus.
func (ev *evaluation) ready(res *resource, c desired.Child) (bool, string) {
	if len(res.readyWhen) == 0 {
		obj := c.Object
		if obj == nil {
			return true, ""
		}
		st, err := status.Compute(&unstructured.Unstructured{Object: obj})
		if err != nil {
			return false, err.Error()
		}
		if st.Status != status.CurrentStatus {
			return false, fmt.Sprintf("%s: %s", st.Status, st.Message)
		}
		return true, ""
	}
	return ev.readyWhen(res)
}

// readyWhen evaluates the readyWhen of res: ready while all hold.
func (ev *evaluation) readyWhen(res *resource) (bool, string) {
	for _, e := range res.readyWhen {
		v, err := ev.eval(e)
		if err != nil {
			return false, fmt.Sprintf("readyWhen ${%s}: %v", e.src, err)
		}
		if b, ok := v.Value().(bool); !ok || !b {
			return false, fmt.Sprintf("readyWhen ${%s} is %v", e.src, v.Value())
		}
	}
	return true, ""
}

func upper(id string) string { return strings.ToUpper(id[:1]) + id[1:] }
