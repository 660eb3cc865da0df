package engine

import (
	"time"
)

// Report is what one pass did.
type Report struct {
	// Resources has one entry per watched resource, in configuration order.
	Resources []ResourceReport
}

// ResourceReport is what one pass over one watched resource did.
type ResourceReport struct {
	// Resource is resource.version.group, for example httpservices.v1alpha1.resyncd.io.
	Resource string
	// Parents is the number of parents seen.
	Parents int
	// InSync, Drifted, Missing and Orphaned count the children by state;
	// Taken counts those whose name is an object resyncd may not write.
	InSync, Drifted, Missing, Orphaned, Taken int
	// Created, Updated, Deleted and Statuses count the writes that changed
	// something; NoOps the updates the server found unchanged.
	Created, Updated, Deleted, Statuses, NoOps int
	// Released counts the children let go instead of deleted
	// (resyncd.io/prune: disabled).
	Released int
	// Metadata counts the writes of parents' own metadata: kro's finalizer
	// and labels put on an instance, or the finalizer taken off.
	Metadata int
	// Deferred counts the writes left for the next pass by the budget.
	Deferred int
	// Withheld counts the writes not made on purpose (warn mode,
	// spec.paused, resyncd.io/reconcile: disabled on the parent).
	Withheld int
	// Blocked counts the writes not made because the parent is blocked by
	// a permanent error: its spec cannot be rendered, or an earlier write
	// of its job was refused for good.
	Blocked int
	// Superseded counts the deletes the API server refused because the
	// object is no longer the one planned (re-created since it was read:
	// the UID precondition failed); nothing was deleted.
	Superseded int
	// Failed counts the writes that failed.
	Failed int
	// Transient counts the failed writes that failed for a passing reason
	// (no answer, 429, 5xx) even after the retries: the API server is
	// unreachable or overloaded.
	Transient int
	// Stalled counts the parents blocked by a permanent error.
	Stalled int
	// Foreign counts the parents LISTed that are another replica's, and
	// were skipped: the API server ignored the shard selector, or none
	// was sent (sharding.serverSelector off).
	Foreign int
	// Sharded is whether the API server filtered the parents' LIST by
	// the replica's namespace ranges: it said so, or it returned no other
	// replica's parent.
	Sharded bool
	// ExternalLists counts the LISTs of external references' kinds: one
	// per kind and namespace the pass's parents read.
	ExternalLists int
	// Drifts are the drifted, missing and orphaned children; kept only with
	// Options.KeepFields, for `resyncd diff`.
	Drifts []Drift
	// Duration is how long the pass took.
	Duration time.Duration

	objects map[kindState]int
}

type kindState struct{ kind, state string }

// count books one child of kind in state.
func (r *ResourceReport) count(kind, state string) { r.tally(kind, state, 1) }

// uncount takes back count(kind, state): a decision made again within a
// job (replan).
func (r *ResourceReport) uncount(kind, state string) { r.tally(kind, state, -1) }

func (r *ResourceReport) tally(kind, state string, n int) {
	switch state {
	case stateInSync:
		r.InSync += n
	case stateDrifted:
		r.Drifted += n
	case stateMissing:
		r.Missing += n
	case stateOrphaned:
		r.Orphaned += n
	case stateTaken:
		r.Taken += n
	}
	if r.objects == nil {
		r.objects = map[kindState]int{}
	}
	r.objects[kindState{kind, state}] += n
}

// merge adds the children o counted, and its drifts, to r.
func (r *ResourceReport) merge(o *ResourceReport) {
	for ks, n := range o.objects {
		r.tally(ks.kind, ks.state, n)
	}
	r.Drifts = append(r.Drifts, o.Drifts...)
}

// missingWasTaken books a child counted missing as taken: its create
// found an object of the name that resyncd may not write.
func (r *ResourceReport) missingWasTaken(kind string) {
	r.uncount(kind, stateMissing)
	r.count(kind, stateTaken)
}

// Writes is the number of writes the pass made.
func (r ResourceReport) Writes() int {
	return r.Created + r.Updated + r.Deleted + r.Released + r.Statuses + r.Metadata + r.NoOps + r.Superseded + r.Failed
}

// Drift is one child that differs from what it should be.
type Drift struct {
	// Object is Kind/namespace/name.
	Object string
	// Reason is missing, changed or orphaned.
	Reason string
	// Live are the live object's values at the fields resyncd would apply
	// (for an orphan, the fields resyncd owns); nil when missing, or when
	// the engine keeps only fingerprints.
	Live map[string]any
	// Desired are the fields resyncd would apply; nil when orphaned.
	Desired map[string]any
}

// book counts one write's outcome.
func (r *ResourceReport) book(o outcome) {
	switch o.result {
	case resultSuccess:
		switch o.verb {
		case OpCreate:
			r.Created++
		case OpUpdate:
			r.Updated++
		case OpDelete:
			r.Deleted++
		case OpRelease:
			r.Released++
		case OpStatus:
			r.Statuses++
		case OpMetadata:
			r.Metadata++
		}
	case resultNoop:
		if o.verb == OpUpdate {
			r.NoOps++
		}
	case resultFailed:
		r.Failed++
		if o.transient {
			r.Transient++
		}
	case resultSuperseded:
		r.Superseded++
	case resultTaken:
		r.missingWasTaken(o.key.Kind)
	case resultWithheld:
		r.Withheld++
	case resultBlocked:
		r.Blocked++
	case resultDeferred:
		r.Deferred++
	}
}

// Child states, the values of the state label of resyncd_managed_objects.
const (
	stateInSync   = "in_sync"
	stateDrifted  = "drifted"
	stateMissing  = "missing"
	stateOrphaned = "orphaned"
	// stateTaken: wanted by a parent, but the name is an object resyncd
	// may not write, or the child would be where the watched resource
	// does not allow children (childNamespaces, clusterScopedChildren).
	stateTaken = "taken"
)
