package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// The ring's marks on its Leases.
const (
	// LabelRing names the ring a Lease belongs to: a replica LISTs the
	// Leases with its ring's name to see the others and the layouts.
	LabelRing = "resyncd.io/ring"
	// annotationIdentity is the replica's name in the ring.
	annotationIdentity = "resyncd.io/identity"
	// annotationClaims are the hash ranges, by cluster, the replica holds
	// (it may write there, and does until its passes over them end) and
	// those it waits to take once no other replica claims them.
	annotationClaims = "resyncd.io/claims"
	// annotationLayouts, on the ring's layout Lease, are the bounds of
	// the slots of each cluster whose namespaces several replicas split.
	annotationLayouts = "resyncd.io/layouts"
)

// ErrLost is Run's error when the replica could not renew its Lease
// within the renew deadline: the others may take its work as soon as the
// Lease expires, so it must stop writing now.
var ErrLost = errors.New("could not renew the ring Lease within the renew deadline")

// Options configure a Ring.
type Options struct {
	// Leases reads and writes the ring's Leases.
	Leases coordinationclient.LeasesGetter
	// Namespace holds the Leases; Name is the ring's, the prefix of each
	// replica's Lease and the value of LabelRing.
	Namespace, Name string
	// Identity is this replica's name in the ring, unique among the
	// replicas.
	Identity string
	// LeaseDuration is how long the others wait, after they last saw the
	// Lease renewed, before they take it for dead; RenewDeadline is how
	// long the replica tries to renew before it stops writing;
	// RetryPeriod is the time between renewals.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Namespaces returns the namespaces of a cluster that its layout is
	// cut by. Only the first replica of a cluster's group asks: when the
	// cluster has no layout yet, then every LayoutCheck.
	Namespaces func(ctx context.Context, cluster string) ([]string, error)
	// LayoutCheck is how often a layout is checked against the
	// namespaces; 0: 30s.
	LayoutCheck time.Duration
	// Log receives membership changes.
	Log *zap.Logger
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Ring is one replica's place in a ring of replicas that share the work.
//
// It renews a Lease of its own and LISTs the others' to see who is alive.
// Groups and Split say which slots of which cluster it should own; it
// takes a slot only when no live replica claims any of its hashes: it
// publishes the slots it waits for, takes them after a LIST made once
// that claim was written shows no other claim, and publishes the slots it
// holds until its passes over them end (Acquire). Two replicas waiting
// for the same hashes (their views of the ring differ for a moment): the
// one whose identity sorts first keeps waiting, the other withdraws.
// The others take a dead replica's slots once its Lease has not changed
// for LeaseDuration; a replica that cannot renew for RenewDeadline, less
// than LeaseDuration, stops (ErrLost).
type Ring struct {
	opt    Options
	lease  string // this replica's Lease
	layout string // the ring's layout Lease
	holder string // this process: identity and a random suffix

	mu       sync.Mutex
	clusters []string
	members  []string
	cur      *coordinationv1.Lease // this replica's Lease as last written; nil: to be read
	renewed  time.Time             // the last renewal written
	joined   bool                  // the Lease is this process's
	joinedAt time.Time             // when it became so
	lost     bool
	seen     map[string]sighting // by Lease name, the others
	// layouts are the layout Lease's, by cluster; layoutLease as read.
	layouts     map[string]Layout
	layoutLease *coordinationv1.Lease
	checked     map[string]time.Time // when the layout of a cluster was last checked
	// using is the layout held and pending count in, by cluster.
	using         map[string]Layout
	held, pending map[string]Set
	// published are the pending ranges as the last renewal wrote them:
	// only slots within them may be taken after a LIST.
	published map[string][]Range
	busy      map[string]map[int]Part // by cluster, the parts of passes in flight
	grouped   map[string]bool         // the clusters whose group this replica is in
	nextBusy  int
	changed   chan struct{}
}

// sighting is what the ring saw of another replica's Lease.
type sighting struct {
	resourceVersion string
	at              time.Time // when it last changed, by this replica's clock
	identity        string
	holder          string
	claims          map[string]claims
	// unread is set when the claims could not be read (a replica of
	// another version, say): it is taken to claim everything.
	unread bool
}

// claims are a replica's ranges of one cluster.
type claims struct {
	Held    []Range `json:"held,omitempty"`
	Pending []Range `json:"pending,omitempty"`
}

// New returns the ring of opt; Run makes it take part.
func New(opt Options) *Ring {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.LayoutCheck == 0 {
		opt.LayoutCheck = 30 * time.Second
	}
	return &Ring{
		opt: opt, lease: opt.Name + "-" + opt.Identity, layout: opt.Name + "-layout", holder: opt.Identity + "_" + string(uuid.NewUUID()),
		seen: map[string]sighting{}, layouts: map[string]Layout{}, checked: map[string]time.Time{}, using: map[string]Layout{},
		held: map[string]Set{}, pending: map[string]Set{}, published: map[string][]Range{}, busy: map[string]map[int]Part{},
		changed: make(chan struct{}, 1),
	}
}

// LeaseName is the name of this replica's Lease.
func (r *Ring) LeaseName() string { return r.lease }

// SetClusters sets the clusters whose work the ring shares; every
// replica must be given the same names to agree on who owns what.
func (r *Ring) SetClusters(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clusters = slices.Compact(slices.Sorted(slices.Values(names)))
}

// Clusters are the clusters SetClusters gave.
func (r *Ring) Clusters() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.clusters)
}

