package engine

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// their resyncd.io/parent labels must then name p), or when nobody
// controls it and its resyncd.io/adopt annotation names p (AdoptValue):
// handed to one parent only, so that no other parent, of this kind or
// another, can take it as well. Outside p's namespace the labels must name
// p's namespace too (resyncd.io/parent-namespace), and the annotation
// (adoptValue): a parent of the same name in another tenant's namespace
// takes nothing.
func (c *liveChild) claimBy(p *unstructured.Unstructured, gk schema.GroupKind) claim {
	switch {
	case c.controller != "" && c.controller == p.GetUID():
		return claimMine
	case c.labelled && c.controller != "" && c.controllerKind() == gk && c.controllerName == p.GetName() && c.key.Namespace == p.GetNamespace():
		return claimPredecessor
	case c.controller != "":
		return claimTaken
	case c.labelled && (c.parentKind == "" || c.parentKind == desired.ParentKind(gk)) && (c.parentName == "" || c.parentName == p.GetName()) &&
		c.parentNS() == p.GetNamespace():
		return claimMine
	case !c.labelled && c.adopt() != "" && c.adopt() == adoptValue(gk, p, c.key.Namespace):
		return claimMine
	default:
		return claimTaken
	}
}

// adoptValue is the resyncd.io/adopt value that hands an object in
// namespace ns to p: desired.AdoptValue in p's own namespace; elsewhere
// Kind.group/namespace/name, naming p's namespace as well.
func adoptValue(gk schema.GroupKind, p *unstructured.Unstructured, ns string) string {
	if ns == p.GetNamespace() {
		return desired.AdoptValue(gk, p.GetName())
	}
	return desired.ParentKind(gk) + "/" + p.GetNamespace() + "/" + p.GetName()
}

// unowned says whether resyncd may write c for its parent but did not
// create it for that parent: it carries no controller ownerReference
// (handed over with resyncd.io/adopt, or left by a parent deleted with
// orphaning). resyncd never adds its ownerReference to such an object, so
// that deleting the parent does not delete it, and releases it rather
// than deleting it when no parent wants it: whoever could hand it over
// (patch it) gains no right to delete it.
func (c *liveChild) unowned() bool { return c.controller == "" }

// takenMessage says, for the Stalled condition, whose object c is and how
// the person who owns the parent can go on.
func takenMessage(c *liveChild, p *unstructured.Unstructured, gk schema.GroupKind) string {
	msg := fmt.Sprintf("%s exists and resyncd did not create it (%s); resyncd leaves it alone", c.key, c.managedBy())
	switch {
	case c.controller != "" || c.labelled:
		return msg + ". Rename the parent, or delete the object"
	case c.adopt() == "true":
		return fmt.Sprintf("%s. Its %s annotation must name the one parent it hands the object to: set it to %q",
			msg, desired.AnnotationAdopt, adoptValue(gk, p, c.key.Namespace))
	case c.adopt() != "":
		return fmt.Sprintf("%s. Its %s annotation is %q, which names another parent: rename the parent, delete the object, or set the annotation to %q to hand it to this one",
			msg, desired.AnnotationAdopt, c.adopt(), adoptValue(gk, p, c.key.Namespace))
	default:
		return fmt.Sprintf("%s. Rename the parent, delete the object, or annotate it %s=%s to hand it over",
			msg, desired.AnnotationAdopt, adoptValue(gk, p, c.key.Namespace))
	}
}

// managedBy names who manages c: its controller, else its field managers.
func (c *liveChild) managedBy() string {
	switch {
	case c.controller != "":
		return fmt.Sprintf("controlled by %s %s", c.controllerKind().Kind, c.controllerName)
	case len(c.managers()) > 0:
		return "field managers: " + strings.Join(c.managers(), ", ")
	case !c.labelled:
		return "no " + desired.LabelManagedBy + "=" + desired.ManagedByValue + " label"
	default:
		return "it belongs to " + c.parentKind + " " + c.parentName
	}
}

// uncontrolledOrphan says whether c is a child of a parent of kind gk that
// carries no controller ownerReference and whose parent is gone.
func (c *liveChild) uncontrolledOrphan(gk schema.GroupKind, hasParent func(namespaceName string) bool) bool {
	return c.labelled && c.controller == "" && c.parentKind == desired.ParentKind(gk) && c.parentName != "" &&
		!hasParent(c.parentNS()+"/"+c.parentName)
}

// withoutOwnerReference is d without the controller ownerReference to p,
// for an object resyncd writes but does not own (liveChild.unowned).
func withoutOwnerReference(d *unstructured.Unstructured, p *unstructured.Unstructured) {
	var refs []metav1.OwnerReference
	for _, r := range d.GetOwnerReferences() {
		if r.UID != p.GetUID() {
			refs = append(refs, r)
		}
	}
	d.SetOwnerReferences(refs)
}

// wasTaken says whether the last pass found k's name taken.
func (rs *resourceState) wasTaken(k childKey) bool { return rs.mem.taken[k] }

// blockage is why a child is not written: the Stalled reason of the
// child at the root (ReasonNameTaken, or a refusal's), and whether it is
// not that child but one that refers to it.
type blockage struct {
	reason    string
	dependent bool
}

// blockedBy returns the child of blocked that d refers to, or nil: one of
// its needs (the references its renderer declares), or an object that d
// names by kind and name anywhere in its content, as a
// HorizontalPodAutoscaler's scaleTargetRef does — a template may spell a
// name out rather than refer to the child that has it.
func blockedBy(d *unstructured.Unstructured, needs []childKey, blocked map[childKey]blockage) *childKey {
	if len(blocked) == 0 {
		return nil
	}
	for i := range needs {
		if _, ok := blocked[needs[i]]; ok {
			return &needs[i]
		}
	}
	if d == nil {
		return nil
	}
	for k := range blocked {
		if k.Namespace == d.GetNamespace() && namesObject(d.Object, k) {
			return &k
		}
	}
	return nil
}

// namesObject says whether v holds, at any depth, a reference to k: an object
// with k's kind and name, and k's group if it gives an apiVersion.
func namesObject(v any, k childKey) bool {
	switch x := v.(type) {
	case map[string]any:
		if x["kind"] == k.Kind && x["name"] == k.Name {
			av, ok := x["apiVersion"].(string)
			if !ok || groupOf(av) == k.Group {
				return true
			}
		}
		for _, e := range x {
			if namesObject(e, k) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if namesObject(e, k) {
				return true
			}
		}
	}
	return false
}

// refersToBlocked says, for the Stalled condition, why k is not written:
// it refers to b, which is not written for why.
func refersToBlocked(k, b childKey, why blockage) string {
	var what string
	switch {
	case why.dependent:
		what = "which is not written either"
	case why.reason == ReasonNamespaceNotAllowed:
		what = "whose namespace this resource does not allow children in"
	case why.reason == ReasonClusterScopedNotAllowed:
		what = "which is cluster-scoped, and this resource does not allow cluster-scoped children"
	default:
		what = "which is not resyncd's"
	}
	return fmt.Sprintf("%s is not written either: it refers to %s, %s", k, b, what)
}
