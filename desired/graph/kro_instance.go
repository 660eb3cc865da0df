package graph

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/resyncd/resyncd/desired"
)

// The labels and the finalizer kro puts on the instances of a
// ResourceGraphDefinition and on their children, which tools written for
// kro select by (kubectl get -l kro.run/instance-name=NAME).
const (
	KroFinalizer      = "kro.run/finalizer"
	kroOwned          = "kro.run/owned"
	kroRGDName        = "kro.run/resource-graph-definition-name"
	kroRGDID          = "kro.run/resource-graph-definition-id"
	kroInstanceID     = "kro.run/instance-id"
	kroInstanceName   = "kro.run/instance-name"
	kroInstanceNS     = "kro.run/instance-namespace"
	kroInstanceGroup  = "kro.run/instance-group"
	kroInstanceVer    = "kro.run/instance-version"
	kroInstanceKind   = "kro.run/instance-kind"
	kroNodeID         = "kro.run/node-id"
	kroCollectionIdx  = "kro.run/collection-index"
	kroCollectionSize = "kro.run/collection-size"
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
	return map[string]string{kroOwned: "true", kroRGDName: r.kro.rgd, kroRGDID: string(r.kro.uid)}, KroFinalizer, true
}

// stampKro puts kro's labels on the children of g rendered for parent:
// index is where each plain resource is in g, ev.spans each collection.
func (r *Renderer) stampKro(ev *evaluation, g desired.Graph, index map[string]int) {
	parent := ev.parent
	gvk := parent.GroupVersionKind()
	common := map[string]string{
		kroOwned: "true", kroInstanceID: string(parent.GetUID()), kroInstanceName: parent.GetName(),
		kroInstanceGroup: gvk.Group, kroInstanceVer: gvk.Version, kroInstanceKind: gvk.Kind,
	}
	if ns := parent.GetNamespace(); ns != "" {
		common[kroInstanceNS] = ns
	}
	label := func(c *unstructured.Unstructured, id string, extra ...string) {
		l := c.GetLabels()
		if l == nil {
			l = make(map[string]string, len(common)+3)
		}
		for k, v := range common {
			l[k] = v
		}
		l[kroNodeID] = id
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		c.SetLabels(l)
	}
	for _, res := range r.resources {
		if s, ok := ev.spans[res.id]; ok {
			size := strconv.Itoa(s.end - s.start)
			for i := s.start; i < s.end; i++ {
				label(g.Children[i], res.id, kroCollectionIdx, strconv.Itoa(i-s.start), kroCollectionSize, size)
			}
		} else if i, ok := index[res.id]; ok {
			label(g.Children[i], res.id)
		}
	}
}
