package engine

import (
	"reflect"
	"strings"

	"github.com/resyncd/resyncd/desired"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// status is the whole status p should show: the renderer's fields and
// readiness, composed with the conditions the engine owns.
func status(rs *resourceState, p *unstructured.Unstructured, obs Observation) (map[string]any, error) {
	st, err := rs.renderer.Status(p, obs.Observation)
	if err != nil {
		return nil, err
	}
	out, err := Compose(p, obs, st)
	if u, ok := rs.renderer.(undeclaredStatus); ok && err == nil {
		for _, f := range u.UndeclaredStatus() {
			delete(out, f)
		}
	}
	if _, _, ok := kroOf(rs); ok {
		out, err = composeKro(p, obs, st)
	}
	if k, ok := rs.renderer.(kroState); ok && err == nil && k.WritesState() && out["state"] == nil {
		out["state"] = kroStateOf(out, stateFailed)
	}
	return out, err
}

// kroState is a renderer whose parents show kro's status.state beside the
// conditions (a graph whose parent kind declares it).
type kroState interface {
	WritesState() bool
}

// The states of kro's instances that resyncd's conditions tell.
const (
	stateActive     = "ACTIVE"
	stateInProgress = "IN_PROGRESS"
	stateFailed     = "FAILED"
	// stateError is what kro (v0.9.4) says of an instance with any error;
	// it never writes FAILED.
	stateError = "ERROR"
)

// kroStateOf is kro's state of a parent whose status is st: ACTIVE when
// Ready, failed (FAILED for a graph file's parent, ERROR for an instance
// served as kro serves it) when Stalled, else IN_PROGRESS.
func kroStateOf(st map[string]any, failed string) string {
	conds, _ := st["conditions"].([]any)
	state := stateInProgress
	for _, c := range conds {
		m, _ := c.(map[string]any)
		switch {
		case m["type"] == ConditionStalled && m["status"] == "True":
			return failed
		case m["type"] == ConditionReady && m["status"] == "True":
			state = stateActive
		}
	}
	return state
}

// undeclaredStatus is a renderer that knows which of the fields Compose
// adds the parent kind's status schema does not declare (a graph typed by
// the API server's schemas): they are left out, since the API server
// refuses a status apply with a field it does not know. A CRD that kro
// generated declares conditions but no observedGeneration.
type undeclaredStatus interface {
	UndeclaredStatus() []string
}

// observe is what the status of j's parent is computed from.
func (e *Engine) observe(j *job) Observation {
	obs := Observation{Observation: desired.Observation{Now: e.now(), Failure: j.failure, Applied: j.applied, Waiting: j.rare().waiting,
		External: j.rare().external}, Pending: j.pending, Withheld: j.withheld, Held: j.rare().held,
		Unmanaged: j.rare().unmanaged, Unresolved: j.rare().unresolved}
	switch {
	case obs.Failure != nil:
	case len(j.rare().refused) > 0:
		msgs := make([]string, 0, len(j.rare().refused)+len(j.rare().taken))
		for _, r := range j.rare().refused {
			msgs = append(msgs, r.Message)
		}
		obs.Failure = &desired.Failure{Reason: j.rare().refused[0].Reason, Message: strings.Join(append(msgs, j.rare().taken...), "; ")}
	case len(j.rare().taken) > 0:
		obs.Failure = &desired.Failure{Reason: ReasonNameTaken, Message: strings.Join(j.rare().taken, "; ")}
	}
	for _, c := range j.children {
		obs.Children = append(obs.Children, c.summary())
	}
	return obs
}

// sameOn reports whether old holds every field of st with the same value,
// and none of the fields resyncd owns (owned) that st no longer has. Fields
// of old that other managers own are theirs, and not compared.
func sameOn(st, old map[string]any, owned []string) bool {
	for k, v := range st {
		if !reflect.DeepEqual(v, old[k]) {
			return false
		}
	}
	for _, k := range owned {
		if _, present := st[k]; !present {
			if _, ok := old[k]; ok {
				return false
			}
		}
	}
	return true
}
