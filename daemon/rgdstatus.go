package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/resyncd/resyncd/desired/graph"
)

// The conditions kro sets on a ResourceGraphDefinition, and their reasons,
// which `kubectl wait` and kro's users read. kro's fifth,
// GraphRevisionsResolved, stands for its GraphRevision objects, which
// resyncd has no counterpart of.
const (
	rgdGraphAccepted   = "GraphAccepted"
	rgdKindReady       = "KindReady"
	rgdControllerReady = "ControllerReady"
	rgdReady           = "Ready"
)

// rgdCondition is one condition of an RGD's status.
type rgdCondition struct {
	status          bool
	reason, message string
}

// rgdStatus is what resyncd says of an RGD: each condition as far as
// compiling it got, and its resources in apply order.
type rgdStatus struct {
	conds        map[string]rgdCondition
	topological  []string
	dependencies [][]string
}

func (st *rgdStatus) set(t string, ok bool, reason, msg string) *rgdStatus {
	if st.conds == nil {
		st.conds = map[string]rgdCondition{}
	}
	st.conds[t] = rgdCondition{ok, reason, msg}
	return st
}

// invalid: the graph is refused, for err.
func (st *rgdStatus) invalid(err error) *rgdStatus {
	return st.set(rgdGraphAccepted, false, "InvalidResourceGraph", cleanMessage(err))
}

// kindFailed: the graph is valid, and its kind cannot be served, for err.
func (st *rgdStatus) kindFailed(err error) *rgdStatus {
	return st.set(rgdGraphAccepted, true, "Valid", "resource graph and schema are valid").set(rgdKindReady, false, "Failed", cleanMessage(err))
}

func (st *rgdStatus) kindReady(kind string) *rgdStatus {
	return st.set(rgdGraphAccepted, true, "Valid", "resource graph and schema are valid").
		set(rgdKindReady, true, "Ready", fmt.Sprintf("kind %s has been accepted and ready", kind))
}

func (st *rgdStatus) running(interval time.Duration) *rgdStatus {
	return st.set(rgdControllerReady, true, "Running", fmt.Sprintf("resyncd passes over the instances every %s", interval))
}

// order keeps the resources of p, in apply order, and what each reads.
func (st *rgdStatus) order(p graph.Picture) {
	for _, n := range p.Nodes {
		st.topological = append(st.topological, n.ID)
		st.dependencies = append(st.dependencies, n.Reads)
	}
}

// served: every condition holds.
func (st *rgdStatus) served() bool {
	for _, t := range []string{rgdGraphAccepted, rgdKindReady, rgdControllerReady} {
		if !st.conds[t].status {
			return false
		}
	}
	return true
}

// failing is the first condition that does not hold, and its type; ""
// when none is set False.
func (st *rgdStatus) failing() (string, rgdCondition) {
	for _, t := range []string{rgdGraphAccepted, rgdKindReady, rgdControllerReady} {
		if c, ok := st.conds[t]; ok && !c.status {
			return t, c
		}
	}
	return "", rgdCondition{}
}

// message is why the RGD is not served; "" when it is.
func (st *rgdStatus) message() string {
	if t, c := st.failing(); t != "" {
		return t + ": " + c.message
	}
	return ""
}

// cleanMessage is err's message without the lines of the YAML resyncd
// made of the RGD, one problem a line.
func cleanMessage(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = lineOf.ReplaceAllString(l, "$1: ")
	}
	return strings.Join(lines, "\n")
}

// object is the RGD's status field at generation, as kro writes it, with
// no lastTransitionTime: state, the conditions (the unset ones Unknown),
// and the resources that depend on others, in order, with what each
// depends on.
func (st *rgdStatus) object(generation int64) map[string]any {
	state := "Inactive"
	if st.served() {
		state = "Active"
	}
	var conds []any
	for _, t := range []string{rgdGraphAccepted, rgdKindReady, rgdControllerReady} {
		c, ok := st.conds[t]
		status, reason, msg := "False", c.reason, c.message
		switch {
		case !ok:
			status, reason, msg = "Unknown", "AwaitingReconciliation", "not reached: "+st.message()
		case c.status:
			status = "True"
		}
		conds = append(conds, condition(t, status, reason, msg, generation))
	}
	if st.served() {
		conds = append(conds, condition(rgdReady, "True", "Ready", "", generation))
	} else {
		// As kro's: the reason of the first condition that does not hold.
		reason := "NotReady"
		if t, c := st.failing(); t != "" {
			reason = c.reason
		}
		conds = append(conds, condition(rgdReady, "False", reason, st.message(), generation))
	}
	out := map[string]any{"state": state, "conditions": conds}
	if len(st.topological) > 0 {
		// As kro: resources lists only those that depend on others.
		order := make([]any, len(st.topological))
		var resources []any
		for i, id := range st.topological {
			order[i] = id
			if deps := st.dependencies[i]; len(deps) > 0 {
				list := make([]any, len(deps))
				for j, d := range deps {
					list[j] = map[string]any{"id": d}
				}
				resources = append(resources, map[string]any{"id": id, "dependencies": list})
			}
		}
		out["topologicalOrder"] = order
		if len(resources) > 0 {
			out["resources"] = resources
		}
	}
	return out
}

func condition(t, status, reason, msg string, generation int64) map[string]any {
	c := map[string]any{"type": t, "status": status, "reason": reason, "observedGeneration": generation}
	if msg != "" {
		c["message"] = msg
	}
	return c
}

// writeStatus applies want as the status of the RGD u, unless u has it
// already; a condition whose status did not change keeps its
// lastTransitionTime.
func (s *rgds) writeStatus(ctx context.Context, u *unstructured.Unstructured, want map[string]any) error {
	live, _, _ := unstructured.NestedMap(u.Object, "status")
	since := map[string]any{}
	liveConds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range liveConds {
		if m, ok := c.(map[string]any); ok {
			since[fmt.Sprint(m["type"])+"/"+fmt.Sprint(m["status"])] = m["lastTransitionTime"]
		}
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	status := map[string]any{}
	for k, v := range want {
		status[k] = v
	}
	var conds []any
	for _, c := range want["conditions"].([]any) {
		m := map[string]any{}
		for k, v := range c.(map[string]any) {
			m[k] = v
		}
		m["lastTransitionTime"] = now
		if t, ok := since[fmt.Sprint(m["type"])+"/"+fmt.Sprint(m["status"])]; ok && t != nil {
			m["lastTransitionTime"] = t
		}
		conds = append(conds, m)
	}
	status["conditions"] = conds
	if sameJSON(live, status, "lastIssuedRevision") {
		return nil
	}
	body, err := json.Marshal(map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": u.GetName()}, "status": status})
	if err != nil {
		return err
	}
	force := true
	_, err = s.dyn.Resource(rgdGVR).Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: s.cfg.FieldManager, Force: &force}, "status")
	return err
}

// sameJSON reports whether a and b are the same once made JSON, leaving
// out of a the fields named (kro's, which resyncd does not write).
func sameJSON(a, b map[string]any, leaveOut ...string) bool {
	a2 := map[string]any{}
	for k, v := range a {
		a2[k] = v
	}
	for _, k := range leaveOut {
		delete(a2, k)
	}
	ja, err1 := json.Marshal(a2)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}
