package engine

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/actual"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/shard"
)

// Shard is the part of a cluster's namespaces this replica may work on
// when replicas share the work (shard.Ring). A pass acquires it when it
// starts and releases it once its writes are done, so that the replica
// goes on claiming what the pass writes also after the ring moved it.
type Shard interface {
	// Acquire returns the part of cluster's namespaces a pass may work
	// on, and the function that releases it.
	Acquire(cluster string) (shard.Part, func())
}

// acquire takes the part rs's pass works on into rs.part, and returns
// its release.
func (e *Engine) acquire(rs *resourceState) func() {
	if e.shard == nil {
		rs.part = shard.Whole()
		return func() {}
	}
	var release func()
	rs.part, release = e.shard.Acquire(e.cfg.Cluster)
	return release
}

// parentScope is where the pass of rs LISTs the parents; false when
// nowhere: the replica owns none of the namespaces rs watches. Named
// namespaces are LISTed in the order the server's keys have, as the pass
// reads them side by side (window.go).
func (e *Engine) parentScope(rs *resourceState) (actual.Scope, bool) {
	if rs.part.IsWhole() {
		return actual.Scope{Namespaces: slices.SortedFunc(slices.Values(rs.cfg.Namespaces), nsCompare)}, true
	}
	if rs.part.Slots == 0 {
		return actual.Scope{}, false
	}
	if len(rs.cfg.Namespaces) > 0 {
		// Named: LIST only the namespaces owned, one by one, as always.
		owned := slices.DeleteFunc(slices.SortedFunc(slices.Values(rs.cfg.Namespaces), nsCompare), func(ns string) bool { return !rs.part.Has(ns) })
		return actual.Scope{Namespaces: owned}, len(owned) > 0
	}
	if !e.cfg.ServerSelector {
		return actual.Scope{}, true
	}
	return actual.Scope{ShardSelector: rs.part.Selector()}, true
}

// childScope is where the pass of rs LISTs children placed in namespaces
// (none: all), wide when beyond the parents' own. Children beyond their
// parent's namespace hash apart from it: they are LISTed whole and kept
// by their parent's namespace (owns).
func (e *Engine) childScope(rs *resourceState, namespaces []string, wide bool) actual.Scope {
	if wide {
		return actual.Scope{Namespaces: namespaces}
	}
	scope, _ := e.parentScope(rs)
	return scope
}

// owns says whether u, a parent or a child, is this pass's: whether the
// namespace of its parent (its own, or the one its label names) is in the
// part the pass acquired.
func (rs *resourceState) owns(u *unstructured.Unstructured) bool {
	return rs.part.IsWhole() || rs.part.Has(parentNamespace(u))
}

// parentNamespace is the namespace of u's parent: the one its label
// names, for a child placed elsewhere, else u's own (a parent's, or a
// child's beside its parent).
func parentNamespace(u *unstructured.Unstructured) string {
	if ns := u.GetLabels()[desired.LabelParentNamespace]; ns != "" {
		return ns
	}
	return u.GetNamespace()
}
