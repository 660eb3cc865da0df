package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/shard"
)

// errRingLost is share's error when the replica could not renew its ring
// Lease in time: the others take its work once the Lease expires, so the
// process stops its passes and exits, and the kubelet restarts it.
var errRingLost = errors.New("lost the ring lease")

// ringLeaveTimeout bounds the delete of the replica's Lease on the way out.
const ringLeaveTimeout = 5 * time.Second

// share runs the passes of the namespaces this replica owns in the ring
// of replicas (sharding.enabled), until ctx ends or the replica cannot
// renew its Lease. On shutdown the passes finish their batch, then the
// replica deletes its Lease so that the others take its work at once.
func (d *daemon) share(ctx context.Context) error {
	le := d.cfg.LeaderElection
	id, err := ringIdentity(d.cfg)
	if err != nil {
		return err
	}
	ring := shard.New(shard.Options{
		Leases: d.home.Kube.CoordinationV1(), Namespace: le.Namespace, Name: le.LeaseName, Identity: id,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Namespaces: d.namespacesOf, Log: d.log.With(zap.String("ring", le.LeaseName)),
	})
	if err := d.checkLease(ctx, ring.LeaseName()); err != nil {
		return err
	}
	// The supervisor gives the ring the clusters, those of Secrets
	// included, and runs those the ring gives this replica work in.
	d.ring, d.want = ring, ring.Wants
	d.metrics.SetLeader(true)
	d.status.SetRing(id, ring.LeaseName())
	d.status.SetLeading(true)
	d.log.Info("Sharing the work", zap.String("identity", id), zap.String("lease", le.Namespace+"/"+ring.LeaseName()))

	// The ring outlives the passes: it claims what they write until they
	// have returned.
	ringCtx, stopRing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRing()
	passCtx, stopPasses := context.WithCancel(ctx)
	defer stopPasses()
	ringErr := make(chan error, 1)
	go func() { ringErr <- ring.Run(ringCtx) }()
	passesDone := make(chan error, 1)
	go func() { passesDone <- d.passes(passCtx) }()

	select {
	case err := <-ringErr:
		// Lost: stop writing now; the process exits, and restarts afresh.
		stopPasses()
		if perr := <-passesDone; perr != nil && !errors.Is(perr, context.Canceled) {
			d.log.Warn("Passes stopped with an error", zap.Error(perr))
		}
		d.status.SetLeading(false)
		d.metrics.SetLeader(false)
		if errors.Is(err, shard.ErrLost) {
			return errRingLost
		}
		return err
	case err := <-passesDone:
		lctx, cancel := context.WithTimeout(context.Background(), ringLeaveTimeout)
		defer cancel()
		if lerr := ring.Leave(lctx); lerr != nil {
			d.log.Warn("Ring Lease not deleted: the others take this replica's work once it expires", zap.Error(lerr))
		} else {
			d.log.Info("Left the ring")
		}
		stopRing()
		if rerr := <-ringErr; !errors.Is(rerr, context.Canceled) {
			d.log.Warn("Ring stopped with an error", zap.Error(rerr))
		}
		return err
	}
}

// ringIdentity is the replica's name in the ring: sharding.identity, else
// $POD_NAME, else the host name.
func ringIdentity(cfg *config.Config) (string, error) {
	id, from := cfg.Sharding.Identity, "sharding.identity"
	if id == "" {
		id, from = os.Getenv("POD_NAME"), "$POD_NAME"
	}
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("%s: sharding.identity: empty, $POD_NAME unset, and no host name: %w", cfg.Where("sharding"), err)
		}
		id, from = strings.ToLower(host), "the host name"
	}
	if len(validation.IsDNS1123Subdomain(cfg.LeaderElection.LeaseName+"-"+id)) > 0 {
		return "", fmt.Errorf("%s: sharding.identity: %q (%s) makes no Lease name after leaderElection.leaseName (lower-case letters, digits, '-' and '.'); set sharding.identity",
			cfg.Where("sharding"), id, from)
	}
	return id, nil
}
