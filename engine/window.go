package engine

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/resyncd/resyncd/actual"
)

// A pass reads the parents and the children of each kind side by side, a
// namespace at a time, and holds the children of one namespace only: the
// API server returns a LIST in the order of its storage keys, namespace
// then name, so once every LIST is past a namespace, nothing more of it
// will come. The children placed beyond their parent's namespace are the
// exception: those of a kind that may be placed elsewhere (wide) are read
// before the parents and held through the pass, with any child found
// beside a namespace other than its parent's.
//
// A server that breaks the order would make a namespace's children look
// orphaned; the pass that sees it fails before any write, and the passes
// after it read the whole cluster as one namespace (resourceState.whole).

// nsCompare orders namespaces as the API server's storage keys order their
// objects: by the namespace followed by "/" ("team-a/x" after
// "team-a-b/y", as '-' sorts before '/').
func nsCompare(a, b string) int {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	switch {
	case len(a) == len(b):
		return 0
	case len(a) < len(b):
		return cmp.Compare('/', b[n])
	default:
		return cmp.Compare(a[n], '/')
	}
}

// unsortedError is a LIST that returned a namespace after one that sorts
// later.
type unsortedError struct {
	what, after, got string
}

func (e *unsortedError) Error() string {
	return fmt.Sprintf("the API server listed %s of namespace %q after namespace %q, out of its storage order: "+
		"this pass writes nothing, and the passes after it read all namespaces at once", e.what, e.got, e.after)
}

// errStopped ends a LIST whose stream is stopped before its end.
var errStopped = errors.New("list stopped")

// stream is one LIST read an object at a time, by its reader's own
// pages: the object at its head, and the namespace of that object.
type stream struct {
	what string
	// whole: every object is of one window, "" (resourceState.whole).
	whole   bool
	next    func() (*unstructured.Unstructured, bool)
	stop    func()
	head    *unstructured.Unstructured
	ns      string
	started bool
	listed  actual.Listed
	err     error
}

// pull starts the LIST list as a stream; stop must be called.
func pull(what string, whole bool, list func(fn func(*unstructured.Unstructured) error) (actual.Listed, error)) *stream {
	s := &stream{what: what, whole: whole}
	s.next, s.stop = iter.Pull(func(yield func(*unstructured.Unstructured) bool) {
		s.listed, s.err = list(func(u *unstructured.Unstructured) error {
			if !yield(u) {
				return errStopped
			}
			return nil
		})
	})
	return s
}

// advance moves s to its next object, the head nil at the end of the LIST.
func (s *stream) advance() error {
	u, ok := s.next()
	if !ok {
		s.head = nil
		if s.err != nil && !errors.Is(s.err, errStopped) {
			return s.err
		}
		return nil
	}
	s.head = u
	if s.whole {
		return nil
	}
	ns := u.GetNamespace()
	if s.started && nsCompare(ns, s.ns) < 0 {
		return &unsortedError{what: s.what, after: s.ns, got: ns}
	}
	s.ns, s.started = ns, true
	return nil
}

// in says whether s's head is of window ns.
func (s *stream) in(ns string) bool { return s.head != nil && s.ns == ns }

// nextWindow is the first namespace at the head of any of streams; false
// when every stream is at its end.
func nextWindow(streams []*stream) (string, bool) {
	var ns string
	found := false
	for _, s := range streams {
		if s.head != nil && (!found || nsCompare(s.ns, ns) < 0) {
			ns, found = s.ns, true
		}
	}
	return ns, found
}

// liveSet is a set of live children indexed as a parent looks for its
// own: by controller UID, and, with no controller, by the parent they
// name by label.
type liveSet struct {
	children     map[childKey]*liveChild
	byController map[types.UID][]*liveChild
	byName       map[string][]*liveChild
}

func newLiveSet() *liveSet {
	return &liveSet{children: map[childKey]*liveChild{}, byController: map[types.UID][]*liveChild{}, byName: map[string][]*liveChild{}}
}

func (l *liveSet) add(c *liveChild) {
	l.children[c.key] = c
	switch {
	case c.controller != "":
		l.byController[c.controller] = append(l.byController[c.controller], c)
	case c.labelled && c.parentName != "":
		n := c.parentNS() + "/" + c.parentName
		l.byName[n] = append(l.byName[n], c)
	}
}

// mine are the children of l of the parent of uid and namespace/name.
func (l *liveSet) mine(uid types.UID, name string) []*liveChild {
	return slices.Concat(l.byController[uid], l.byName[name])
}

// window is what a pass holds of one namespace: its children (the
// cluster's, when the pass reads it whole), its parents' UIDs and names,
// and the children its parents claimed.
type window struct {
	ns      string
	live    *liveSet
	known   map[types.UID]bool
	names   map[string]bool
	claimed map[childKey]bool
}

func newWindow(ns string) *window {
	return &window{ns: ns, live: newLiveSet(), known: map[types.UID]bool{}, names: map[string]bool{}, claimed: map[childKey]bool{}}
}

// parentSet is a set of the UIDs, or the namespace/name, of every parent
// a pass read: what the children held through the pass are checked
// against at its end. It keeps hashes, not strings; a collision can only
// keep an orphan one pass longer, as the seed changes every pass.
type parentSet struct {
	seed maphash.Seed
	set  map[uint64]struct{}
}

func newParentSet() *parentSet {
	return &parentSet{seed: maphash.MakeSeed(), set: map[uint64]struct{}{}}
}

func (s *parentSet) add(key string) { s.set[maphash.String(s.seed, key)] = struct{}{} }

func (s *parentSet) has(key string) bool {
	_, ok := s.set[maphash.String(s.seed, key)]
	return ok
}

// claimSet is the children the parents of a pass claimed: those of the
// window in its map, those held through the pass in the pass's.
type claimSet struct {
	window, held map[childKey]bool
	// isHeld says whether a child is held; nil: none is.
	isHeld func(childKey) bool
}

func (c claimSet) of(k childKey) map[childKey]bool {
	if c.isHeld != nil && c.isHeld(k) {
		return c.held
	}
	return c.window
}

func (c claimSet) set(k childKey)      { c.of(k)[k] = true }
func (c claimSet) unset(k childKey)    { delete(c.of(k), k) }
func (c claimSet) has(k childKey) bool { return c.of(k)[k] }
