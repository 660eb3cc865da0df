package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/resyncd/resyncd/desired"
)

// kroInstances is a renderer of the instances of a ResourceGraphDefinition
// served from the cluster, as kro serves them: each instance carries kro's
// labels and finalizer while it is served, and shows kro's conditions
// (InstanceManaged, GraphResolved, ResourcesReady, Ready) in place of
// Ready, Reconciling and Stalled.
type kroInstances interface {
	KroInstance() (labels map[string]string, finalizer string, ok bool)
}

// kroOf is what rs's renderer wants of each instance; ok false when it is
// not one of kro's.
func kroOf(rs *resourceState) (labels map[string]string, finalizer string, ok bool) {
	if k, is := rs.renderer.(kroInstances); is {
		return k.KroInstance()
	}
	return nil, "", false
}

// OpMetadata is the write of a parent's own metadata: kro's finalizer and
// labels put on an instance, or the finalizer taken off one being deleted.
const OpMetadata Operation = "metadata"

// manageOps is the JSON patch that puts on p the labels and finalizer it
// lacks, or nil when it has them all. It carries the resourceVersion the
// plan read, so nothing changed since is written over, and a patch, unlike
// an apply, never creates a parent deleted meanwhile.
func manageOps(p *unstructured.Unstructured, labels map[string]string, finalizer string) []jsonPatchOp {
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: string(p.GetUID())},
		{Op: "replace", Path: "/metadata/resourceVersion", Value: p.GetResourceVersion()}}
	have := p.GetLabels()
	if have == nil {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/labels", Value: labels})
	} else {
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			if v, ok := have[k]; !ok || v != labels[k] {
				ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/labels/" + escapePointer(k), Value: labels[k]})
			}
		}
	}
	switch fins := p.GetFinalizers(); {
	case slices.Contains(fins, finalizer):
	case len(fins) == 0:
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/finalizers", Value: []string{finalizer}})
	default:
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/finalizers/-", Value: finalizer})
	}
	if len(ops) == 2 {
		return nil
	}
	return ops
}

// unholdOps is the JSON patch that takes finalizer off p, or nil when p
// does not carry it.
func unholdOps(p *unstructured.Unstructured, finalizer string) []jsonPatchOp {
	i := slices.Index(p.GetFinalizers(), finalizer)
	if i < 0 {
		return nil
	}
	at := fmt.Sprintf("/metadata/finalizers/%d", i)
	return []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: string(p.GetUID())},
		{Op: "test", Path: at, Value: finalizer}, {Op: "remove", Path: at}}
}

// planRelease plans, for p, an instance of kro's being deleted, the
// removal of kro's finalizer: the garbage collector then deletes its
// children by their ownerReferences, as it does those of every parent.
// kro deletes them itself first, in the reverse of the graph's order; the
// garbage collector does not wait for one before the next.
func (pl *passPlan) planRelease(p *unstructured.Unstructured) {
	_, finalizer, ok := kroOf(pl.rs)
	if !ok {
		return
	}
	if ops := unholdOps(p, finalizer); ops != nil {
		j := &job{parent: p, since: pl.now}
		j.more().metadata, j.more().releasing = ops, true
		pl.jobs = append(pl.jobs, j)
	}
}

// writeMetadata makes j's write of its parent's metadata (OpMetadata),
// within the pass's budget; false if it was not made.
func (e *Engine) writeMetadata(ctx context.Context, r *run, j *job) bool {
	x := j.more()
	switch {
	case j.withheld != "" && !x.releasing:
		j.book(outcome{verb: OpMetadata, result: resultWithheld})
		x.unmanaged = "not written: " + string(j.withheld)
		return false
	case r.budget.Add(-1) < 0:
		j.book(outcome{verb: OpMetadata, result: resultDeferred})
		j.pending++
		x.unmanaged = "deferred to the next pass by the pass's write budget"
		return false
	}
	start := e.now()
	p := j.parent
	err := e.paced(ctx, isTransient, func() error {
		return e.writer.patch(ctx, r.rs.gvr, p.GetKind(), p.GetNamespace(), p.GetName(), x.metadata)
	})
	out := outcome{verb: OpMetadata, result: resultSuccess, err: err}
	switch {
	case err == nil:
		if x.releasing {
			e.log.Info("Finalizer removed", zap.String("parent", objectID(p)))
		}
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err):
		// Deleted, re-created, or changed since it was read (a test
		// failed): the next pass reads it again.
		out.result = resultSuperseded
		x.unmanaged = "changed since it was read; written at the next pass"
	default:
		out.result, out.transient = resultFailed, r.transient(err)
		x.unmanaged = apiMessage(err)
		if r.mayLog() {
			e.log.Warn("Parent metadata write failed", zap.String("parent", objectID(p)), zap.Error(err))
		}
	}
	j.book(out)
	if m := e.metrics; m != nil {
		m.applies.WithLabelValues(r.rs.cluster, r.rs.name, p.GetKind(), string(OpMetadata), out.result.label()).Inc()
		m.applyDuration.WithLabelValues(r.rs.cluster, string(OpMetadata)).Observe(e.now().Sub(start).Seconds())
	}
	return err == nil
}

// The condition types of kro's instances.
const (
	kroInstanceManaged = "InstanceManaged"
	kroGraphResolved   = "GraphResolved"
	kroResourcesReady  = "ResourcesReady"
)

