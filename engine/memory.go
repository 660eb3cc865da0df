package engine

import "k8s.io/apimachinery/pkg/types"

// memory is what one pass leaves the next about a watched resource. A
// pass plans from the last one's (resourceState.mem), which nothing
// writes while the pass runs, and leaves a new one: the planner fills in
// what planning learns, each job keeps what its writes teach (lessons),
// and fold adds those once the writes are done. The new memory replaces
// the last, so it holds nothing of an object that changed or went away.
//
// memo and idle, the parts that grow with the parents, are not made anew:
// a pass's memory shares them with the last one's, stamps what it reads
// again with its own number, and drops the rest when it ends (sweep), so
// that a pass does not hold two of each.
type memory struct {
	// pass numbers the memory: memo and idle entries stamped with another
	// are the last pass's, and go at sweep unless read again. Every pass
	// sweeps, so an entry is of this pass or the last one, and a number
	// that wraps around tells them apart as well as any.
	pass uint8
	// noops are the children that tier 1 called drifted and the server
	// did not change, by UID, resourceVersion and desired content.
	noops map[noopKey]bool
	// memo is tier 1's result for each child at the resourceVersion read;
	// wholes, with driftCheck server, the fingerprint the dry-run's result
	// is compared with.
	memo   *memoTable
	wholes map[memoKey]fingerprint
	// idle holds the parents found with nothing to do, by UID and
	// resourceVersion, with the children compared; idleExternal, for each
	// of them, the versions of the external objects it read
	// (externalVersions).
	idle         *idleTable
	idleExternal map[memoKey]string
	// taken holds the children whose name was found to be an object
	// resyncd may not write.
	taken map[childKey]bool
	// repaired holds the children whose update was made: one found
	// drifted again right after is being changed by another writer.
	repaired map[childKey]bool
	// announced holds the reason of the Stalled Event recorded for each
	// parent whose status could not be written, so that the Event is not
	// repeated every pass.
	announced map[types.UID]string
}

// newMemory returns the memory of the pass after last's: empty but for
// memo and idle, which it shares with last.
func newMemory(last *memory) *memory {
	m := &memory{noops: map[noopKey]bool{}, taken: map[childKey]bool{}, repaired: map[childKey]bool{}, announced: map[types.UID]string{},
		idleExternal: map[memoKey]string{}, wholes: map[memoKey]fingerprint{}}
	if last == nil {
		m.memo, m.idle = &memoTable{}, &idleTable{}
		return m
	}
	m.pass = last.pass + 1
	m.memo, m.idle = last.memo, last.idle
	return m
}

// idleParent is what the memory keeps of a parent found idle: the
// children it compared, stamped with the pass that found it.
type idleParent struct {
	pass     uint8
	children []idleChild
}

// sweep drops from memo and idle what this pass did not read again.
func (m *memory) sweep() {
	m.memo.sweep(m.pass)
	m.idle.sweep(m.pass)
}

// lessons are what one job's writes, and its dry-runs, teach the next
// pass. Only the job's worker adds to them, so they need no lock; fold
// adds them to the pass's memory once every write is done.
type lessons struct {
	noops     []noopKey
	repaired  []childKey
	taken     []childKey
	announced []announcement
}

// announcement is a Stalled Event recorded for a parent whose status
// could not be written.
type announcement struct {
	parent types.UID
	reason string
}

// result is what one write came to.
type result int

const (
	resultSuccess result = iota // made: the object changed (or, for a delete, is gone)
	resultNoop                  // made, and the server changed nothing; or nothing was left to do
	resultFailed
	resultSuperseded // a delete whose UID precondition failed: the object was re-created
	resultTaken      // a create that found the name someone else's; nothing written
	resultWithheld   // not made on purpose: warn mode, paused, reconcile disabled
	resultBlocked    // not made: the parent is blocked by a permanent error
	resultDeferred   // not made: the pass's budget is spent
)

// label is the result label of resyncd_applies_total.
func (r result) label() string {
	switch r {
	case resultSuccess:
		return "success"
	case resultFailed:
		return "error"
	default:
		return "noop"
	}
}

// outcome is what one write of a job, or one not made, came to; fold
// turns a pass's outcomes into its report.
type outcome struct {
	key  childKey // empty for the parent's status
	verb Operation
	// resourceVersion is the object's after the write, when it was made.
	resourceVersion string
	result          result
	// transient: a failure that may pass (isTransient, or a 403 while the
	// server warms up).
	transient bool
	err       error
}

// book keeps o for fold; only the job's worker calls it.
func (j *job) book(o outcome) { j.outcomes = append(j.outcomes, o) }

// fold adds what each job learnt to next, and books what its writes came
// to in rep; it forgets both in the job.
func fold(next *memory, rep *ResourceReport, jobs []*job) {
	for _, j := range jobs {
		j.fold(next, rep)
	}
}

// fold is fold of one job: a parent's dropped as idle at plan time.
func (j *job) fold(next *memory, rep *ResourceReport) {
	l := &j.learnt
	for _, k := range l.noops {
		next.noops[k] = true
	}
	for _, k := range l.repaired {
		next.repaired[k] = true
	}
	for _, k := range l.taken {
		next.taken[k] = true
	}
	for _, a := range l.announced {
		next.announced[a.parent] = a.reason
	}
	*l = lessons{}
	for _, o := range j.outcomes {
		rep.book(o)
	}
	j.outcomes = nil
	if j.recounted != nil {
		rep.merge(j.recounted)
		j.recounted = nil
	}
	if j.stalled {
		rep.Stalled++
		j.stalled = false
	}
}

// isNoop says whether the last pass found that applying fp to live
// changes nothing, and the memory's key of that finding, which whoever
// relies on it carries on to the next pass.
func (rs *resourceState) isNoop(live *liveChild, fp fingerprint) (noopKey, bool) {
	k := noopKey{string(live.uid), live.resourceVersion, fp}
	return k, rs.mem.noops[k]
}