// Changed receives a value when the slots held or the members changed.
func (r *Ring) Changed() <-chan struct{} { return r.changed }

// Members are the identities of the live replicas, this one included
// once it has joined.
func (r *Ring) Members() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.members)
}

// Held returns what this replica may write, by cluster.
func (r *Ring) Held() map[string]Part {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Part, len(r.held))
	for c, s := range r.held {
		out[c] = Part{Layout: r.using[c], Slots: s}
	}
	return out
}

// Wants reports whether this replica owns, or waits for, or still works
// on, part of cluster: whether it should be connected to it.
func (r *Ring) Wants(cluster string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.grouped[cluster] || r.held[cluster]|r.pending[cluster] != 0 || len(r.busy[cluster]) > 0
}

// Acquire returns the part of cluster a pass may work on, and the
// function the pass calls once its writes are done: until then the
// replica keeps claiming it, also when it no longer owns it, so that no
// other replica takes it while the pass writes.
func (r *Ring) Acquire(cluster string) (Part, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Part{Layout: r.using[cluster], Slots: r.held[cluster]}
	if r.lost || !r.joined || p.Slots == 0 || r.opt.Now().Sub(r.renewed) >= r.opt.RenewDeadline {
		return Part{Layout: p.Layout}, func() {}
	}
	if r.busy[cluster] == nil {
		r.busy[cluster] = map[int]Part{}
	}
	id := r.nextBusy
	r.nextBusy++
	r.busy[cluster][id] = p
	var once sync.Once
	return p, func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			delete(r.busy[cluster], id)
		})
	}
}

