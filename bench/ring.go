package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resyncd/resyncd/shard"
)

// The ring figure: the same N parents kept in sync by one `resyncd run`
// and by three sharing the work.
const (
	// ringOneName is the one replica, sharding off; ringThreeName the
	// three replicas of the ring.
	ringOneName   = "resyncd-ring-1"
	ringThreeName = "resyncd-ring-3"
	// ringReplicas is the number of replicas of the ring.
	ringReplicas = 3
	// parentsPerRingNS: many small namespaces, as teams have, so that the
	// ring has enough of them to split evenly.
	parentsPerRingNS = 20
	// ringLeaseNamespace and ringLeaseName are where the ring's Leases
	// live.
	ringLeaseNamespace, ringLeaseName = "resyncd-system", "ring"
	// ringAll is the Replica of a sample of the three replicas' passes
	// started at once.
	ringAll = "all"
	// ringQuiet is how long no replica may end a pass before the ring,
	// settled, counts as at rest: its passes over the empty namespaces
	// take milliseconds.
	ringQuiet = 5 * time.Second
)

// RingRun is the ring figure's samples, at each N of -ring-n.
type RingRun struct {
	Sizes []int `json:"sizes"`
	// Samples: for ringOneName, its first pass and -reps steady passes;
	// for ringThreeName, each replica's first pass alone, then -reps
	// rounds of a steady pass of each replica alone (phase "steady") and
	// of the three at once (phase "together", Replica "all").
	Samples []*Sample `json:"samples"`
}

// ringNamespace is the i-th namespace of the ring figure. Sequential
// names are FNV-1a's hard case: they differ in their last bytes only.
func ringNamespace(i int) string { return fmt.Sprintf("team-%04d", i+1) }

// ringNamespaces are the ring figure's namespaces at N.
func ringNamespaces(n int) []string {
	out := make([]string, (n+parentsPerRingNS-1)/parentsPerRingNS)
	for i := range out {
		out[i] = ringNamespace(i)
	}
	return out
}

// measureRing measures the ring figure at n. The ring forms first, on
// n/20 empty namespaces, as a fleet's replicas run before the work
// comes: a replica that joins a ring alone holds all of it until the
// others join, and its peak RSS would be the one replica's. Then the
// parents are loaded and converged by an unmeasured `resyncd once`
// (the ring's passes run only when the bench starts them), one replica
// is measured, then the ring's three.
func (b *bench) measureRing(ctx context.Context, rr *RingRun, n, reps int) error {
	namespaces := ringNamespaces(n)
	progress("N=%d ring: %d replicas forming over %d empty namespaces", n, ringReplicas, len(namespaces))
	b.clean = false
	if err := b.cl.resetIn(ctx, 0, namespaces); err != nil {
		return err
	}
	members, err := b.startRing(ctx, n)
	defer func() {
		stopMembers(members)
		for _, m := range members {
			if m != nil {
				rr.Samples = append(rr.Samples, m.out...)
			}
		}
	}()
	if err != nil {
		return err
	}
	if err := b.ringSettled(ctx, members, namespaces); err != nil {
		return err
	}
	restRing(ctx, members, ringQuiet)
	progress("N=%d ring: loading, converging, unmeasured", n)
	if err := b.cl.resetIn(ctx, n, namespaces); err != nil {
		return err
	}
	once := contender{Name: ringOneName, args: func(b *bench, _ int) []string {
		return []string{b.resyncd, "once", "--config", b.configs["local"], "--kubeconfig", b.kubeconfig}
	}}
	if err := b.convergeRing(ctx, once, n); err != nil {
		return err
	}
	one, err := b.ringOne(ctx, n, reps)
	rr.Samples = append(rr.Samples, one...)
	if err != nil {
		return err
	}
	progress("N=%d ring: %d replicas", n, ringReplicas)
	if err := b.ringRounds(ctx, members, n, reps); err != nil {
		return err
	}
	stopMembers(members)
	// The layout is cut by the namespaces there are: the next N's ring
	// makes its own.
	return b.cl.cs.CoordinationV1().Leases(ringLeaseNamespace).DeleteCollection(context.WithoutCancel(ctx), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: shard.LabelRing + "=" + ringLeaseName})
}

// ringConverges is how many times `resyncd once` may run to converge the
// ring figure's parents: at N = 20,000 on two busy cores one run can
// outlast minRunTimeout, and the next goes on from where it stopped.
const ringConverges = 3

// convergeRing runs once until the cluster's n parents are converged, at
// most ringConverges times.
func (b *bench) convergeRing(ctx context.Context, once contender, n int) error {
	var errs []error
	for range ringConverges {
		_, runErr := b.run(ctx, once, n, 0, "cold")
		err := b.cl.converged(ctx, n, "resyncd")
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		errs = append(errs, errors.Join(runErr, err))
	}
	return fmt.Errorf("ring, N=%d: not converged in %d runs: %w", n, ringConverges, errors.Join(errs...))
}

