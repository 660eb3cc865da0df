package desired

// This file is the contract between the engine and a renderer. A renderer
// (Renderer, below) is given a parent and what was LISTed of its children,
// and returns:
//   - its children's content (Render, a Graph), in apply order: never the
//     identity labels or the ownerReference, which the engine stamps
//     (Stamp), and from which it builds the one selector that reads them
//     (ChildSelector);
//   - the kinds of children it can make (ChildTypes), to read and prune,
//     and the fields of their live objects it reads (Keep);
//   - the children it cannot render yet because they wait for fields of
//     other children (Graph.Waiting): these are neither written nor pruned;
//   - its Policy: priority and whether the parent is paused;
//   - its Status: the status fields it owns and a Readiness verdict, given
//     what the engine saw of the pass (Observation); the engine
//     adds observedGeneration and the Ready, Reconciling and Stalled
//     conditions, which it owns (engine.Compose).
// It is pure: no request, no clock but Observation.Now. A spec that cannot
// be rendered is an *InvalidError: the parent is Stalled, nothing written.
// A renderer that reads objects it never writes implements
// ExternalRenderer as well (below); the engine reads them for it.
// Renderers are built in (HTTPService) or declared in a graph file
// (package graph).
// Renderers are found by name in a Registry.

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Labels resyncd puts on every child.
const (
	// LabelManagedBy selects the children resyncd LISTs and may prune.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "resyncd"
	// LabelName is the application name, the parent's name.
	LabelName = "app.kubernetes.io/name"
	// LabelParent is the parent's name; the only label selectors use.
	LabelParent = "resyncd.io/parent"
	// LabelParentKind is the parent's kind and group, as ParentKind spells
	// them: with LabelParent it names the parent of a child that has lost
	// its ownerReference.
	LabelParentKind = "resyncd.io/parent-kind"
	// LabelParentNamespace is the parent's namespace, on a child outside
	// it (in another namespace, or cluster-scoped): such a child carries no
	// ownerReference, since none can cross namespaces, and this label,
	// with LabelParent and LabelParentKind, names its parent instead.
	LabelParentNamespace = "resyncd.io/parent-namespace"
)

// Annotations that whoever controls an object sets to steer resyncd.
const (
	// AnnotationAdopt on an existing object that resyncd did not create
	// hands it to one parent, named by its value (AdoptValue): that parent,
	// if it renders an object of the name, takes it over; no other parent
	// may.
	AnnotationAdopt = "resyncd.io/adopt"
	// AnnotationReconcile set to "disabled" on a child holds it: resyncd
	// neither repairs nor prunes it. On a parent it withholds every write
	// of the parent's children, as spec.paused does.
	AnnotationReconcile = "resyncd.io/reconcile"
	// AnnotationPrune set to "disabled" on a child makes resyncd release it
	// instead of deleting it once no parent wants it.
	AnnotationPrune = "resyncd.io/prune"
	// Disabled is the value that turns AnnotationReconcile and
	// AnnotationPrune on.
	Disabled = "disabled"
)

// AnnotationCreated is the annotation, set to CreatedValue by resyncd
// alone, that marks a child resyncd created outside its parent's
// namespace, where no ownerReference can say so: such a child, while it
// carries the annotation as set by resyncd's field manager, is deleted
// when no parent wants it any more; any other child without an
// ownerReference (one handed over, one whose annotation was removed) is
// released. The engine sets it in the create, and keeps it in later
// applies only while the live object has it.
const (
	AnnotationCreated = "resyncd.io/created"
	// CreatedValue is AnnotationCreated's value.
	CreatedValue = "true"
)

// ChildSelector is the label selector of the children of parents of gk:
// what a pass LISTs, so that the children of another watched kind are
// never read.
func ChildSelector(gk schema.GroupKind) string {
	return LabelManagedBy + "=" + ManagedByValue + "," + LabelParentKind + "=" + ParentKind(gk)
}

// ChildLabels are the identity labels of every child of parent.
func ChildLabels(parent *unstructured.Unstructured) map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelParent: parent.GetName(),
		LabelParentKind: ParentKind(parent.GroupVersionKind().GroupKind())}
}

