package engine

import (
	"k8s.io/apimachinery/pkg/types"
)

// memory is what one pass leaves the next about a watched resource. A
// pass plans from the last one's (resourceState.mem), which nothing
// writes while the pass runs, and leaves a new one: the planner fills in
// what planning learns, each job keeps what its writes teach (lessons),
// and fold adds those once the writes are done. The new memory replaces
// the last, so it holds nothing of an object that changed or went away.
type memory struct {
	// noops are the children that tier 1 called drifted and the server
	// did not change, by UID, resourceVersion and desired content.
	noops map[noopKey]bool
	// memo is tier 1's result for each child at the resourceVersion read.
	memo map[memoKey]memoEntry
	// idle holds the parents found with nothing to do, by UID and
	// resourceVersion, with the children compared; idleExternal, for each
	// of them, the versions of the external objects it read
	// (externalVersions).
	idle         map[memoKey][]syncedChild
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

// newMemory returns an empty memory, its maps sized after last's.
func newMemory(last *memory) *memory {
	m := &memory{noops: map[noopKey]bool{}, taken: map[childKey]bool{}, repaired: map[childKey]bool{}, announced: map[types.UID]string{},
		idleExternal: map[memoKey]string{}}
	if last == nil {
		m.memo, m.idle = map[memoKey]memoEntry{}, map[memoKey][]syncedChild{}
		return m
	}
	m.memo = make(map[memoKey]memoEntry, len(last.memo))
	m.idle = make(map[memoKey][]syncedChild, len(last.idle))
	return m
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

// fold adds what each job learnt to next, and forgets it in the job.
func fold(next *memory, jobs []*job) {
	for _, j := range jobs {
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
	}
}