// ringOne measures one `resyncd run`, sharding off: its first pass and
// reps steady passes.
func (b *bench) ringOne(ctx context.Context, n, reps int) ([]*Sample, error) {
	progress("N=%d ring: one replica", n)
	d, err := b.spawnDaemon(fmt.Sprintf("%s-%d", ringOneName, n), b.configs["local"], b.kubeconfig)
	if err != nil {
		return nil, err
	}
	one := []*ringMember{{d: d}}
	defer stopMembers(one)
	// Its first pass starts by itself.
	s, err := b.ringPass(ctx, ringOneName, one, nil, n, 1, "first")
	one[0].out = append(one[0].out, s)
	for rep := 1; rep <= reps && err == nil; rep++ {
		s, err = b.ringPass(ctx, ringOneName, one, one, n, rep, "steady")
		one[0].out = append(one[0].out, s)
	}
	stopMembers(one)
	return one[0].out, err
}

// ringMember is one replica of the ring and its samples.
type ringMember struct {
	id      string
	d       *daemon
	out     []*Sample
	stopped bool
}

// startRing starts the ring's replicas at once, the ring's Leases in
// ringLeaseNamespace.
func (b *bench) startRing(ctx context.Context, n int) ([]*ringMember, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ringLeaseNamespace}}
	if _, err := b.cl.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	members := make([]*ringMember, ringReplicas)
	for i := range members {
		id := fmt.Sprintf("replica-%d", i+1)
		cfg, err := b.ringConfig(id)
		if err != nil {
			return members, err
		}
		d, err := b.spawnDaemon(fmt.Sprintf("%s-%d-%s", ringThreeName, n, id), cfg, b.kubeconfig)
		if err != nil {
			return members, err
		}
		members[i] = &ringMember{id: id, d: d}
	}
	return members, nil
}

// ringRounds measures the ring on the converged cluster: each replica's
// first pass alone (nothing remembered), then reps rounds of a steady
// pass of each alone and of the three at once.
func (b *bench) ringRounds(ctx context.Context, members []*ringMember, n, reps int) error {
	for _, m := range members {
		s, err := b.ringPass(ctx, ringThreeName, members, []*ringMember{m}, n, 1, "first")
		m.out = append(m.out, s)
		if err != nil {
			return err
		}
	}
	for rep := 1; rep <= reps; rep++ {
		for _, m := range members {
			s, err := b.ringPass(ctx, ringThreeName, members, []*ringMember{m}, n, rep, "steady")
			m.out = append(m.out, s)
			if err != nil {
				return err
			}
		}
		s, err := b.ringPass(ctx, ringThreeName, members, members, n, rep, "together")
		members[0].out = append(members[0].out, s)
		if err != nil {
			return err
		}
	}
	return nil
}

// ringPass starts a pass of each of kicked with SIGUSR1 (none: the pass
// of the only member, started by itself) and measures it: the API
// server's counts from before the first signal to after the last pass
// ended. A pass that another replica ended meanwhile makes the counts no
// one replica's: the sample says so, out of the figures.
func (b *bench) ringPass(ctx context.Context, c string, members, kicked []*ringMember, n, rep int, phase string) (*Sample, error) {
	s := &Sample{Contender: c, N: n, Rep: rep, Phase: phase, Replica: ringAll}
	start, waited := time.Now(), kicked
	if len(kicked) == 0 {
		start, waited = members[0].d.start, members
	}
	if len(waited) == 1 {
		s.Replica = waited[0].id
	}
	before, err := b.traffic(ctx, contender{}, n)
	if err != nil {
		return s, err
	}
	bytesBefore, err := scrapeBytes(ctx, b.cl.cs.CoreV1().RESTClient())
	if err != nil {
		return s, err
	}
	for _, m := range kicked {
		if err := m.d.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			return s, err
		}
	}
	for _, m := range waited {
		l, err := m.d.pass(ctx)
		if err != nil {
			return s, err
		}
		s.Parents += l.Parents
		if dur, err := time.ParseDuration(l.Duration); err == nil {
			s.PassSeconds = max(s.PassSeconds, dur.Seconds())
		}
	}
	s.Seconds = time.Since(start).Seconds()
	after, err := b.traffic(ctx, contender{}, n)
	if err != nil {
		return s, err
	}
	s.Traffic = after.sub(before)
	bytesAfter, err := scrapeBytes(ctx, b.cl.cs.CoreV1().RESTClient())
	s.BytesByCollection = map[string]float64{}
	for k, v := range bytesAfter {
		s.BytesByCollection[k] = v - bytesBefore[k]
	}
	for _, m := range members {
		if len(m.d.done) > 0 {
			s.Error = fmt.Sprintf("%s ended a pass meanwhile: the counts are not %s's alone", m.id, s.Replica)
		}
	}
	return s, err
}