// Stamp gives every child of g its identity as a child of parent: the
// labels of ChildLabels, over the renderer's own, and the controller
// ownerReference to parent, in place of any other controller reference.
// A child outside the parent's namespace (Outside) gets no ownerReference
// to the parent — the garbage collector cannot follow one across
// namespaces, and a cluster-scoped object cannot have a namespaced owner —
// but LabelParentNamespace; resyncd prunes it itself. The engine stamps
// what every renderer returns.
func Stamp(g Graph, parent *unstructured.Unstructured) {
	labels := ChildLabels(parent)
	ref := OwnerReference(parent)
	for _, c := range g.Children {
		l := c.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		maps.Copy(l, labels)
		outside := Outside(c, parent)
		if outside {
			l[LabelParentNamespace] = parent.GetNamespace()
		}
		c.SetLabels(l)
		var refs []metav1.OwnerReference
		if !outside {
			refs = append(refs, ref)
		}
		for _, r := range c.GetOwnerReferences() {
			if (r.Controller == nil || !*r.Controller) && r.UID != ref.UID {
				refs = append(refs, r)
			}
		}
		c.SetOwnerReferences(refs)
	}
}

// Outside says whether child is not in parent's namespace: in another
// namespace, or cluster-scoped (no namespace).
func Outside(child, parent *unstructured.Unstructured) bool {
	return child.GetNamespace() != parent.GetNamespace()
}

// AdoptValue is the value of AnnotationAdopt that hands an object to the
// parent of kind gk and this name in the object's namespace:
// Kind.group/name, as LabelParentKind and LabelParent spell them.
func AdoptValue(gk schema.GroupKind, name string) string {
	return ParentKind(gk) + "/" + name
}

