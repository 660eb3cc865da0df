package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/resyncd/resyncd/desired"
)

// childKey identifies a child object.
type childKey struct {
	Group, Kind, Namespace, Name string
}

func keyOf(u *unstructured.Unstructured) childKey {
	return childKey{Group: u.GroupVersionKind().Group, Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

func (k childKey) String() string { return fmt.Sprintf("%s/%s/%s", k.Kind, k.Namespace, k.Name) }

// less orders keys as their String forms mostly do, without formatting them.
func (k childKey) less(o childKey) bool {
	if k.Kind != o.Kind {
		return k.Kind < o.Kind
	}
	if k.Namespace != o.Namespace {
		return k.Namespace < o.Namespace
	}
	if k.Name != o.Name {
		return k.Name < o.Name
	}
	return k.Group < o.Group
}

// liveChild is what a pass keeps of a LISTed child: identity, ownership,
// the fingerprint of the fields resyncd owns and the status. The rest of
// the object is dropped as its page is read.
type liveChild struct {
	key             childKey
	gvr             unique.Handle[schema.GroupVersionResource]
	uid             types.UID
	resourceVersion string
	generation      int64
	// controller is the UID of the controller ownerReference, of the kind
	// controllerGK; empty when nobody controls the child.
	controller     types.UID
	controllerGK   unique.Handle[schema.GroupKind]
	controllerName string
	// parentKind and parentName are the child's resyncd.io/parent-kind and
	// resyncd.io/parent labels: who it belongs to once the garbage
	// collector has removed its ownerReference (a parent deleted with
	// orphaning).
	parentKind, parentName string
	// parentNamespace is its resyncd.io/parent-namespace label: set on a
	// child resyncd made outside its parent's namespace.
	parentNamespace string
	// labelled says it carries resyncd's managed-by label.
	labelled bool
	// hold is desired.AnnotationReconcile disabled on it (never written);
	// pruneOff, desired.AnnotationPrune disabled (released, not deleted,
	// when no parent wants it).
	hold, pruneOff bool
	// position is memoEntry.position: where the parent last rendered it.
	position int32
	// owned is set when resyncd's field manager applied fields to it;
	// created when one of them is desired.AnnotationCreated, which resyncd
	// sets on the children it creates outside their parent's namespace.
	owned, created bool
	fingerprint    fingerprint
	status         map[string]any
	// rare is what only some children have; nil for the others. A pass
	// may hold thousands of children of one namespace, so what most do
	// not have takes one pointer of each.
	rare *liveRare
}

// liveRare is what a liveChild holds only in some modes, or for some
// children.
type liveRare struct {
	// adopt is the value of desired.AnnotationAdopt, the parent the child
	// is handed to.
	adopt string
	// managers are its field managers, read only for an object that is not
	// resyncd's, to say whose it is.
	managers []string
	// kroInstance and kroKind are, on an object kro made for an instance,
	// its kro.run/instance-id label (the instance's UID) and its
	// kro.run/instance-kind and -group labels, as Kind.group.
	kroInstance, kroKind string
	// whole fingerprints the object as driftCheck server compares it with
	// a dry-run's result; set only in that mode.
	whole fingerprint
	// object is the whole live object, kept only for `resyncd diff`.
	object *unstructured.Unstructured
	// keeper and kept are the fields its renderer reads
	// (desired.ChildType.Keep); nil when it reads none.
	keeper *keeper
	kept   []any
}

// more returns c's rare part, made if it has none yet.
func (c *liveChild) more() *liveRare {
	if c.rare == nil {
		c.rare = &liveRare{}
	}
	return c.rare
}

// adopt is the value of c's desired.AnnotationAdopt; "" without one.
func (c *liveChild) adopt() string {
	if c.rare == nil {
		return ""
	}
	return c.rare.adopt
}

// managers are c's field managers, when they were read.
func (c *liveChild) managers() []string {
	if c.rare == nil {
		return nil
	}
	return c.rare.managers
}

// whole is c's fingerprint for driftCheck server; zero in the other modes.
func (c *liveChild) whole() fingerprint {
	if c.rare == nil {
		return fingerprint{}
	}
	return c.rare.whole
}

// object is the whole live object, kept only for `resyncd diff`.
func (c *liveChild) object() *unstructured.Unstructured {
	if c.rare == nil {
		return nil
	}
	return c.rare.object
}

// keep holds, of u, the fields k reads; nothing when k is nil.
func (c *liveChild) keep(k *keeper, u *unstructured.Unstructured) {
	if k == nil {
		if c.rare != nil {
			c.rare.keeper, c.rare.kept = nil, nil
		}
		return
	}
	r := c.more()
	r.keeper, r.kept = k, k.pick(u.Object)
}

// keptObject is the object the child's kept values make; nil when its
// renderer reads none.
func (c *liveChild) keptObject() map[string]any {
	if c.rare == nil {
		return nil
	}
	return c.rare.keeper.object(c.key, c.rare.kept)
}

// controlledBy says whether a parent of kind gvk controls c.
func (c *liveChild) controlledBy(gvk schema.GroupVersionKind) bool {
	return c.controller != "" && c.controllerKind() == gvk.GroupKind()
}

// controllerKind is the group and kind of c's controller; empty when
// nobody controls it.
func (c *liveChild) controllerKind() schema.GroupKind {
	if c.controllerGK == (unique.Handle[schema.GroupKind]{}) {
		return schema.GroupKind{}
	}
	return c.controllerGK.Value()
}

// parentNS is the namespace of c's parent: its parent-namespace label,
// or, without one, its own namespace.
func (c *liveChild) parentNS() string {
	if c.parentNamespace != "" {
		return c.parentNamespace
	}
	return c.key.Namespace
}

// madeOutside says resyncd made c outside its parent's namespace: deleted,
// not released, when no parent wants it. It carries
// desired.AnnotationCreated as resyncd's own field: one handed over with
// resyncd.io/adopt never does, and one whose annotation was removed is
// released — whoever may annotate an object gains no right to have it
// deleted.
func (c *liveChild) madeOutside() bool {
	return c.labelled && c.created
}

func (c *liveChild) summary() desired.Child {
	return desired.Child{Kind: c.key.Kind, Namespace: c.key.Namespace, Name: c.key.Name, Generation: c.generation, Status: c.status, Object: c.keptObject()}
}

// summaries are what a renderer is given of cs.
func summaries(cs []*liveChild) []desired.Child {
	out := make([]desired.Child, len(cs))
	for i, c := range cs {
		out[i] = c.summary()
	}
	return out
}

// keeper keeps, of the live children of one kind, the fields their
// renderer reads (desired.ChildType.Keep): a child holds the values at
// those paths, sharing them with the decoded object, and is made an object
// again only when a renderer is given it, which an idle parent never is.
type keeper struct {
	apiVersion, kind string
	whole            bool       // Keep has "": the whole object
	paths            [][]string // the others, split
}

// newKeeper returns the keeper of ct, nil when it keeps nothing.
func newKeeper(ct desired.ChildType) *keeper {
	if len(ct.Keep) == 0 {
		return nil
	}
	k := &keeper{apiVersion: ct.GVR.GroupVersion().String(), kind: ct.Kind, whole: slices.Contains(ct.Keep, "")}
	for _, p := range ct.Keep {
		if p != "" {
			k.paths = append(k.paths, strings.Split(p, "."))
		}
	}
	return k
}

// absent stands for a path the object does not have.
type absent struct{}

// pick returns the values of obj at k's paths, or, for the whole object,
// obj without its managedFields.
func (k *keeper) pick(obj map[string]any) []any {
	if k == nil {
		return nil
	}
	if k.whole {
		out := maps.Clone(obj)
		if md, ok := obj["metadata"].(map[string]any); ok {
			md = maps.Clone(md)
			delete(md, "managedFields")
			out["metadata"] = md
		}
		return []any{out}
	}
	values := make([]any, len(k.paths))
	for i, p := range k.paths {
		values[i] = valueAt(obj, p)
	}
	return values
}

func valueAt(obj map[string]any, path []string) any {
	var v any = obj
	for _, f := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return absent{}
		}
		if v, ok = m[f]; !ok {
			return absent{}
		}
	}
	return v
}

