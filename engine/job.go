package engine

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/resyncd/resyncd/desired"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Operation is a kind of write.
type Operation string

// The operations, in the order the plan prefers them.
const (
	OpCreate Operation = "create"
	OpUpdate Operation = "update"
	OpStatus Operation = "status"
	OpDelete Operation = "delete"
	// OpRelease lets go of a child with resyncd.io/prune: disabled instead
	// of deleting it.
	OpRelease Operation = "release"
)

func (o Operation) class() int {
	switch o {
	case OpCreate:
		return 0
	case OpUpdate:
		return 1
	case OpStatus:
		return 2
	default:
		return 3
	}
}

// op is one planned child write.
type op struct {
	kind    Operation
	key     childKey
	gvr     schema.GroupVersionResource
	desired *unstructured.Unstructured // create, update
	norm    map[string]any             // desired as compared, for the report
	fp      fingerprint
	live    *liveChild // update, delete, release
	// lookFirst: an earlier pass found the name of this create taken, so
	// the object is read before anything is written.
	lookFirst bool
	// unowned: the live object carries no controller ownerReference
	// (liveChild.unowned), so the desired one is applied without one;
	// created: it carries desired.AnnotationCreated, which the desired one
	// keeps.
	unowned, created bool
	// needs are the children the desired object refers to
	// (desired.Graph.Refs): if one of them turns out to be someone else's,
	// this one is not written either.
	needs []childKey
	// unrendered: a prune of a child the parent no longer renders, held
	// if a create of the job finds a name taken.
	unrendered bool
	// feeds: another child of the parent refers to this one, so what the
	// write returns may change what that one renders (runJob replans).
	feeds bool
}

// job is the work for one parent — its child writes in graph order, its
// status, the pruning of children it no longer wants — or, for orphans
// whose parent is gone, only prunes. One worker runs a job start to end.
type job struct {
	// parent is nil for orphans; packed is the parent as compressed JSON
	// from the end of its plan until the job runs (pack), parent nil
	// meanwhile, and id names it then.
	parent   *unstructured.Unstructured
	packed   []byte
	dict     *s2.Dict // what packed was compressed against; nil: nothing
	id       string
	priority int32
	ops      []*op
	prunes   []*op
	synced   []syncedChild // children found in sync

	children []*liveChild // live children, for the status
	// inputs are the live children the parent was rendered with.
	inputs  []desired.Child
	failure *desired.Failure
	// statusFields are the top-level status fields resyncd's field manager
	// owns on the parent: one the status no longer has must be removed.
	statusFields []string
	withheld     Withheld
	since        time.Time // first sighting of its oldest drift
	// extra is what few jobs have (rare for reading it, more for adding
	// to it); nil for the others.
	extra *jobExtra
	// outcomes are what its writes came to; recounted, the children
	// counted again as the job rendered its parent again (replan); stalled,
	// that its status showed a permanent error; learnt, what its writes
	// teach the next pass. fold books them all.
	outcomes  []outcome
	recounted *ResourceReport
	stalled   bool
	learnt    lessons
	pending   int
	applied   bool
}

// jobExtra is what a job has only in some modes or for some parents: a
// pass may hold thousands of jobs, most of which have none of it.
type jobExtra struct {
	checks []*op      // driftCheck server: children to dry-run
	fights []childKey // children changed by another writer fightPasses passes in a row
	// waiting are the children the renderer left waiting for others;
	// waitingLive the live children that may be ones waiting, planned
	// within the job once what they wait for is written.
	waiting     []desired.Waiting
	waitingLive []*liveChild
	// blocked are the children the plan found taken or refused, and those
	// that refer to one; nil when there is none.
	blocked map[childKey]blockage
	// external is what was found for the parent's external references.
	external []desired.External
	taken    []string // why each child whose name is someone else's is not written
	// actsOnTaken are the children not written because they refer to an
	// object of someone else's: one made before is pruned all the same.
	actsOnTaken []childKey
	// refused are the children not written because they would be outside
	// the parent's namespace where the watched resource does not allow it.
	refused []desired.Failure
	held    []Held // children with resyncd.io/reconcile: disabled
	// metadata is the patch of the parent's own metadata (OpMetadata);
	// releasing says it takes kro's finalizer off a parent being deleted,
	// the job's only write. unmanaged says why it was not made.
	metadata  []jsonPatchOp
	releasing bool
	unmanaged string
	// unresolved: the parent's graph could not be rendered.
	unresolved bool
}