// restRing waits until no replica has ended a pass for rest.
func restRing(ctx context.Context, members []*ringMember, rest time.Duration) {
	quiet := time.NewTimer(rest)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-quiet.C:
			return
		case <-time.After(100 * time.Millisecond):
		}
		for _, m := range members {
			for len(m.d.done) > 0 {
				<-m.d.done
				quiet.Reset(rest)
			}
		}
	}
}

// stopMembers stops every replica started and not yet stopped, at once,
// so that none takes over another's work as it leaves, and gives each
// sample its replica's peak RSS and heap.
func stopMembers(members []*ringMember) {
	for _, m := range members {
		if m != nil && !m.stopped {
			_ = m.d.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, m := range members {
		if m == nil || m.stopped {
			continue
		}
		m.stopped = true
		rss, heap := m.d.stop()
		for _, s := range m.out {
			if s.Replica == m.id {
				s.PeakRSS, s.PeakHeap = rss, heap
			}
		}
	}
}

// ringConfig writes the configuration of the ring's replica id: the
// bench's, with sharding on.
func (b *bench) ringConfig(id string) (string, error) {
	body := strings.Replace(fmt.Sprintf(resyncdConfig, "local"), "leaderElection: {enabled: false}\n",
		fmt.Sprintf("leaderElection: {enabled: false, namespace: %s, leaseName: %s}\nsharding: {enabled: true, identity: %s}\n",
			ringLeaseNamespace, ringLeaseName, id), 1)
	p := filepath.Join(b.work, "resyncd-ring-"+id+".yaml")
	return p, os.WriteFile(p, []byte(body), 0o644)
}

// errRingUnsettled: the ring did not settle on its replicas in time.
var errRingUnsettled = errors.New("the ring did not settle")

// ringSettled waits until each of namespaces is held by one live replica
// of members, each replica holds some, and none waits for more.
func (b *bench) ringSettled(ctx context.Context, members []*ringMember, namespaces []string) error {
	deadline := time.Now().Add(3 * time.Minute)
	var last map[string]string
	for time.Now().Before(deadline) {
		leases, err := b.cl.cs.CoordinationV1().Leases(ringLeaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: shard.LabelRing + "=" + ringLeaseName})
		if err != nil {
			return err
		}
		var claims []ringClaims
		for _, l := range leases.Items {
			if c, ok := claimsOf(l.Annotations); ok {
				claims = append(claims, c)
			}
		}
		var ok bool
		if last, ok = settled(claims, namespaces, len(members)); ok {
			return nil
		}
		for _, m := range members {
			select {
			case <-m.d.exited:
				return fmt.Errorf("%s exited while the ring formed: %v\n%s", m.id, m.d.cmd.ProcessState, strings.Join(m.d.tail, "\n"))
			default:
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("%w on %d replicas in 3m: %v", errRingUnsettled, len(members), last)
}

// ringClaims is what one replica's Lease says it holds and waits for in
// the cluster "local".
type ringClaims struct {
	identity      string
	held, pending []shard.Range
}

// claimsOf reads a ring Lease's annotations; false for the layout Lease
// and one not yet written.
func claimsOf(annotations map[string]string) (ringClaims, bool) {
	id, v := annotations["resyncd.io/identity"], annotations["resyncd.io/claims"]
	var all map[string]struct{ Held, Pending []shard.Range }
	if id == "" || v == "" || json.Unmarshal([]byte(v), &all) != nil {
		return ringClaims{}, false
	}
	return ringClaims{identity: id, held: all["local"].Held, pending: all["local"].Pending}, true
}

// settled says whether claims hold each namespace once, members replicas
// each some, none waiting; and returns each namespace's holder ("" none,
// "+" more than one).
func settled(claims []ringClaims, namespaces []string, members int) (map[string]string, bool) {
	owner := map[string]string{}
	ok := true
	for _, c := range claims {
		ok = ok && len(c.pending) == 0
	}
	for _, ns := range namespaces {
		h := shard.Hash(ns)
		for _, c := range claims {
			for _, rg := range c.held {
				if rg.Lo <= h && h <= rg.Hi {
					if owner[ns] != "" && owner[ns] != c.identity {
						owner[ns] = "+"
					} else {
						owner[ns] = c.identity
					}
				}
			}
		}
	}
	distinct := map[string]bool{}
	for _, ns := range namespaces {
		ok = ok && owner[ns] != "" && owner[ns] != "+"
		distinct[owner[ns]] = true
	}
	return owner, ok && len(distinct) == members
}
