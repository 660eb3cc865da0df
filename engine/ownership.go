package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/resyncd/resyncd/desired"
)

// ReasonNameTaken is the Stalled reason of a parent that renders a child
// whose name an object resyncd may not write already has.
const ReasonNameTaken = "NameTaken"

// claim is what a parent may do with an existing object of a name it
// renders.
type claim int

const (
	// claimMine: resyncd made it for this parent, or its owner handed it
	// over with resyncd.io/adopt.
	claimMine claim = iota
	// claimPredecessor: resyncd made it for an earlier parent of the same
	// kind and name, since deleted; it is deleted, and made again.
	claimPredecessor
	// claimTaken: someone else's; never written.
	claimTaken
)

// claimBy says what parent p, of kind gk, may do with c. An object is the
// parent's when it carries resyncd's managed-by label and is controlled by
// p or by nobody (a parent deleted with orphaning leaves its children so;
// their resyncd.io/parent labels must then name p), or when it carries
// resyncd.io/adopt: "true".
func (c *liveChild) claimBy(p *unstructured.Unstructured, gk schema.GroupKind) claim {
	switch {
	case c.controller != "" && c.controller == p.GetUID():
		return claimMine
	case c.labelled && c.controller != "" && c.controllerGK == gk && c.controllerName == p.GetName():
		return claimPredecessor
	case c.adopt:
		return claimMine
	case c.labelled && c.controller == "" &&
		(c.parentKind == "" || c.parentKind == desired.ParentKind(gk)) && (c.parentName == "" || c.parentName == p.GetName()):
		return claimMine
	default:
		return claimTaken
	}
}

// takenMessage says, for the Stalled condition, whose object c is and how
// the person who owns the parent can go on.
func takenMessage(c *liveChild) string {
	return fmt.Sprintf("%s exists and resyncd did not create it (%s); resyncd leaves it alone. "+
		"Rename the parent, delete the object, or annotate it %s=true to hand it over", c.key, c.managedBy(), desired.AnnotationAdopt)
}

// managedBy names who manages c: its controller, else its field managers.
func (c *liveChild) managedBy() string {
	switch {
	case c.controller != "":
		return fmt.Sprintf("controlled by %s %s", c.controllerGK.Kind, c.controllerName)
	case len(c.managers) > 0:
		return "field managers: " + strings.Join(c.managers, ", ")
	case !c.labelled:
		return "no " + desired.LabelManagedBy + "=" + desired.ManagedByValue + " label"
	default:
		return "it belongs to " + c.parentKind + " " + c.parentName
	}
}

// identify reads who owns u: its labels, controller and switches, and,
// for an object read on its own, its field managers.
func (c *liveChild) identify(u *unstructured.Unstructured) {
	for _, ref := range u.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			c.controller, c.controllerGK, c.controllerName = ref.UID, schema.GroupKind{Group: groupOf(ref.APIVersion), Kind: ref.Kind}, ref.Name
		}
	}
	l := u.GetLabels()
	c.labelled = l[desired.LabelManagedBy] == desired.ManagedByValue
	c.parentKind, c.parentName = l[desired.LabelParentKind], l[desired.LabelParent]
	a := u.GetAnnotations()
	c.hold, c.keep, c.adopt = a[desired.AnnotationReconcile] == desired.Disabled, a[desired.AnnotationPrune] == desired.Disabled, a[desired.AnnotationAdopt] == "true"
}

// fieldManagers lists the managers of u's fields, each once.
func fieldManagers(u *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range u.GetManagedFields() {
		if !slices.Contains(out, mf.Manager) {
			out = append(out, mf.Manager)
		}
	}
	return out
}

// uncontrolledOrphan says whether c is a child resyncd made for a parent
// of kind gk that lost its ownerReference and whose parent is gone.
func (c *liveChild) uncontrolledOrphan(gk schema.GroupKind, parentNames map[string]bool) bool {
	return c.labelled && c.controller == "" && c.parentKind == desired.ParentKind(gk) && c.parentName != "" &&
		!parentNames[c.key.Namespace+"/"+c.parentName]
}

// wasTaken says whether the last pass found k's name taken.
func (rs *resourceState) wasTaken(k childKey) bool {
	rs.takenMu.Lock()
	defer rs.takenMu.Unlock()
	return rs.taken[k]
}

// noteTaken keeps, for the next pass, that k's name is taken.
func (rs *resourceState) noteTaken(k childKey) {
	rs.takenMu.Lock()
	rs.nextTaken[k] = true
	rs.takenMu.Unlock()
}

// errTaken says a create found the name taken; create has booked it.
var errTaken = errors.New("name taken")

// create makes o's missing child without ever writing over an object that
// is not the parent's: the apply carries createOnly, so if an object of
// the name exists the API server refuses it, and the object is read to
// see whose it is. If it is the parent's (its own child, made since the
// LIST, or one handed over with resyncd.io/adopt), it is applied as
// usual; otherwise the name is booked as taken, and nothing is written.
// When an earlier pass found the name taken, the object is read first,
// so that a taken name costs one read a pass and no refused write.
func (e *Engine) create(ctx context.Context, r *run, j *job, o *op) (*unstructured.Unstructured, error) {
	createOnlyRetriable := func(err error) bool { return isTransient(err) && !apierrors.IsConflict(err) }
	for try := 0; ; try++ {
		if !o.lookFirst || try > 0 {
			var result *unstructured.Unstructured
			err := e.paced(ctx, createOnlyRetriable, func() error {
				var err error
				result, err = e.writer.apply(ctx, o.gvr, o.desired, applyOptions{createOnly: true})
				return err
			})
			if !apierrors.IsConflict(err) || try > 0 {
				return result, err // a second conflict is a race: settled as transient
			}
		}
		u, err := e.writer.get(ctx, o.gvr, o.key.Kind, o.key.Namespace, o.key.Name)
		if apierrors.IsNotFound(err) {
			continue // freed since: create it
		}
		if err != nil {
			return nil, err
		}
		c := &liveChild{key: o.key, managers: fieldManagers(u)}
		c.identify(u)
		if c.claimBy(j.parent, j.parent.GroupVersionKind().GroupKind()) != claimMine {
			e.bookTaken(r, j, c)
			return nil, errTaken
		}
		if !c.labelled {
			e.log.Info("Adopting", zap.String("object", o.key.String()), zap.String("parent", objectID(j.parent)))
		}
		// The parent's own child that the LIST did not select (made by a
		// release before the parent-kind label, or since the LIST), or one
		// handed over: an update of the object as it is now.
		c.uid, c.resourceVersion = u.GetUID(), u.GetResourceVersion()
		o.kind, o.live = OpUpdate, c
		var result *unstructured.Unstructured
		err = e.paced(ctx, isTransient, func() error {
			var err error
			result, err = e.writer.apply(ctx, o.gvr, o.desired, applyOptions{})
			return err
		})
		return result, err
	}
}

// bookTaken records that c's name, which j's parent renders, is taken.
func (e *Engine) bookTaken(r *run, j *job, c *liveChild) {
	j.taken = append(j.taken, takenMessage(c))
	r.rs.noteTaken(c.key)
	r.add(func(rep *ResourceReport) { rep.missingWasTaken(c.key.Kind) })
}
