package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/resyncd/resyncd/actual"
	"github.com/resyncd/resyncd/desired"
)

// ReasonExternalUnreadable is the Stalled reason of a parent whose
// external reference the API server refuses to LIST (403), or does not
// serve (404): someone must grant the read or install the kind. The LIST
// is made again every pass.
const ReasonExternalUnreadable = "ExternalUnreadable"

// externals reads, for the renderer's external references, what a pass
// found: one LIST per kind and namespace, made when the first parent
// that needs it is planned, and kept until the pass ends. Nil when the
// renderer reads none, so that the passes of other renderers pay nothing.
type externals struct {
	renderer desired.ExternalRenderer
	types    []desired.ExternalType
	keepers  []*keeper
	// lists are this pass's LISTs, by kind and namespace.
	lists map[externalKey]*externalList
	// warm says, once a pass, whether a refused LIST may be the API
	// server's warm-up.
	warm *warmth
}

type externalKey struct {
	typ       int
	namespace string
}

// externalList is what one LIST of an external kind found: its objects,
// sorted by namespace and name, or why the API server refused it. warming
// says the refusal was a 403 while the server warms up: transient, so
// what reads the list waits for the next pass instead of stalling.
type externalList struct {
	objects []externalObject
	refused error
	warming bool
}

// externalObject is what a pass keeps of one external object: what a
// selector matches, its version, and the fields the renderer reads.
type externalObject struct {
	namespace, name, resourceVersion string
	labels                           labels.Set
	object                           map[string]any
}

// newExternals returns the external reads of rd; nil unless it reads
// external objects.
func newExternals(rd desired.Renderer) *externals {
	xr, ok := rd.(desired.ExternalRenderer)
	if !ok || len(xr.ExternalTypes()) == 0 {
		return nil
	}
	x := &externals{renderer: xr, types: xr.ExternalTypes()}
	for _, t := range x.types {
		// metadata.name: a keeper for every kind, so that each object is
		// at least its identity.
		keep := append(slices.Clone(t.Keep), "metadata.name")
		x.keepers = append(x.keepers, newKeeper(desired.ChildType{GVR: t.GVR, Kind: t.Kind, Keep: keep}))
	}
	return x
}

// begin forgets the last pass's LISTs: external objects are read anew
// every pass.
func (x *externals) begin() {
	if x != nil {
		x.lists = map[externalKey]*externalList{}
		x.warm = &warmth{}
	}
}

// end lets go of the pass's LISTs.
func (x *externals) end() {
	if x != nil {
		x.lists, x.warm = nil, nil
	}
}

// resolveExternals returns what parent p reads: its references, each with
// the objects found. A failure blocks the parent: a reference its spec makes
// invalid, one whose namespace its spec chose where the watched resource
// does not allow reads (then nothing at all is read for it), or a LIST the
// API server refused. A LIST refused while the server warms up is left
// out: what reads it waits, not read, and the next pass tries again. An
// error is the pass's: a LIST that failed for another reason (no answer,
// 5xx) fails the pass, which the next retries.
func (e *Engine) resolveExternals(ctx context.Context, rs *resourceState, p *unstructured.Unstructured, rep *ResourceReport) ([]desired.External, *desired.Failure, error) {
	x := rs.externals
	refs, err := x.renderer.ExternalRefs(p)
	if err != nil {
		var ie *desired.InvalidError
		if errors.As(err, &ie) {
			return nil, &desired.Failure{Reason: cmp.Or(ie.Reason, "InvalidSpec"), Message: ie.Error()}, nil
		}
		return nil, &desired.Failure{Reason: "RenderFailed", Message: err.Error()}, nil
	}
	for _, ref := range refs {
		if f := refuseRead(rs, x.types[ref.Type], ref, p); f != nil {
			return nil, f, nil
		}
	}
	out := make([]desired.External, 0, len(refs))
	for _, ref := range refs {
		l, err := e.listExternal(ctx, rs, externalKey{typ: ref.Type, namespace: ref.Namespace}, rep)
		if err != nil {
			return nil, nil, err
		}
		if l.warming {
			continue
		}
		if l.refused != nil {
			return nil, &desired.Failure{Reason: ReasonExternalUnreadable, Message: fmt.Sprintf("%s %s: %s",
				ref.ID, desired.WhereRef(x.types[ref.Type], ref), l.refused.Error())}, nil
		}
		out = append(out, l.find(ref))
	}
	return out, nil, nil
}

// find is what l holds for ref: the object of its name, or those its
// selector selects.
func (l *externalList) find(ref desired.ExternalRef) desired.External {
	found := desired.External{ID: ref.ID}
	for _, o := range l.objects {
		switch {
		case ref.Name != "":
			if o.name != ref.Name || (ref.Namespace != "" && o.namespace != ref.Namespace) {
				continue
			}
		case ref.Selector != nil && !ref.Selector.Matches(o.labels):
			continue
		}
		found.Objects = append(found.Objects, o.object)
		found.Versions = append(found.Versions, o.resourceVersion)
	}
	return found
}

// listExternal LISTs the objects of one external kind in one namespace
// (all, for ""), once a pass, paged as every LIST is. A 403 or a 404 is
// kept as the list's refusal, for the parents that need it; other errors
// are returned.
func (e *Engine) listExternal(ctx context.Context, rs *resourceState, k externalKey, rep *ResourceReport) (*externalList, error) {
	x := rs.externals
	if l, ok := x.lists[k]; ok {
		return l, nil
	}
	t, keep := x.types[k.typ], x.keepers[k.typ]
	var namespaces []string
	if k.namespace != "" {
		namespaces = []string{k.namespace}
	}
	l := &externalList{}
	rep.ExternalLists++
	_, err := e.reader.Children(ctx, t.GVR, actual.Scope{Namespaces: namespaces}, "", func(u *unstructured.Unstructured) error {
		ck := childKey{Group: t.GVR.Group, Kind: t.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
		l.objects = append(l.objects, externalObject{
			namespace: ck.Namespace, name: ck.Name, resourceVersion: u.GetResourceVersion(),
			labels: u.GetLabels(), object: keep.object(ck, keep.pick(u.Object)),
		})
		return nil
	})
	switch {
	case apierrors.IsForbidden(err) && x.warm.warmingUp(ctx, e, e.lastPassFailed(rs)):
		l.objects, l.warming = nil, true
		e.log.Warn("External list refused while the API server warms up", zap.String("resource", rs.name),
			zap.String("kind", t.Kind), zap.String("namespace", k.namespace), zap.Error(err))
	case apierrors.IsForbidden(err):
		l.objects, l.refused = nil, fmt.Errorf("the API server refuses to list it (grant resyncd get and list on %s): %w", t.GVR.GroupResource(), err)
	case apierrors.IsNotFound(err):
		l.objects, l.refused = nil, fmt.Errorf("the API server does not serve %s %s (is its CustomResourceDefinition installed?): %w", t.GVR.GroupVersion(), t.Kind, err)
	case err != nil:
		return nil, fmt.Errorf("%s: external references: %w", rs.name, err)
	}
	slices.SortFunc(l.objects, func(a, b externalObject) int {
		return cmp.Or(strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name))
	})
	x.lists[k] = l
	return l, nil
}

// externalVersions spells the versions of what a parent read, for the
// memory of idle parents: the same string, the same objects.
func externalVersions(found []desired.External) string {
	var b strings.Builder
	for _, x := range found {
		b.WriteString(x.ID)
		for _, v := range x.Versions {
			b.WriteByte(' ')
			b.WriteString(v)
		}
		b.WriteByte(';')
	}
	return b.String()
}