// ParentKind is the value of LabelParentKind for parents of gk:
// Kind.group, or Kind for the core group.
func ParentKind(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// ChildType is a kind of child object a renderer can produce.
type ChildType struct {
	// GVR is what to LIST.
	GVR schema.GroupVersionResource
	// Kind is the kind of the objects.
	Kind string
	// Keep lists the fields of the live objects, as dotted paths such as
	// "status" or "spec.replicas", that Render and Status read through
	// Child.Object; the engine keeps those, apiVersion, kind, name and
	// namespace, and drops the rest. "" keeps the whole object. Empty:
	// Child.Object stays nil.
	Keep []string
	// Anywhere says children of this namespaced kind may be placed in
	// another namespace than their parent's. Where the watched resource
	// allows that (childNamespaces), the engine LISTs the kind in the
	// watched namespaces and the ones childNamespaces names, or in every
	// namespace when it has a glob; otherwise in the watched ones, as any
	// other.
	Anywhere bool
	// ClusterScoped says the kind is cluster-scoped: its children have no
	// namespace. The engine LISTs it cluster-wide where the watched
	// resource allows cluster-scoped children, and not at all otherwise.
	ClusterScoped bool
}

// Graph is the desired children of one parent, in the order they are
// applied: a child comes after the children it refers to.
type Graph struct {
	// Children are apply configurations of content: apiVersion, kind,
	// name, namespace and every field resyncd owns. A child is in its
	// parent's namespace unless the renderer places it in another (a
	// ChildType with Anywhere), or leaves the namespace empty for a
	// ChildType that is ClusterScoped; the engine writes such a child only
	// where the watched resource allows it. The engine adds the
	// identity of every child — the labels of ChildLabels and the
	// controller ownerReference to the parent — so a renderer sets
	// neither; labels of its own (app.kubernetes.io/name, say) it may set.
	Children []*unstructured.Unstructured
	// Waiting are the children that could not be rendered because they
	// need fields of other children that do not exist yet: the engine
	// renders the parent again with what the API server returns as it
	// writes a child in the same pass, and a later pass renders them if
	// the fields are still missing then. Until then the engine writes none of them and prunes
	// no child of their kinds (or, of one whose Name is known, no child of
	// that name, in its Namespace where that is known).
	Waiting []Waiting
	// Refs lists, for the child at the same index of Children, the
	// indices of the earlier children it refers to — by name, as a
	// HorizontalPodAutoscaler names its Deployment, or through their live
	// fields. The engine writes a child only while every child it refers
	// to is resyncd's to write: one that would act on an object of
	// someone else's (a name taken) is not written either. Nil, or a
	// shorter slice: the children past its end refer to none.
	Refs [][]int
}

// RefersTo returns the indices of the children that child i refers to.
func (g Graph) RefersTo(i int) []int {
	if i < len(g.Refs) {
		return g.Refs[i]
	}
	return nil
}

// Waiting is a child that waits for another child.
type Waiting struct {
	// ID names the waiting child in the renderer's terms.
	ID string
	// Group and Kind are its kind: children of it are not pruned while it
	// waits.
	Group, Kind string
	// Name, when the renderer knows it already, narrows that to the one
	// child of this name: the others of its kind that the parent no longer
	// renders are pruned. Empty: its name waits too.
	Name string
	// Namespace, when the renderer knows it already, narrows that further
	// to the child of this name in this namespace. Empty: any namespace
	// (its namespace waits too, or the kind is cluster-scoped).
	Namespace string
	// Reason is one CamelCase word, for the Reconciling condition, that
	// names what it waits for, such as WaitingForConfig.
	Reason string
	// Message says what it waits for, for a person.
	Message string
}

// Policy is what the engine needs of a parent besides its children and
// status; the engine reads nothing of a parent's spec itself.
type Policy struct {
	// Priority orders the parent's writes when work queues up: higher
	// first.
	Priority int32
	// Paused withholds every child write of the parent; its drift is still
	// reported in status and metrics.
	Paused bool
}

// SpecPolicy is the Policy of a parent whose kind has spec.priority and
// spec.paused, as HttpService has and a graph's parent kind may: a field
// left out, or not of its type, is the zero Policy's.
func SpecPolicy(parent *unstructured.Unstructured) Policy {
	priority, _, _ := unstructured.NestedInt64(parent.Object, "spec", "priority")
	paused, _, _ := unstructured.NestedBool(parent.Object, "spec", "paused")
	return Policy{Priority: int32(priority), Paused: paused}
}

// Child is what the engine kept of a live child object: enough to judge its
// readiness, not the whole object.
type Child struct {
	// Kind is the child's kind.
	Kind string
	// Namespace is the child's namespace; empty for a cluster-scoped one.
	Namespace string
	// Name is the child's name.
	Name string
	// Generation is metadata.generation.
	Generation int64
	// Status is the child's .status as the API server returned it.
	Status map[string]any
	// Object is the live object reduced to the fields its ChildType keeps;
	// nil when it keeps none.
	Object map[string]any
}

// Failure is a permanent error that blocks a parent: an invalid spec, or a
// write the API server rejected for good.
type Failure struct {
	// Reason is one CamelCase word, for the Stalled condition.
	Reason string
	// Message is what the person who owns the parent must fix, with the API
	// server's words where it spoke.
	Message string
}

// Observation is what a renderer's Status is given of one pass for one
// parent.
type Observation struct {
	// Now is the time of the pass.
	Now time.Time
	// Children are the live children, as LISTed at the start of the pass
	// and updated with the results of this pass's writes.
	Children []Child
	// Failure is set when a permanent error blocks the parent.
	Failure *Failure
	// Applied is set when this pass changed a child.
	Applied bool
	// Waiting are the children that Render left waiting.
	Waiting []Waiting
	// External is what the engine found for the parent's external
	// references (ExternalRenderer); nil for a renderer that reads none.
	External []External
}

// Renderer turns a parent into its desired children and status. It is
// pure: no request, no clock but Observation.Now.
type Renderer interface {
	// ChildTypes lists every kind of child Render can produce, for LISTing
	// and pruning, in a fixed order.
	ChildTypes() []ChildType
	// Policy returns the parent's priority and whether it is paused.
	Policy(parent *unstructured.Unstructured) Policy
	// Render returns the desired children of parent, given its live
	// children as LISTed. An *InvalidError says the parent's spec cannot be
	// rendered; no child is touched then.
	Render(parent *unstructured.Unstructured, children []Child) (Graph, error)
	// Status returns the status fields parent should show given what was
	// observed, and the readiness verdict of its children. The engine
	// adds observedGeneration and the Ready, Reconciling and Stalled
	// conditions (engine.Compose); a renderer sets none of them.
	Status(parent *unstructured.Unstructured, obs Observation) (Status, error)
}

// Status is a renderer's account of a parent after a pass.
type Status struct {
	// Fields are the status fields the renderer owns, for example
	// readyReplicas and url.
	Fields map[string]any
	// Readiness is the verdict the conditions are built from.
	Readiness Readiness
	// Failure is a permanent error met computing Fields, such as a status
	// expression that fails: the field is left out, and, unless a failure
	// of the pass blocks the parent already, the engine makes the parent
	// Stalled with it, so that the error is seen rather than dropped.
	Failure *Failure
}

// Readiness is a renderer's verdict on whether a parent's children do what
// it asks, once every write is made.
type Readiness struct {
	// Ready is true when they do: the Ready condition is True then, with
	// Reason and Message.
	Ready bool
	// Reason is one CamelCase word, for example Available or RollingOut;
	// when not Ready, Reconciling is True with it.
	Reason string
	// Message says it for a person.
	Message string
}

// InvalidError says a parent's spec cannot be rendered.
type InvalidError struct {
	// Reason is the Stalled condition's reason; empty: InvalidSpec.
	Reason string
	// Field is the path of the offending field, for example spec.autoscaling.
	Field string
	// Message says what is wrong and what would fix it.
	Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

// IsInvalid reports whether err says a parent's spec is invalid.
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

// Registry holds the renderers by name.
type Registry map[string]Renderer

// DefaultRegistry returns the renderers resyncd ships.
func DefaultRegistry() Registry {
	return Registry{HTTPServiceRendererName: HTTPService{}}
}

// Names returns the registered names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns the renderer registered as name.
func (r Registry) Get(name string) (Renderer, error) {
	rd, ok := r[name]
	if !ok {
		return nil, fmt.Errorf("unknown renderer %q", name)
	}
	return rd, nil
}

// OwnerReference makes parent the controller of a child.
func OwnerReference(parent *unstructured.Unstructured) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion:         parent.GetAPIVersion(),
		Kind:               parent.GetKind(),
		Name:               parent.GetName(),
		UID:                parent.GetUID(),
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// childLabels are the labels of the pods of parent's workloads.
func childLabels(parent string) map[string]string {
	return map[string]string{LabelName: parent, LabelManagedBy: ManagedByValue, LabelParent: parent}
}

// ExternalRenderer is a Renderer whose children, or status, read objects
// it never writes: external references, such as a ConfigMap a platform
// team keeps. It is optional; a Renderer that reads none (HTTPService)
// does not implement it. The engine, not the renderer, reads them: each
// pass it asks ExternalRefs what every parent needs, LISTs each external
// kind once per namespace needed (cached for the pass, paged, each object
// reduced to ExternalType.Keep), and gives what it found to RenderWith
// and, through Observation.External, to Status. External objects are
// never written, stamped, pruned, or counted as children or drift.
type ExternalRenderer interface {
	Renderer
	// ExternalTypes lists every kind of external object the renderer
	// reads, in a fixed order; ExternalRef.Type indexes it.
	ExternalTypes() []ExternalType
	// ExternalRefs returns what parent reads, pure like Render: an
	// *InvalidError stalls the parent (a selector that is not one).
	ExternalRefs(parent *unstructured.Unstructured) ([]ExternalRef, error)
	// RenderWith is Render given also what the engine found for each of
	// ExternalRefs(parent). A ref with no External, or one whose object
	// does not exist, leaves the children that read it waiting.
	RenderWith(parent *unstructured.Unstructured, children []Child, external []External) (Graph, error)
}

// ExternalType is a kind of object a renderer reads and never writes.
type ExternalType struct {
	// GVR is what to LIST.
	GVR schema.GroupVersionResource
	// Kind is the kind of the objects.
	Kind string
	// Namespaced says the kind's objects live in namespaces.
	Namespaced bool
	// Keep lists the fields the renderer reads, as ChildType.Keep does;
	// apiVersion, kind, name and namespace are always kept.
	Keep []string
}

// ExternalRef is one read a parent needs: one object by name, or every
// object a label selector selects.
type ExternalRef struct {
	// ID names the reference in the renderer's terms.
	ID string
	// Type is the index of its kind in ExternalTypes.
	Type int
	// Namespace is where to look; "" for a cluster-scoped kind, or for a
	// selector over every namespace.
	Namespace string
	// Chosen says the parent chose Namespace (an expression over it gave
	// it) rather than the renderer's author: the engine then reads in
	// another namespace than the parent's only where the watched resource
	// allows it (externalNamespaces), as a tenant's parent must not read
	// another team's objects through its spec.
	Chosen bool
	// Name is the object's name; empty when Selector is set.
	Name string
	// Selector selects a list of objects when Name is empty; nil selects
	// every one.
	Selector labels.Selector
}

// External is what the engine found for one ExternalRef.
type External struct {
	// ID is the ExternalRef's.
	ID string
	// Objects are the objects found, reduced to the type's Keep, sorted
	// by namespace and name: at most one for a Name, none when it does
	// not exist.
	Objects []map[string]any
	// Versions are the Objects' resourceVersions, in the same order: a
	// parent whose externals and children kept their versions renders
	// the same.
	Versions []string
}

// WhereRef spells what ref reads for a person: "v1 ConfigMap
// team/settings", or, for a selector, "v1 ConfigMap in team selected by
// tier=gold".
func WhereRef(t ExternalType, ref ExternalRef) string {
	what := t.GVR.GroupVersion().String() + " " + t.Kind
	if ref.Name != "" {
		if ref.Namespace == "" {
			return what + " " + ref.Name
		}
		return what + " " + ref.Namespace + "/" + ref.Name
	}
	where := " in every namespace"
	if ref.Namespace != "" {
		where = " in " + ref.Namespace
	} else if !t.Namespaced {
		where = ""
	}
	sel := "every object"
	if ref.Selector != nil && !ref.Selector.Empty() {
		sel = "selected by " + ref.Selector.String()
	}
	return what + where + " " + sel
}
