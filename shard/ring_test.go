package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// replica is one Ring of a test, running until stopped.
type replica struct {
	ring *Ring
	stop context.CancelFunc
	done chan error
}

// ringTest runs Rings on one cluster of namespaces against the API
// server, and checks, every few milliseconds while it runs, that no two
// of them hold the same namespace.
type ringTest struct {
	t          *testing.T
	cs         kubernetes.Interface
	ns         string
	namespaces []string
	mu         sync.Mutex
	replicas   map[string]*replica
	overlaps   []string
	// sole is a replica seen holding every namespace.
	sole string
}

const (
	testLease, testRenew, testRetry = 3 * time.Second, 2 * time.Second, 200 * time.Millisecond
)

func newRingTest(t *testing.T, ns string, namespaces int) *ringTest {
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rt := &ringTest{t: t, cs: cs, ns: ns, replicas: map[string]*replica{}}
	for i := range namespaces {
		rt.namespaces = append(rt.namespaces, fmt.Sprintf("team-%02d", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			rt.checkOverlap()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		for id, r := range rt.replicas {
			r.stop()
			if err := <-r.done; !errors.Is(err, context.Canceled) {
				t.Errorf("%s: Run returned %v, want it cancelled", id, err)
			}
		}
	})
	return rt
}

func (rt *ringTest) start(id string) {
	rt.t.Helper()
	ring := New(Options{
		Leases: rt.cs.CoordinationV1(), Namespace: rt.ns, Name: "ring", Identity: id,
		LeaseDuration: testLease, RenewDeadline: testRenew, RetryPeriod: testRetry,
		Namespaces: func(context.Context, string) ([]string, error) { return rt.namespaces, nil },
		Log:        zaptest.NewLogger(rt.t).Named(id),
	})
	ring.SetClusters([]string{"east"})
	ctx, stop := context.WithCancel(context.Background())
	r := &replica{ring: ring, stop: stop, done: make(chan error, 1)}
	go func() { r.done <- ring.Run(ctx) }()
	rt.mu.Lock()
	rt.replicas[id] = r
	rt.mu.Unlock()
}

// kill stops a replica as SIGKILL would: its Lease stays, unrenewed.
func (rt *ringTest) kill(id string) {
	rt.mu.Lock()
	r := rt.replicas[id]
	delete(rt.replicas, id)
	rt.mu.Unlock()
	r.stop()
	if err := <-r.done; !errors.Is(err, context.Canceled) {
		rt.t.Errorf("%s: Run returned %v, want it cancelled", id, err)
	}
}

// owners maps each namespace to the replicas that hold it.
func (rt *ringTest) owners() map[string][]string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := map[string][]string{}
	for id, r := range rt.replicas {
		p := r.ring.Held()["east"]
		for _, ns := range rt.namespaces {
			if p.Slots != 0 && p.Has(ns) {
				out[ns] = append(out[ns], id)
			}
		}
	}
	return out
}

func (rt *ringTest) checkOverlap() {
	owners := rt.owners()
	by := map[string]int{}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for ns, ids := range owners {
		if len(ids) > 1 {
			rt.overlaps = append(rt.overlaps, fmt.Sprintf("%s held by %v", ns, ids))
		}
		for _, id := range ids {
			by[id]++
		}
	}
	for id, n := range by {
		if n == len(rt.namespaces) {
			rt.sole = id
		}
	}
}

// settled waits until every namespace has one owner among members and
// returns the owners.
func (rt *ringTest) settled(members int) map[string]string {
	rt.t.Helper()
	deadline := time.Now().Add(4*testLease + 10*time.Second)
	for time.Now().Before(deadline) {
		owners := rt.owners()
		out := map[string]string{}
		distinct := map[string]bool{}
		for _, ns := range rt.namespaces {
			if len(owners[ns]) == 1 {
				out[ns] = owners[ns][0]
				distinct[out[ns]] = true
			}
		}
		if len(out) == len(rt.namespaces) && len(distinct) == members {
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
	rt.t.Fatalf("not settled on %d members: %v", members, rt.owners())
	return nil
}

// TestRingHandsOver: three replicas started a moment apart split 30
// namespaces, the first not taking everything before the others come; one
// killed, the
// two others take its namespaces once its Lease expired, and keep nearly
// all of theirs; a replacement and a fourth join, and the fourth takes
// about a quarter. At no moment do two replicas hold one namespace.
func TestRingHandsOver(t *testing.T) {
	rt := newRingTest(t, "ring-handover", 30)
	// Pods of one rollout start a moment apart.
	for _, id := range []string{"r1", "r2", "r3"} {
		rt.start(id)
		time.Sleep(2 * testRetry)
	}
	three := rt.settled(3)
	rt.mu.Lock()
	if rt.sole != "" {
		t.Errorf("%s held every namespace while the three started: it took work before it had watched the ring", rt.sole)
	}
	rt.mu.Unlock()
	killed := time.Now()
	rt.kill("r2")
	two := rt.settled(2)
	t.Logf("r2 killed: its namespaces held by the others after %s", time.Since(killed).Round(time.Millisecond))
	if took := time.Since(killed); took < testLease-testRetry {
		t.Errorf("r2's namespaces taken %s after its kill, before its Lease (%s) expired", took, testLease)
	}
	// Maglev's spread keeps most of what the living held, not all.
	kept := 0
	for ns, o := range three {
		if o != "r2" && two[ns] != o {
			kept++
			t.Logf("%s moved from %s to %s although %s lives", ns, o, two[ns], o)
		}
	}
	if frac := float64(kept) / float64(len(rt.namespaces)); frac > 0.10 {
		t.Errorf("%d of %d namespaces of the living replicas moved when r2 died, want at most a tenth", kept, len(rt.namespaces))
	}
	rt.start("r2") // its Lease still names the killed process: taken once expired
	three = rt.settled(3)
	rt.start("r4")
	four := rt.settled(4)
	moved := 0
	for ns, o := range three {
		if four[ns] != o {
			moved++
		}
	}
	if frac := float64(moved) / float64(len(rt.namespaces)); frac > 0.25+0.10 {
		t.Errorf("%d of %d namespaces moved when a fourth replica joined (%.2f), want at most 0.35", moved, len(rt.namespaces), frac)
	}
	t.Logf("a fourth joined: %d of %d namespaces moved", moved, len(rt.namespaces))
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.overlaps) > 0 {
		t.Errorf("%d moments with a namespace held twice, first: %s", len(rt.overlaps), rt.overlaps[0])
	}
}

// failingLeases makes the ring's renewals fail once fail is set, as when
// the API server stops answering this replica.
// With hang set, its LISTs hang until their context ends.
type failingLeases struct {
	coordinationclient.LeasesGetter
	fail, hang *atomic.Bool
}

func (f failingLeases) Leases(ns string) coordinationclient.LeaseInterface {
	return failingLease{LeaseInterface: f.LeasesGetter.Leases(ns), fail: f.fail, hang: f.hang}
}

type failingLease struct {
	coordinationclient.LeaseInterface
	fail, hang *atomic.Bool
}

func (f failingLease) List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if f.hang != nil && f.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.LeaseInterface.List(ctx, opts)
}

