package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

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
	gvr             schema.GroupVersionResource
	uid             types.UID
	resourceVersion string
	generation      int64
	// controller is the UID of the controller ownerReference, of the kind
	// controllerGK; empty when nobody controls the child.
	controller     types.UID
	controllerGK   schema.GroupKind
	controllerName string
	// parentKind and parentName are the child's resyncd.io/parent-kind and
	// resyncd.io/parent labels: who it belongs to once the garbage
	// collector has removed its ownerReference (a parent deleted with
	// orphaning).
	parentKind, parentName string
	// labelled says it carries resyncd's managed-by label.
	labelled bool
	// hold, keep and adopt are the per-object switches of
	// desired.AnnotationReconcile, AnnotationPrune and AnnotationAdopt.
	hold, keep, adopt bool
	// managers are its field managers, read only for an object that is not
	// resyncd's, to say whose it is.
	managers []string
	// owned is set when resyncd's field manager applied fields to it.
	owned       bool
	fingerprint fingerprint
	// whole fingerprints the object as driftCheck server compares it with
	// a dry-run's result; set only in that mode.
	whole fingerprint
	// object is the whole live object, kept only for `resyncd diff`.
	object *unstructured.Unstructured
	status map[string]any
	// kept is the object reduced to the fields its renderer reads
	// (desired.ChildType.Keep); nil when it reads none.
	kept map[string]any
}

// controlledBy says whether a parent of kind gvk controls c.
func (c *liveChild) controlledBy(gvk schema.GroupVersionKind) bool {
	return c.controller != "" && c.controllerGK == gvk.GroupKind()
}

func (c *liveChild) summary() desired.Child {
	return desired.Child{Kind: c.key.Kind, Name: c.key.Name, Generation: c.generation, Status: c.status, Object: c.kept}
}

// summaries are what a renderer is given of cs.
func summaries(cs []*liveChild) []desired.Child {
	out := make([]desired.Child, len(cs))
	for i, c := range cs {
		out[i] = c.summary()
	}
	return out
}

// reduce keeps of obj its apiVersion, kind, metadata without managedFields,
// and the fields at paths; nil when paths is empty.
func reduce(obj map[string]any, paths []string) map[string]any {
	if len(paths) == 0 {
		return nil
	}
	out := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
	whole := slices.Contains(paths, "")
	if whole {
		out = maps.Clone(obj)
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		delete(md, "managedFields")
		out["metadata"] = md
	}
	if whole {
		return out
	}
	for _, p := range paths {
		copyPath(obj, out, strings.Split(p, "."))
	}
	return out
}

// copyPath copies the value at path from src to dst, making the maps on
// the way.
func copyPath(src, dst map[string]any, path []string) {
	v, ok := src[path[0]]
	if !ok {
		return
	}
	if len(path) == 1 {
		dst[path[0]] = v
		return
	}
	next, ok := v.(map[string]any)
	if !ok {
		return
	}
	d, ok := dst[path[0]].(map[string]any)
	if !ok {
		d = map[string]any{}
		dst[path[0]] = d
	}
	copyPath(next, d, path[1:])
}

// reduceChild keeps what the diff and the status need of a LISTed child.
// Fingerprints found at the same version by the last pass are taken from
// memo rather than computed again; every result goes to next.
func (o *owner) reduceChild(u *unstructured.Unstructured, gvr schema.GroupVersionResource,
	keepFields, whole bool, memo, next map[memoKey]memoEntry) (*liveChild, error) {
	c := &liveChild{
		key:             keyOf(u),
		gvr:             gvr,
		uid:             u.GetUID(),
		resourceVersion: u.GetResourceVersion(),
		generation:      u.GetGeneration(),
	}
	c.identify(u)
	if st, ok := u.Object["status"].(map[string]any); ok {
		c.status = st
	}
	if keepFields {
		c.object = u
	}
	key := memoKey{uid: c.uid, resourceVersion: c.resourceVersion}
	m, ok := memo[key]
	if !ok || (whole && m.whole == fingerprint{}) {
		var err error
		if m, err = o.fingerprints(u, whole); err != nil {
			return nil, err
		}
	}
	if next != nil {
		next[key] = m
	}
	c.owned, c.fingerprint, c.whole = m.owned, m.fingerprint, m.whole
	return c, nil
}

// fingerprints computes tier 1's fingerprint of u and, if whole is set,
// the fingerprint driftCheck server compares.
func (o *owner) fingerprints(u *unstructured.Unstructured, whole bool) (memoEntry, error) {
	var m memoEntry
	var err error
	if whole {
		if m.whole, err = wholeFingerprint(u); err != nil {
			return m, err
		}
	}
	fields, ok, err := o.owned(u)
	if err != nil || !ok {
		return m, err
	}
	m.owned = true
	m.fingerprint, err = fingerprintOf(fields)
	return m, err
}

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