// object makes the child's kept values an object again: apiVersion, kind,
// name and namespace, and the values at their paths.
func (k *keeper) object(key childKey, values []any) map[string]any {
	if k == nil || values == nil {
		return nil
	}
	if k.whole {
		return values[0].(map[string]any)
	}
	out := map[string]any{"apiVersion": k.apiVersion, "kind": k.kind,
		"metadata": map[string]any{"name": key.Name, "namespace": key.Namespace}}
	for i, p := range k.paths {
		if _, skip := values[i].(absent); skip {
			continue
		}
		m := out
		for _, f := range p[:len(p)-1] {
			next, ok := m[f].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[f] = next
			}
			m = next
		}
		m[p[len(p)-1]] = values[i]
	}
	return out
}

// reduceChild keeps what the diff and the status need of a LISTed child.
// Fingerprints found at the same version by the last pass (mem) are taken
// from it rather than computed again; every result goes to next. whole:
// driftCheck server's fingerprint of the whole object is wanted too.
func (o *owner) reduceChild(u *unstructured.Unstructured, gvr schema.GroupVersionResource,
	keepFields, whole bool, mem, next *memory) (*liveChild, error) {
	k := keyOf(u)
	c := &liveChild{
		key:             childKey{Group: intern(k.Group), Kind: intern(k.Kind), Namespace: intern(k.Namespace), Name: k.Name},
		gvr:             unique.Make(gvr),
		uid:             u.GetUID(),
		resourceVersion: u.GetResourceVersion(),
		generation:      u.GetGeneration(),
	}
	c.identify(u)
	if st, ok := u.Object["status"].(map[string]any); ok {
		c.status = st
	}
	if keepFields {
		c.more().object = u
	}
	key := versionOf(c.uid, c.resourceVersion)
	var m memoEntry
	ok := false
	if mem != nil {
		m, ok = mem.memo.get(key)
	}
	if !ok {
		position := m.position
		var err error
		if m, err = o.fingerprints(u); err != nil {
			return nil, err
		}
		m.position = position
	}
	c.owned, c.created, c.fingerprint, c.position = m.owned, m.created, m.fingerprint, m.position
	if whole {
		r := c.more()
		ok = false
		if mem != nil {
			r.whole, ok = mem.wholes[key]
		}
		if !ok {
			var err error
			if r.whole, err = wholeFingerprint(u); err != nil {
				return nil, err
			}
		}
	}
	if next != nil {
		m.pass = next.pass
		next.memo.set(key, m)
		if whole {
			next.wholes[key] = c.rare.whole
		}
	}
	return c, nil
}

