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

// recordTransitions emits an Event when the parent's Stalled condition
// becomes True (or changes reason) and when Ready becomes True: on
// transitions only, never once per pass for the same state.
func (e *Engine) recordTransitions(parent *unstructured.Unstructured, oldStatus, newStatus map[string]any) {
	if e.events == nil {
		return
	}
	was, is := conditionOf(oldStatus, desired.ConditionStalled), conditionOf(newStatus, desired.ConditionStalled)
	if is["status"] == "True" && (was["status"] != "True" || was["reason"] != is["reason"]) {
		e.events.Eventf(parent, nil, corev1.EventTypeWarning, str(is["reason"]), "Apply", "%s", truncate(str(is["message"])))
	}
	was, is = conditionOf(oldStatus, desired.ConditionReady), conditionOf(newStatus, desired.ConditionReady)
	if is["status"] == "True" && was["status"] != "True" {
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
	for _, k := range j.fights {
		e.events.Eventf(j.parent, nil, corev1.EventTypeWarning, "DriftRecurring", "Repair",
			"%s was changed by another writer in %d passes in a row; resyncd puts it back once per pass. "+
				"To find the writer: kubectl get %s %s -n %s --show-managed-fields -o yaml",
			k, fightPasses, strings.ToLower(k.Kind), k.Name, k.Namespace)
		e.log.Warn("Drift recurring", zap.String("object", k.String()), zap.Int("passes", fightPasses))
	}
}