// Run renews the Lease and follows the ring every RetryPeriod until ctx
// ends (nil is never returned: ctx's error, or ErrLost).
func (r *Ring) Run(ctx context.Context) error {
	tick := time.NewTicker(r.opt.RetryPeriod)
	defer tick.Stop()
	for {
		// A slot waited for can be taken one renewal and one LIST later:
		// make them at once rather than a period apart.
		for again := true; again; {
			joined, err := r.renew(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if r.expired() {
					return ErrLost
				}
				r.opt.Log.Warn("Ring Lease not renewed", zap.String("lease", r.lease), zap.Error(err))
				break
			}
			if !joined {
				break
			}
			if again, err = r.follow(ctx); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r.opt.Log.Warn("Ring not read", zap.String("namespace", r.opt.Namespace), zap.Error(err))
				break
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// expired reports whether the renew deadline passed since the last
// renewal: then the replica writes nothing more.
func (r *Ring) expired() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.joined && !r.lost && r.opt.Now().Sub(r.renewed) >= r.opt.RenewDeadline {
		r.lost = true
		r.held = map[string]Set{}
		r.notify()
	}
	return r.lost
}

// Leave deletes this replica's Lease, once its passes have ended, so that
// the others take its work at once rather than after LeaseDuration.
func (r *Ring) Leave(ctx context.Context) error {
	r.mu.Lock()
	cur, joined := r.cur, r.joined
	r.mu.Unlock()
	if !joined || cur == nil {
		return nil
	}
	err := r.opt.Leases.Leases(r.opt.Namespace).Delete(ctx, r.lease, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// renew writes this replica's Lease: its renew time and its claims. It
// reports whether the Lease is this process's; not while another process
// of the same identity holds it.
func (r *Ring) renew(ctx context.Context) (bool, error) {
	leases := r.opt.Leases.Leases(r.opt.Namespace)
	r.mu.Lock()
	cur, joined, renewed := r.cur, r.joined, r.renewed
	r.mu.Unlock()
	// A request that hangs must not keep the replica writing past its
	// renew deadline: the others count from the last renewal they saw.
	wait := r.opt.RenewDeadline
	if joined {
		wait -= r.opt.Now().Sub(renewed)
	}
	ctx, cancel := context.WithTimeout(ctx, max(wait, time.Millisecond))
	defer cancel()
	if cur == nil {
		got, err := leases.Get(ctx, r.lease, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("get lease %s/%s: %w", r.opt.Namespace, r.lease, err)
		case !r.mayTake(got):
			return false, nil // another process of this identity holds it: wait for it to expire
		default:
			cur = got
		}
	}
	now := r.opt.Now()
	r.mu.Lock()
	next, pending := r.leaseFor(cur, now)
	r.mu.Unlock()
	var written *coordinationv1.Lease
	var err error
	if cur == nil {
		written, err = leases.Create(ctx, next, metav1.CreateOptions{})
	} else {
		written, err = leases.Update(ctx, next, metav1.UpdateOptions{})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.cur = nil // read again: another process may have written it
		return false, fmt.Errorf("write lease %s/%s: %w", r.opt.Namespace, r.lease, err)
	}
	if r.lost {
		return false, ErrLost
	}
	if !r.joined {
		r.opt.Log.Info("Joined the ring", zap.String("lease", r.lease), zap.String("identity", r.opt.Identity))
		r.joinedAt = now
	}
	r.cur, r.renewed, r.joined, r.published = written, now, true, pending
	return true, nil
}

// mayTake reports whether this process may take the Lease got: its own,
// released, or not renewed for LeaseDuration as this replica saw it.
func (r *Ring) mayTake(got *coordinationv1.Lease) bool {
	holder := ""
	if got.Spec.HolderIdentity != nil {
		holder = *got.Spec.HolderIdentity
	}
	if holder == "" || holder == r.holder {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.seen[got.Name]
	now := r.opt.Now()
	if !ok || s.resourceVersion != got.ResourceVersion {
		r.opt.Log.Warn("Another process holds this replica's ring Lease: waiting for it to expire",
			zap.String("lease", got.Name), zap.String("holder", holder))
		r.seen[got.Name] = sighting{resourceVersion: got.ResourceVersion, at: now, holder: holder}
		return false
	}
	return now.Sub(s.at) >= r.opt.LeaseDuration
}

// leaseFor returns cur (nil: a new Lease) renewed at now, with the
// replica's claims, and the pending ranges it claims.
func (r *Ring) leaseFor(cur *coordinationv1.Lease, now time.Time) (*coordinationv1.Lease, map[string][]Range) {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: r.lease, Namespace: r.opt.Namespace}}
	if cur != nil {
		l = cur.DeepCopy()
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[LabelRing] = r.opt.Name
	all := map[string]claims{}
	pending := map[string][]Range{}
	for c, s := range r.held {
		all[c] = claims{Held: Part{Layout: r.using[c], Slots: s}.Ranges()}
	}
	for c, parts := range r.busy {
		for _, p := range parts {
			cl := all[c]
			cl.Held = append(cl.Held, p.Ranges()...)
			all[c] = cl
		}
	}
	for c, s := range r.pending {
		cl := all[c]
		cl.Pending = Part{Layout: r.using[c], Slots: s}.Ranges()
		pending[c] = cl.Pending
		all[c] = cl
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[annotationIdentity] = r.opt.Identity
	l.Annotations[annotationClaims] = encodeClaims(all)
	seconds := int32(r.opt.LeaseDuration / time.Second)
	mt := metav1.NewMicroTime(now)
	l.Spec.HolderIdentity = &r.holder
	l.Spec.LeaseDurationSeconds = &seconds
	l.Spec.RenewTime = &mt
	if cur == nil || !r.joined {
		l.Spec.AcquireTime = &mt
	}
	return l, pending
}

// follow LISTs the ring's Leases, sees who is alive, drops the slots
// this replica should no longer own, and takes those it waited for that
// no other live replica claims. It reports whether it now waits for
// slots its Lease does not claim yet.
func (r *Ring) follow(ctx context.Context) (bool, error) {
	// A request that hangs here would stop the renewals: the replica
	// would hold its work in its own eyes only, the others taking it once
	// its Lease expired, and never stop. So what follows a renewal, the
	// layout and the removal of Leases long gone included (deferred
	// below), has half the renew deadline, the next renewal the rest.
	r.mu.Lock()
	renewed := r.renewed
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, max(r.opt.RenewDeadline/2-r.opt.Now().Sub(renewed), time.Millisecond))
	defer cancel()
	list, err := r.opt.Leases.Leases(r.opt.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelRing + "=" + r.opt.Name})
	if err != nil {
		return false, fmt.Errorf("list leases: %w", err)
	}
	now := r.opt.Now()
	var gone []*coordinationv1.Lease
	var keep []string // clusters whose layout this replica keeps
	defer func() {
		for _, l := range gone {
			r.collect(ctx, l)
		}
		for _, c := range keep {
			r.keepLayout(ctx, c)
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost {
		return false, nil
	}
	var others []sighting
	members := []string{r.opt.Identity}
	listed := map[string]bool{}
	r.layoutLease, r.layouts = nil, map[string]Layout{}
	for i := range list.Items {
		l := &list.Items[i]
		switch l.Name {
		case r.lease:
			continue
		case r.layout:
			r.layoutLease, r.layouts = l, decodeLayouts(l.Annotations[annotationLayouts])
			continue
		}
		listed[l.Name] = true
		s := r.sight(l, now)
		age := now.Sub(s.at)
		switch {
		case s.holder != "" && age < r.opt.LeaseDuration:
			others = append(others, s)
			members = append(members, s.identity)
		case age >= 10*r.opt.LeaseDuration:
			gone = append(gone, l)
		}
	}
	for name := range r.seen {
		if !listed[name] {
			delete(r.seen, name)
		}
	}
	slices.Sort(members)
	members = slices.Compact(members)
	if !slices.Equal(members, r.members) {
		r.opt.Log.Info("Ring members", zap.Strings("members", members))
		r.members = members
		r.notify()
	}
	whole, groups := Groups(r.clusters, members)
	// Only a replica that has watched the ring for a lease duration has
	// seen every live replica renew: before, replicas started together
	// would each take everything for a moment, and pass over all of it.
	watching := now.Sub(r.joinedAt) < r.opt.LeaseDuration
	clusters := slices.Concat(r.clusters, slices.Collect(maps.Keys(r.held)), slices.Collect(maps.Keys(r.pending)))
	before := maps.Clone(r.held)
	unwritten := false
	r.grouped = map[string]bool{}
	for _, c := range slices.Compact(slices.Sorted(slices.Values(clusters))) {
		group := groups[c]
		mine := slices.Contains(group, r.opt.Identity)
		r.grouped[c] = mine
		layout, want := Layout{}, Set(0)
		switch {
		case watching:
			layout = r.using[c]
		case whole:
			if mine {
				want = layout.All()
			}
		default:
			var ok bool
			if layout, ok = r.layouts[c]; !ok {
				layout = r.using[c]
			}
			if mine && group[0] == r.opt.Identity && (!ok || now.Sub(r.checked[c]) >= r.opt.LayoutCheck) {
				keep = append(keep, c)
			}
			if ok && mine {
				want = Split(c, layout.Slots(), group)[r.opt.Identity]
			}
		}
		if !layout.Equal(r.using[c]) {
			// Cut again: what was held counts in the old slots. Passes in
			// flight keep claiming their ranges; the rest is taken anew.
			r.using[c] = layout
			delete(r.held, c)
			delete(r.pending, c)
		}
		unwritten = r.settle(c, want, others) || unwritten
	}
	r.logHeld(before)
	return unwritten, nil
}

// settle updates the slots of cluster c held and waited for from want,
// the slots this replica should own, and the claims of the live others;
// it reports whether it waits for slots its Lease does not claim yet.
func (r *Ring) settle(c string, want Set, others []sighting) bool {
	layout := r.using[c]
	var claimed, lower []Range // by any other; pending by one whose identity sorts first
	everything := false
	for _, o := range others {
		cl := o.claims[c]
		claimed = append(claimed, cl.Held...)
		claimed = append(claimed, cl.Pending...)
		if o.identity < r.opt.Identity {
			lower = append(lower, cl.Pending...)
		}
		everything = everything || o.unread
	}
	held, pending := r.held[c]&want, Set(0)
	unwritten := false
	for i := range layout.Slots() {
		bit := Set(1) << i
		if want&bit == 0 || held&bit != 0 {
			continue
		}
		rg := layout.Range(i)
		switch {
		case overlaps(rg, lower):
			// Withdrawn: the other replica keeps waiting for it.
		case !everything && !overlaps(rg, claimed) && rg.Within(r.published[c]):
			held |= bit
		default:
			pending |= bit
			unwritten = unwritten || !rg.Within(r.published[c])
		}
	}
	setOrDelete(r.held, c, held)
	setOrDelete(r.pending, c, pending)
	return unwritten
}

// logHeld logs each cluster whose slots held changed since before.
func (r *Ring) logHeld(before map[string]Set) {
	if maps.Equal(before, r.held) {
		return
	}
	clusters := slices.Concat(slices.Collect(maps.Keys(before)), slices.Collect(maps.Keys(r.held)))
	for _, c := range slices.Compact(slices.Sorted(slices.Values(clusters))) {
		if before[c] != r.held[c] {
			p := Part{Layout: r.using[c], Slots: r.held[c]}
			r.opt.Log.Info("Ring slots", zap.String("cluster", c), zap.Int("slots", p.Slots.Len()),
				zap.Int("of", p.Layout.Slots()), zap.String("ranges", p.String()))
		}
	}
	r.notify()
}

func overlaps(r Range, rs []Range) bool {
	for _, o := range rs {
		if r.Overlaps(o) {
			return true
		}
	}
	return false
}

// sight records l and returns what is known of it.
func (r *Ring) sight(l *coordinationv1.Lease, now time.Time) sighting {
	s, ok := r.seen[l.Name]
	if !ok || s.resourceVersion != l.ResourceVersion {
		s = sighting{resourceVersion: l.ResourceVersion, at: now, identity: l.Annotations[annotationIdentity]}
		if l.Spec.HolderIdentity != nil {
			s.holder = *l.Spec.HolderIdentity
		}
		var err error
		if s.claims, err = decodeClaims(l.Annotations[annotationClaims]); err != nil {
			s.unread = true
		}
		r.seen[l.Name] = s
	}
	return s
}

// collect deletes a Lease left by a replica long gone (a pod replaced),
// unless it changed since it was read.
func (r *Ring) collect(ctx context.Context, l *coordinationv1.Lease) {
	err := r.opt.Leases.Leases(r.opt.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}})
	if err == nil {
		r.opt.Log.Info("Removed the Lease of a replica long gone", zap.String("lease", l.Name))
	}
}

// keepLayout cuts the slots of cluster c by its namespaces, when it has
// no layout yet or its layout has gone stale, and writes it to the
// layout Lease; another replica that wrote first wins, and the next
// follow reads what it wrote.
func (r *Ring) keepLayout(ctx context.Context, c string) {
	if r.opt.Namespaces == nil {
		return
	}
	namespaces, err := r.opt.Namespaces(ctx, c)
	if err != nil {
		r.opt.Log.Warn("Namespaces not read: the cluster's slots wait for a layout", zap.String("cluster", c), zap.Error(err))
		return
	}
	r.mu.Lock()
	cur, ok := r.layouts[c]
	base := r.layoutLease
	r.checked[c] = r.opt.Now()
	r.mu.Unlock()
	if ok && !cur.Stale(namespaces) {
		return
	}
	next := LayoutOf(namespaces)
	leases := r.opt.Leases.Leases(r.opt.Namespace)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: r.layout, Namespace: r.opt.Namespace, Labels: map[string]string{LabelRing: r.opt.Name}}}
	if base != nil {
		l = base.DeepCopy()
	}
	layouts := decodeLayouts(l.Annotations[annotationLayouts])
	layouts[c] = next
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[annotationLayouts] = encodeLayouts(layouts)
	if base == nil {
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
	} else {
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		r.mu.Lock()
		delete(r.checked, c) // read it again, then check again
		r.mu.Unlock()
	case err != nil:
		r.opt.Log.Warn("Layout not written", zap.String("cluster", c), zap.Error(err))
	default:
		r.opt.Log.Info("Cut the cluster's namespaces into slots", zap.String("cluster", c),
			zap.Int("namespaces", len(namespaces)), zap.Int("slots", next.Slots()), zap.Bool("again", ok))
	}
}

func setOrDelete(m map[string]Set, k string, s Set) {
	if s == 0 {
		delete(m, k)
		return
	}
	m[k] = s
}

func (r *Ring) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// MarshalText writes r as lo:hi in hex, both included.
func (r Range) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "%x:%x", r.Lo, r.Hi), nil }

