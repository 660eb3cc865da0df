package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resyncd/resyncd/shard"
	"k8s.io/client-go/kubernetes"
)

// shareClusters gives the ring, when the replica is in one, every
// cluster whose work it shares: those of the configuration and of the
// Secrets accepted.
func (d *daemon) shareClusters(names []string) {
	if d.ring != nil {
		d.ring.SetClusters(names)
	}
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
