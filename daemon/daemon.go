package daemon

import (
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/resyncd/resyncd/engine"
	"github.com/resyncd/resyncd/serve"
	"github.com/resyncd/resyncd/shard"
)

// daemon is what Run wires together.
type daemon struct {
	*Prepared
	reg     *prometheus.Registry
	metrics *engine.Metrics
	status  *serve.Status
	// passNow receives SIGUSR1: start a pass of every resource now.
	passNow chan os.Signal
	// ring is this replica's place among those that share the work; nil
	// unless sharding is enabled.
	ring *shard.Ring
	// connected holds the kubernetes.Interface of each cluster, by name,
	// while its passes run.
	connected sync.Map
	// want says whether this replica runs the passes of a cluster; nil:
	// every cluster. Asked again on every tick of the shortest interval,
	// and whenever rebalance fires (nil: never).
	want      func(cluster string) bool
	rebalance <-chan struct{}
}

// wants reports whether this replica runs the cluster named cluster.
func (d *daemon) wants(cluster string) bool { return d.want == nil || d.want(cluster) }