// fingerprints computes tier 1's fingerprint of u.
func (o *owner) fingerprints(u *unstructured.Unstructured) (memoEntry, error) {
	var m memoEntry
	fields, ok, err := o.owned(u)
	if err != nil || !ok {
		return m, err
	}
	m.owned, m.created = true, createdIn(fields)
	m.fingerprint, err = fingerprintOf(fields)
	return m, err
}

// intern returns s as one copy the process shares: the kinds, groups and
// namespaces a pass keeps of thousands of children are a few strings,
// not one each.
func intern(s string) string { return unique.Make(s).Value() }

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// wholeFingerprint hashes an object without what changes on every write or
// dry-run: resourceVersion, generation and managedFields.
func wholeFingerprint(u *unstructured.Unstructured) (fingerprint, error) {
	c := u.DeepCopy()
	c.SetResourceVersion("")
	c.SetGeneration(0)
	c.SetManagedFields(nil)
	return fingerprintOf(c.Object)
}

// createdIn says whether fields, those resyncd's field manager applied,
// hold desired.AnnotationCreated.
func createdIn(fields map[string]any) bool {
	md, _ := fields["metadata"].(map[string]any)
	a, _ := md["annotations"].(map[string]any)
	return a[desired.AnnotationCreated] == desired.CreatedValue
}

// markCreated gives d desired.AnnotationCreated, or takes it away.
func markCreated(d *unstructured.Unstructured, created bool) {
	a := d.GetAnnotations()
	if created {
		if a == nil {
			a = map[string]string{}
		}
		a[desired.AnnotationCreated] = desired.CreatedValue
	} else {
		if _, ok := a[desired.AnnotationCreated]; !ok {
			return
		}
		delete(a, desired.AnnotationCreated)
	}
	d.SetAnnotations(a)
}

// identify reads who owns u: its labels, controller and switches, and,
// for an object read on its own, its field managers.
func (c *liveChild) identify(u *unstructured.Unstructured) {
	for _, ref := range u.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			c.controller, c.controllerGK, c.controllerName = ref.UID, unique.Make(schema.GroupKind{Group: groupOf(ref.APIVersion), Kind: ref.Kind}), ref.Name
		}
	}
	l := u.GetLabels()
	c.labelled = l[desired.LabelManagedBy] == desired.ManagedByValue
	c.parentKind, c.parentName, c.parentNamespace = intern(l[desired.LabelParentKind]), l[desired.LabelParent], intern(l[desired.LabelParentNamespace])
	a := u.GetAnnotations()
	c.hold, c.pruneOff = a[desired.AnnotationReconcile] == desired.Disabled, a[desired.AnnotationPrune] == desired.Disabled
	if adopt := a[desired.AnnotationAdopt]; adopt != "" {
		c.more().adopt = adopt
	}
	if id := l[desired.KroInstanceID]; id != "" && l[desired.KroOwned] == "true" {
		c.more().kroInstance, c.rare.kroKind = id, l[desired.KroInstanceKind]+"."+l[desired.KroInstanceGroup]
	}
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