// noExtra is the extra of a job that has none, to read.
var noExtra jobExtra

// rare is j's extra, to read: empty if it has none.
func (j *job) rare() *jobExtra {
	if j.extra == nil {
		return &noExtra
	}
	return j.extra
}

// more is j's extra, made if it has none yet, to add to.
func (j *job) more() *jobExtra {
	if j.extra == nil {
		j.extra = &jobExtra{}
	}
	return j.extra
}

// setWaiting keeps what the renderer left waiting.
func (j *job) setWaiting(w []desired.Waiting) {
	if len(w) > 0 || j.extra != nil {
		j.more().waiting = w
	}
}

// orphans says j is the pass's job of orphans, which has no parent.
func (j *job) orphans() bool { return j.parent == nil && j.packed == nil }

// pack holds the parent as compressed JSON until the job runs: a pass
// with thousands of jobs ahead holds tens of bytes of each parent rather
// than the maps of its decoded form. The parents of a kind repeat one
// another's field names, values and condition messages, so the pass
// compresses each with S2 against a dictionary (*dict), the first parent
// it packs: the bench's HttpService, 1,408 bytes of JSON, packs to about 75
// (757 on its own). S2 is a block format, so nothing but the dictionary
// and its 32 KiB table is kept between parents. It keeps the parent as it
// is if it cannot.
func (j *job) pack(dict **s2.Dict) {
	b, err := j.parent.MarshalJSON()
	if err != nil {
		return
	}
	if *dict == nil {
		*dict = s2.MakeDict(b, []byte(`{"apiVersion":`)) // nil for fewer than 16 bytes
	}
	var packed []byte
	if *dict != nil {
		packed = (*dict).Encode(nil, b)
	} else {
		packed = s2.Encode(nil, b)
	}
	j.packed, j.dict, j.id, j.parent = bytes.Clone(packed), *dict, objectID(j.parent), nil
}

// unpack gives the job its parent back, decoded as the API server's
// answer is (whole numbers as int64), when the job runs.
func (j *job) unpack() error {
	if j.packed == nil {
		return nil
	}
	var b []byte
	var err error
	if j.dict != nil {
		b, err = j.dict.Decode(nil, j.packed)
	} else {
		b, err = s2.Decode(nil, j.packed)
	}
	if err != nil {
		return fmt.Errorf("the parent as planned cannot be read again: %w", err)
	}
	p := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(b, &p.Object); err != nil {
		return fmt.Errorf("the parent as planned cannot be read again: %w", err)
	}
	j.parent, j.packed, j.dict = p, nil, nil
	return nil
}

// release lets go of what only the job's run reads, once it has run. The
// pass holds every job until fold, which reads what each learnt and what
// its writes came to, nothing else; without this a job that ran would
// hold its children, refreshed with what the server returned, to the end
// of the pass.
func (j *job) release() {
	j.parent, j.packed, j.dict = nil, nil, nil
	j.ops, j.prunes, j.synced, j.children, j.inputs = nil, nil, nil, nil, nil
	j.statusFields, j.extra = nil, nil
}

func (j *job) class() int {
	c := OpStatus.class()
	for _, o := range j.ops {
		c = min(c, o.kind.class())
	}
	if j.orphans() {
		c = OpDelete.class()
	}
	return c
}

// waits says whether k may be a child that waits for another: one of its
// kind whose name and namespace are k's or not known yet. Such a child is
// not pruned, since the one that waits may be it.
func (j *job) waits(k childKey) bool {
	for _, w := range j.rare().waiting {
		if w.Group == k.Group && w.Kind == k.Kind && (w.Name == "" || w.Name == k.Name) && (w.Namespace == "" || w.Namespace == k.Namespace) {
			return true
		}
	}
	return false
}

func hasChecks(jobs []*job) bool {
	for _, j := range jobs {
		if len(j.rare().checks) > 0 {
			return true
		}
	}
	return false
}

func sortJobs(jobs []*job) {
	sort.SliceStable(jobs, func(a, b int) bool {
		ja, jb := jobs[a], jobs[b]
		if ja.priority != jb.priority {
			return ja.priority > jb.priority
		}
		if ca, cb := ja.class(), jb.class(); ca != cb {
			return ca < cb
		}
		return ja.since.Before(jb.since)
	})
}
