package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// lead runs the passes: of the replica's share of the work when sharding
// is enabled, under leader election when that is, else of everything.
func (d *daemon) lead(ctx context.Context) error {
	le := d.cfg.LeaderElection
	if d.cfg.Sharding.Enabled {
		return d.share(ctx)
	}
	if !le.Enabled {
		d.metrics.SetLeader(true)
		d.status.SetLeading(true)
		return d.passes(ctx)
	}
	d.metrics.SetLeader(false)
	if err := d.checkLease(ctx, le.LeaseName); err != nil {
		return err
	}
	host, _ := os.Hostname()
	id := host + "_" + string(uuid.NewUUID())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.LeaseName},
		Client:     d.home.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	t := newTerm(ctx)
	defer func() { t.stop(); t.end() }()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: le.LeaseDuration,
		RenewDeadline: le.RenewDeadline,
		RetryPeriod:   le.RetryPeriod,
		// The elector releases the Lease when its context ends, which the
		// term ends only once the passes have returned: the batch in
		// flight is written before another replica may take the Lease.
		ReleaseOnCancel: true,
		Name:            le.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				t.lead(leading, func(ctx context.Context) error {
					d.log.Info("Leading", zap.String("identity", id))
					d.metrics.SetLeader(true)
					d.status.SetLeading(true)
					return d.passes(ctx)
				})
			},
			OnStoppedLeading: func() {
				d.metrics.SetLeader(false)
				d.status.SetLeading(false)
			},
			OnNewLeader: func(leader string) {
				if leader != id {
					d.log.Info("Following", zap.String("leader", leader))
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leaderElection: %w", err)
	}
	elector.Run(t.ctx)
	return t.result()
}

// errLeaseLost is lead's error when the Lease was lost while this
// replica led: another replica may be writing already.
var errLeaseLost = errors.New("lost the leader lease")

// term is one replica's time in leader election: the elector runs under
// ctx, which ends when shutdown comes while the replica follows, and
// otherwise only once the passes it led have returned.
type term struct {
	shutdown context.Context
	ctx      context.Context
	end      context.CancelFunc
	stop     func() bool

	mu      sync.Mutex
	started bool          // the passes have started
	over    bool          // the elector has returned: lead no more
	done    chan struct{} // closed once the passes have returned
	err     error         // what the passes returned, once done
}

// newTerm returns the term of a replica that shuts down when shutdown
// ends.
func newTerm(shutdown context.Context) *term {
	// Not a child of shutdown: the elector's context must outlive it while
	// the batch in flight is written.
	ctx, end := context.WithCancel(context.WithoutCancel(shutdown))
	t := &term{shutdown: shutdown, ctx: ctx, end: end, done: make(chan struct{})}
	t.stop = context.AfterFunc(shutdown, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.started {
			t.end()
		}
	})
	return t
}

// lead runs passes while this replica leads: until shutdown, or until
// leading ends, which it does when the Lease is lost. Then it ends the
// term, which releases the Lease.
func (t *term) lead(leading context.Context, passes func(context.Context) error) {
	t.mu.Lock()
	if t.over || t.shutdown.Err() != nil {
		t.mu.Unlock()
		t.end()
		return
	}
	t.started = true
	t.mu.Unlock()
	ctx, cancel := context.WithCancel(leading)
	defer cancel()
	stop := context.AfterFunc(t.shutdown, cancel)
	defer stop()
	err := passes(ctx)
	// Passes that return early (no resource to watch) keep the Lease, so
	// that the replicas do not pass it round.
	<-ctx.Done()
	t.mu.Lock()
	t.err = err
	t.mu.Unlock()
	close(t.done)
	t.end()
}

// result is lead's answer once the elector has returned, which it does
// when the term ends (on shutdown) or when the Lease is lost. A lost
// Lease, also one lost while the passes finish after a shutdown, is
// errLeaseLost at once: another replica may be writing already, so the
// process exits and the kubelet restarts it as a follower. Otherwise it
// is what the passes returned.
func (t *term) result() error {
	t.stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.over = true
	if t.shutdown.Err() == nil {
		return errLeaseLost
	}
	if !t.started {
		return t.shutdown.Err()
	}
	select {
	case <-t.done:
		return t.err
	default:
		return errLeaseLost
	}
}
