package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

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

// shareClusters gives the ring, when the replica is in one, every
// cluster whose work it shares: those of the configuration and of the
// Secrets accepted.
func (d *daemon) shareClusters(names []string) {
	if d.ring != nil {
		d.ring.SetClusters(names)
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

// namespacesOf returns the namespaces the layout of cluster is cut by:
// those its watched resources name, when every one names some; else
// every namespace of the cluster, which it must be connected to.
func (d *daemon) namespacesOf(ctx context.Context, cluster string) ([]string, error) {
	i := slices.IndexFunc(d.targets, func(t *target) bool { return t.Config.Name == cluster })
	if i < 0 {
		return nil, fmt.Errorf("no cluster %q", cluster)
	}
	var named []string
	for _, r := range d.targets[i].Resources {
		if len(r.Namespaces) == 0 {
			return d.listNamespaces(ctx, cluster)
		}
		named = append(named, r.Namespaces...)
	}
	return named, nil
}

func (d *daemon) listNamespaces(ctx context.Context, cluster string) ([]string, error) {
	kube, ok := d.connected.Load(cluster)
	if !ok {
		return nil, errors.New("not connected to the cluster yet")
	}
	var names []string
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := kube.(kubernetes.Interface).CoreV1().Namespaces().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list namespaces: %w", err)
		}
		for _, ns := range list.Items {
			names = append(names, ns.Name)
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return names, nil
		}
	}
}

// ringView follows what the ring holds, for /statusz and the metrics,
// and tells which clusters gained work since it last looked.
type ringView struct {
	mu   sync.Mutex
	held map[string]shard.Part
}

// update records the ring's members and parts and returns the clusters
// where this replica holds namespaces it did not hold before.
func (d *daemon) updateRing(v *ringView) []string {
	held := d.ring.Held()
	members := d.ring.Members()
	v.mu.Lock()
	defer v.mu.Unlock()
	var gained []string
	owned := map[string]float64{}
	// The ring's clusters, those of Secrets included; one gone from them
	// is forgotten by the supervisor, series and all.
	clusters := slices.Concat(d.ring.Clusters(), slices.Collect(maps.Keys(held)))
	for _, c := range slices.Compact(slices.Sorted(slices.Values(clusters))) {
		p := held[c]
		owned[c] = p.Fraction()
		before := v.held[c]
		if p.Slots != 0 && (!p.Layout.Equal(before.Layout) || p.Slots&^before.Slots != 0) {
			gained = append(gained, c)
		}
		d.status.SetShare(c, p.Slots.Len(), p.Layout.Slots(), p.String())
	}
	v.held = held
	d.metrics.SetShard(len(members), owned)
	d.status.SetMembers(members)
	return gained
}
