package graph

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/resyncd/resyncd/desired"
)

// kroIdentity is the ResourceGraphDefinition a graph was compiled from,
// when it was read from the cluster (ServeAsKro).
type kroIdentity struct {
	rgd string
	uid types.UID
}

// ServeAsKro makes r render as kro renders the instances of the
// ResourceGraphDefinition named rgd (of UID uid) that r was compiled from:
// every child carries kro's labels (the instance's UID, name, namespace
// and kind, the resource's id, a collection item's index and size), and
// the engine keeps kro's finalizer and labels on the instance and writes
// kro's conditions (KroInstance).
func (r *Renderer) ServeAsKro(rgd string, uid types.UID) {
	r.kro = &kroIdentity{rgd: rgd, uid: uid}
}

// KroInstance is, for a graph served as kro serves it (ServeAsKro), the
// labels every instance carries and kro's finalizer; ok false otherwise.
func (r *Renderer) KroInstance() (labels map[string]string, finalizer string, ok bool) {
	if r.kro == nil {
		return nil, "", false
	}
	return map[string]string{desired.KroOwned: "true", desired.KroRGDName: r.kro.rgd, desired.KroRGDID: string(r.kro.uid)}, desired.KroFinalizer, true
}

// stampKro puts kro's labels on the children of g rendered for parent:
// index is where each plain resource is in g, ev.spans each collection.
func (r *Renderer) stampKro(ev *evaluation, g desired.Graph, index map[string]int) {
	parent := ev.parent
	gvk := parent.GroupVersionKind()
	common := map[string]string{
		desired.KroOwned: "true", desired.KroInstanceID: string(parent.GetUID()), desired.KroInstanceName: parent.GetName(),
		desired.KroInstanceGroup: gvk.Group, desired.KroInstanceVersion: gvk.Version, desired.KroInstanceKind: gvk.Kind,
	}
	if ns := parent.GetNamespace(); ns != "" {
		common[desired.KroInstanceNamespace] = ns
	}
	label := func(c *unstructured.Unstructured, id string, extra ...string) {
		l := c.GetLabels()
		if l == nil {
			l = make(map[string]string, len(common)+3)
		}
		for k, v := range common {
			l[k] = v
		}
		l[desired.KroNodeID] = id
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		c.SetLabels(l)
	}
	for _, res := range r.resources {
		if s, ok := ev.spans[res.id]; ok {
			size := strconv.Itoa(s.end - s.start)
			for i := s.start; i < s.end; i++ {
				label(g.Children[i], res.id, desired.KroCollectionIndex, strconv.Itoa(i-s.start), desired.KroCollectionSize, size)
			}
		} else if i, ok := index[res.id]; ok {
			label(g.Children[i], res.id)
		}
	}
}