// UnmarshalText reads what MarshalText writes.
func (r *Range) UnmarshalText(b []byte) error {
	lo, hi, ok := strings.Cut(string(b), ":")
	var err1, err2 error
	r.Lo, err1 = strconv.ParseUint(lo, 16, 64)
	r.Hi, err2 = strconv.ParseUint(hi, 16, 64)
	if !ok || err1 != nil || err2 != nil || r.Lo > r.Hi {
		return fmt.Errorf("range %q: want lo:hi in hex", b)
	}
	return nil
}

func encodeClaims(all map[string]claims) string {
	b, _ := json.Marshal(all) // ranges and strings always encode
	return string(b)
}

func decodeClaims(v string) (map[string]claims, error) {
	out := map[string]claims{}
	if v == "" {
		return out, nil
	}
	return out, json.Unmarshal([]byte(v), &out)
}

// encodeLayouts writes each cluster's bounds in hex.
func encodeLayouts(layouts map[string]Layout) string {
	m := make(map[string][]string, len(layouts))
	for c, l := range layouts {
		m[c] = make([]string, len(l.Bounds))
		for i, b := range l.Bounds {
			m[c][i] = strconv.FormatUint(b, 16)
		}
	}
	b, _ := json.Marshal(m) // strings always encode
	return string(b)
}

// decodeLayouts reads what encodeLayouts wrote, leaving out a cluster
// whose bounds it cannot read: its slots wait until it is cut again.
func decodeLayouts(v string) map[string]Layout {
	out := map[string]Layout{}
	var m map[string][]string
	if json.Unmarshal([]byte(v), &m) != nil {
		return out
	}
	for c, bounds := range m {
		l := Layout{Bounds: make([]uint64, 0, len(bounds))}
		ok := len(bounds) < MaxSlots
		for _, s := range bounds {
			b, err := strconv.ParseUint(s, 16, 64)
			ok = ok && err == nil && b > 0 && (len(l.Bounds) == 0 || b > l.Bounds[len(l.Bounds)-1])
			l.Bounds = append(l.Bounds, b)
		}
		if ok {
			out[c] = l
		}
	}
	return out
}
