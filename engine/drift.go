package engine

import (
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Drift reasons, the values of the reason label of resyncd_drift_total.
const (
	reasonMissing  = "missing"
	reasonChanged  = "changed"
	reasonOrphaned = "orphaned"
)

// planHeld books live, a child with resyncd.io/reconcile: disabled: its
// drift is counted and shown in the parent's status, and nothing is
// written.
func (e *Engine) planHeld(rs *resourceState, j *job, k childKey, live *liveChild, d *unstructured.Unstructured,
	norm map[string]any, drifted bool, rep *ResourceReport) {
	j.children = append(j.children, live)
	j.more().held = append(j.rare().held, Held{Object: k.String(), Drifted: drifted})
	if !drifted {
		rep.count(k.Kind, stateInSync)
		return
	}
	rep.count(k.Kind, stateDrifted)
	e.countDrift(rs, k.Kind, reasonChanged)
	e.noteDrift(rep, Drift{Object: k.String(), Reason: reasonChanged, Live: e.liveFields(live, d), Desired: norm})
}

// kept is d if the engine keeps whole objects (`resyncd diff`); otherwise
// nil: a plan holds fingerprints, and materialize renders the parent again
// when its writes are made, so that a pass with thousands of writes ahead
// does not hold every rendered child at once.
func (e *Engine) kept(d *unstructured.Unstructured) *unstructured.Unstructured {
	if e.keepFields {
		return d
	}
	return nil
}

// keptNorm is kept for the normalized form the report shows.
func (e *Engine) keptNorm(m map[string]any) map[string]any {
	if e.keepFields {
		return m
	}
	return nil
}

// noteDrift keeps d in the report when the engine keeps whole objects (for
// `resyncd diff`); a daemon's passes keep only counts, so that a cold start
// over thousands of parents does not hold every rendered child at once.
func (e *Engine) noteDrift(rep *ResourceReport, d Drift) {
	if e.keepFields {
		rep.Drifts = append(rep.Drifts, d)
	}
}

// liveFields returns, for the report, what live holds at the fields that
// desired sets (all the fields resyncd owns when desired is nil); nil unless
// the engine keeps whole objects.
func (e *Engine) liveFields(live *liveChild, desired *unstructured.Unstructured) map[string]any {
	if live.object() == nil {
		return nil
	}
	var m map[string]any
	var err error
	if desired != nil {
		m, err = e.owner.project(live.object(), desired)
	} else {
		m, _, err = e.owner.owned(live.object())
	}
	if err != nil {
		e.log.Debug("Cannot show live fields", zap.String("object", live.key.String()), zap.Error(err))
	}
	return m
}

// nextDrift is the record of k after this pass found it drifted too.
func nextDrift(rs *resourceState, k childKey, now time.Time) driftRecord {
	rec, ok := rs.drift[k]
	if !ok {
		return driftRecord{since: now, passes: 1}
	}
	rec.passes++
	if rs.mem.repaired[k] {
		rec.fights++
	} else {
		rec.fights = 0
	}
	return rec
}

func (e *Engine) countDrift(rs *resourceState, kind, reason string) {
	if e.metrics != nil {
		e.metrics.drift.WithLabelValues(rs.cluster, rs.name, kind, reason).Inc()
	}
}