// composeKro is the status of parent, an instance of kro's: Compose's,
// with kro's four conditions in place of Ready, Reconciling and Stalled,
// said from the same verdict, and kro's state. Ready is True when the
// other three are; otherwise it has the status, reason and message of the
// first that is not, as kro's does. There is no status.observedGeneration:
// each condition has it.
func composeKro(parent *unstructured.Unstructured, obs Observation, st desired.Status) (map[string]any, error) {
	out, err := Compose(parent, obs, st)
	if err != nil {
		return nil, err
	}
	state := kroStateOf(out, stateError)
	if obs.Failure == nil {
		obs.Failure = st.Failure
	}
	ready, _, stalled := judge(obs, st.Readiness)
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	managed := cond(kroInstanceManaged, metav1.ConditionTrue, "Managed", "instance is properly managed with finalizers and labels")
	if obs.Unmanaged != "" {
		managed = cond(kroInstanceManaged, metav1.ConditionFalse, "ManagementFailed", "kro's finalizer and labels not written: "+obs.Unmanaged)
	}
	resolved := cond(kroGraphResolved, metav1.ConditionTrue, "Resolved", "runtime graph created and all resources resolved")
	resources := cond(kroResourcesReady, metav1.ConditionTrue, "AllResourcesReady", "all resources are created and ready")
	switch {
	case stalled.Status == metav1.ConditionTrue && obs.Unresolved:
		resolved = cond(kroGraphResolved, metav1.ConditionFalse, "ResolutionFailed", stalled.Reason+": "+stalled.Message)
		resources = cond(kroResourcesReady, metav1.ConditionUnknown, "NotResolved", "the graph is not resolved for this instance")
	case stalled.Status == metav1.ConditionTrue:
		resources = cond(kroResourcesReady, metav1.ConditionFalse, stalled.Reason, "resource error: "+stalled.Message)
	case ready.Status != metav1.ConditionTrue:
		resources = cond(kroResourcesReady, metav1.ConditionFalse, "NotReady", "awaiting resource readiness: "+ready.Message)
	}
	top := cond(ConditionReady, metav1.ConditionTrue, "Ready", "")
	for _, c := range []metav1.Condition{managed, resolved, resources} {
		if c.Status != metav1.ConditionTrue {
			top = cond(ConditionReady, c.Status, c.Reason, c.Message)
			break
		}
	}
	var old struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if raw, ok := parent.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &old)
	}
	// Only kro's four: kro's own tests compare the list whole.
	conds := slices.DeleteFunc(old.Conditions, func(c metav1.Condition) bool {
		return !slices.Contains([]string{kroInstanceManaged, kroGraphResolved, kroResourcesReady, ConditionReady}, c.Type)
	})
	list := make([]any, 0, 4)
	for _, c := range []metav1.Condition{managed, resolved, resources, top} {
		c.ObservedGeneration = parent.GetGeneration()
		c.LastTransitionTime = metav1.NewTime(obs.Now.UTC().Truncate(1e9))
		meta.SetStatusCondition(&conds, c) // keeps the transition time of a status unchanged
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(meta.FindStatusCondition(conds, c.Type))
		if err != nil {
			return nil, fmt.Errorf("%s/%s: status: %w", parent.GetNamespace(), parent.GetName(), err)
		}
		list = append(list, m)
	}
	out["conditions"] = list
	out["state"] = state
	// As kro's: each condition has the generation, the status none of
	// its own, which a CRD kro made does not declare.
	delete(out, "observedGeneration")
	return out, nil
}

// stalledOf is the Stalled condition of a status: kstatus's, or for an
// instance of kro's, which has none, True with the reason and message of
// its Ready condition while its state is ERROR.
func stalledOf(status map[string]any) map[string]any {
	if c := conditionOf(status, ConditionStalled); len(c) > 0 || status["state"] != stateError {
		return c
	}
	ready := conditionOf(status, ConditionReady)
	return map[string]any{"status": "True", "reason": ready["reason"], "message": ready["message"]}
}

// kroManagers are the field managers kro's controller writes children
// with: its applies, and its labels.
var kroManagers = []string{"kro.run/applyset", "kro.run/labeller"}

// madeByKroFor says whether c is an object kro made for the instance p:
// labelled kro.run/owned with p's UID and kind, controlled by nobody and
// not resyncd's. An object labelled for another instance, or another kind
// of parent, is not.
func (c *liveChild) madeByKroFor(p *unstructured.Unstructured) bool {
	if c.rare == nil || c.controller != "" || c.labelled || c.rare.kroInstance == "" {
		return false
	}
	gvk := p.GroupVersionKind()
	return c.rare.kroInstance == string(p.GetUID()) && c.rare.kroKind == gvk.Kind+"."+gvk.Group
}

// dropKroManagers removes kro's field managers from u, a child of o's
// just taken over from kro and applied: resyncd owns what it sets, and
// what kro alone set (its ApplySet label, kro.run/kro-version) stays as a
// value nobody owns. The patch carries u's resourceVersion, so a write
// since is not undone; it fails then, and the next pass sees kro's
// managers again only as co-owners of values resyncd sets.
func (e *Engine) dropKroManagers(ctx context.Context, o *op, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var keep []metav1.ManagedFieldsEntry
	for _, mf := range u.GetManagedFields() {
		if !slices.Contains(kroManagers, mf.Manager) {
			keep = append(keep, mf)
		}
	}
	if len(keep) == len(u.GetManagedFields()) {
		return u, nil
	}
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: string(u.GetUID())},
		{Op: "replace", Path: "/metadata/resourceVersion", Value: u.GetResourceVersion()},
		{Op: "replace", Path: "/metadata/managedFields", Value: keep}}
	err := e.paced(ctx, isTransient, func() error {
		return e.writer.patch(ctx, o.gvr, o.key.Kind, o.key.Namespace, o.key.Name, ops)
	})
	if err != nil {
		e.log.Warn("kro's field managers not removed", zap.String("object", o.key.String()), zap.Error(err))
	}
	return u, nil
}