func (f failingLease) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if f.fail.Load() {
		return nil, apierrors.NewServiceUnavailable("renewals refused by the test")
	}
	return f.LeaseInterface.Update(ctx, l, opts)
}

// TestRingStopsBeforeExpiry: a replica whose renewals fail gives up its
// work when the renew deadline passes, before its Lease can expire for the
// others, and Run returns ErrLost.
func TestRingStopsBeforeExpiry(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ring-lost"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fail := &atomic.Bool{}
	ring := New(Options{
		Leases: failingLeases{LeasesGetter: cs.CoordinationV1(), fail: fail}, Namespace: "ring-lost", Name: "ring", Identity: "r1",
		LeaseDuration: testLease, RenewDeadline: testRenew, RetryPeriod: testRetry, Log: zaptest.NewLogger(t),
	})
	ring.SetClusters([]string{"east"})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ring.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for p, _ := ring.Acquire("east"); !p.IsWhole(); p, _ = ring.Acquire("east") {
		if time.Now().After(deadline) {
			t.Fatal("one replica of one cluster never held it whole")
		}
		time.Sleep(20 * time.Millisecond)
	}
	l, err := cs.CoordinationV1().Leases("ring-lost").Get(t.Context(), ring.LeaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastRenewal := l.Spec.RenewTime.Time
	fail.Store(true)
	for p, release := ring.Acquire("east"); p.Slots != 0; p, release = ring.Acquire("east") {
		release()
		time.Sleep(10 * time.Millisecond)
	}
	stopped := time.Now()
	if err := <-done; !errors.Is(err, ErrLost) {
		t.Errorf("Run returned %v, want ErrLost", err)
	}
	if since := stopped.Sub(lastRenewal); since >= testLease {
		t.Errorf("the replica stopped %s after its last renewal, not before its Lease (%s) expired", since, testLease)
	} else {
		t.Logf("renewals failing: the replica gave up its work %s after its last renewal (renew deadline %s, lease %s)", since.Round(time.Millisecond), testRenew, testLease)
	}
}

// TestRingReadsHang: a replica whose LISTs of the ring hang goes on
// renewing its Lease, and so keeps its work, for longer than a Lease
// lasts; it does not hold it only in its own eyes while the others, seeing
// the Lease expire, would take it.
func TestRingReadsHang(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ring-hang"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hang := &atomic.Bool{}
	ring := New(Options{
		Leases: failingLeases{LeasesGetter: cs.CoordinationV1(), fail: &atomic.Bool{}, hang: hang}, Namespace: "ring-hang", Name: "ring", Identity: "r1",
		LeaseDuration: testLease, RenewDeadline: testRenew, RetryPeriod: testRetry, Log: zaptest.NewLogger(t),
	})
	ring.SetClusters([]string{"east"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ring.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want it cancelled", err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for p, _ := ring.Acquire("east"); !p.IsWhole(); p, _ = ring.Acquire("east") {
		if time.Now().After(deadline) {
			t.Fatal("one replica of one cluster never held it whole")
		}
		time.Sleep(20 * time.Millisecond)
	}
	renewTime := func() time.Time {
		t.Helper()
		l, err := cs.CoordinationV1().Leases("ring-hang").Get(t.Context(), ring.LeaseName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Spec.RenewTime.Time
	}
	before := renewTime()
	hang.Store(true)
	time.Sleep(2 * testLease)
	if after := renewTime(); after.Sub(before) < testLease {
		t.Errorf("LISTs hanging for %s: the Lease was renewed at %s, %s after it was before they hung; want renewals going on",
			2*testLease, after.Format(time.StampMilli), after.Sub(before))
	}
	if p, release := ring.Acquire("east"); !p.IsWhole() {
		t.Errorf("LISTs hanging: the replica holds %v, want the cluster whole still", p)
	} else {
		release()
	}
}
