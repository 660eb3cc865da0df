package engine

import (
	"strings"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/desired"
)

// maxNote is the API server's limit on an Event's note.
const maxNote = 1024

// recordTransitions emits an Event, and for Stalled a log line, when the
// parent's Stalled condition becomes True (or changes reason) and when
// Ready becomes True: on
// transitions only, never once per pass for the same state, and not again
// for a Stalled reason announced while the status could not be written.
func (e *Engine) recordTransitions(rs *resourceState, parent *unstructured.Unstructured, oldStatus, newStatus map[string]any) {
	was, is := stalledOf(oldStatus), stalledOf(newStatus)
	announced := rs.mem.announced[parent.GetUID()] == is["reason"]
	if is["status"] == "True" && (was["status"] != "True" || was["reason"] != is["reason"]) && !announced {
		e.log.Warn("Parent stalled", zap.String("parent", objectID(parent)), zap.String("reason", str(is["reason"])),
			zap.String("message", str(is["message"])))
		if e.events != nil {
			e.events.Eventf(parent, nil, corev1.EventTypeWarning, str(is["reason"]), "Apply", "%s", truncate(str(is["message"])))
		}
	}
	was, is = conditionOf(oldStatus, ConditionReady), conditionOf(newStatus, ConditionReady)
	if e.events != nil && is["status"] == "True" && was["status"] != "True" {
		e.events.Eventf(parent, nil, corev1.EventTypeNormal, "Ready", "Reconcile", "%s", truncate(str(is["message"])))
	}
}

func conditionOf(status map[string]any, typ string) map[string]any {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return map[string]any{}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func truncate(s string) string {
	if len(s) <= maxNote {
		return s
	}
	return s[:maxNote-3] + "..."
}

// recordFights emits one Warning Event per child that another writer has
// changed fightPasses passes in a row: resyncd puts it back once per pass,
// and only a person can find and stop the other writer.
func (e *Engine) recordFights(j *job) {
	if e.events == nil || j.withheld != "" {
		return
	}
	for _, k := range j.rare().fights {
		e.events.Eventf(j.parent, nil, corev1.EventTypeWarning, "DriftRecurring", "Repair",
			"%s was changed by another writer in %d passes in a row; resyncd puts it back once per pass. "+
				"To find the writer: kubectl get %s %s -n %s --show-managed-fields -o yaml",
			k, fightPasses, strings.ToLower(k.Kind), k.Name, k.Namespace)
		e.log.Warn("Drift recurring", zap.String("object", k.String()), zap.Int("passes", fightPasses))
	}
}

// announceStalled records the Stalled Event of a parent whose status
// could not be written (the status write was refused too, as when
// resyncd's permissions were cut): the status that would show the
// transition never changes, so the Event is recorded once per parent and
// reason and remembered from pass to pass instead.
func (e *Engine) announceStalled(rs *resourceState, j *job, f *desired.Failure) {
	if f == nil {
		return
	}
	parent := j.parent
	seen := rs.mem.announced[parent.GetUID()] == f.Reason
	j.learnt.announced = append(j.learnt.announced, announcement{parent: parent.GetUID(), reason: f.Reason})
	if !seen {
		e.log.Warn("Parent stalled", zap.String("parent", objectID(parent)), zap.String("reason", f.Reason), zap.String("message", f.Message))
		if e.events != nil {
			e.events.Eventf(parent, nil, corev1.EventTypeWarning, f.Reason, "Apply", "%s", truncate(f.Message))
		}
	}
}
