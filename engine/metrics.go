package engine

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus metrics of docs/metrics.md, registered on the
// registry given to NewMetrics.
type Metrics struct {
	passes         *prometheus.CounterVec
	passDuration   *prometheus.HistogramVec
	lastSuccess    *prometheus.GaugeVec
	managed        *prometheus.GaugeVec
	drift          *prometheus.CounterVec
	applies        *prometheus.CounterVec
	applyDuration  *prometheus.HistogramVec
	deferred       *prometheus.GaugeVec
	falsePositives *prometheus.CounterVec
	isLeader       prometheus.Gauge
	shardMembers   prometheus.Gauge
	shardOwned     *prometheus.GaugeVec
	clusterUp      *prometheus.GaugeVec
	clusterSuccess *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resyncd_passes_total", Help: "Passes over a watched resource, by result.",
		}, []string{"cluster", "resource", "result"}),
		passDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "resyncd_pass_duration_seconds", Help: "Duration of a pass over a watched resource.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"cluster", "resource"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "resyncd_last_successful_pass_timestamp_seconds", Help: "Unix time of the last pass that finished without error.",
		}, []string{"cluster", "resource"}),
		managed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "resyncd_managed_objects", Help: "Child objects seen in the last pass, by state.",
		}, []string{"cluster", "resource", "kind", "state"}),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resyncd_drift_total", Help: "Child objects found drifted, by reason.",
		}, []string{"cluster", "resource", "kind", "reason"}),
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resyncd_apply_total", Help: "Writes to the API server, by operation and result.",
		}, []string{"cluster", "resource", "kind", "operation", "result"}),
		applyDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "resyncd_apply_duration_seconds", Help: "Duration of one write, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"cluster", "operation"}),
		deferred: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "resyncd_deferred_writes", Help: "Writes left for the next pass by the per-pass budget.",
		}, []string{"cluster", "resource"}),
		falsePositives: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "resyncd_drift_false_positives_total", Help: "Objects the local check called drifted that the server found unchanged.",
		}, []string{"cluster", "resource", "kind"}),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "resyncd_is_leader", Help: "1 while this process leads (or leader election is off), else 0.",
		}),
		clusterUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "resyncd_cluster_up", Help: "1 when the last pass of every watched resource of the cluster succeeded, 0 when one failed or the cluster could not be reached.",
		}, []string{"cluster"}),
		clusterSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "resyncd_cluster_last_successful_pass_timestamp_seconds", Help: "Unix time of the last pass in the cluster that finished without error.",
		}, []string{"cluster"}),
	}
	m.shardMembers = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "resyncd_shard_members", Help: "Replicas this replica sees in its ring (sharding); 0 without sharding.",
	})
	m.shardOwned = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "resyncd_shard_owned", Help: "Share, 0 to 1, of the cluster's namespace slots this replica owns (sharding).",
	}, []string{"cluster"})
	reg.MustRegister(m.passes, m.passDuration, m.lastSuccess, m.managed, m.drift, m.applies,
		m.applyDuration, m.deferred, m.falsePositives, m.isLeader, m.clusterUp, m.clusterSuccess, m.shardMembers, m.shardOwned)
	return m
}

// SetShard records the replicas of the ring and the share of each
// cluster this replica owns.
func (m *Metrics) SetShard(members int, owned map[string]float64) {
	m.shardMembers.Set(float64(members))
	for c, f := range owned {
		m.shardOwned.WithLabelValues(c).Set(f)
	}
}

// SetLeader records whether this process leads.
func (m *Metrics) SetLeader(leading bool) {
	if leading {
		m.isLeader.Set(1)
	} else {
		m.isLeader.Set(0)
	}
}

// SetClusterUp records whether the cluster named cluster answered its last
// pass; the command sets it to false for a cluster it cannot reach before
// any pass.
func (m *Metrics) SetClusterUp(cluster string, up bool) {
	if m == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	m.clusterUp.WithLabelValues(cluster).Set(v)
}

// ForgetCluster deletes every series of the cluster named cluster: one
// that is no longer synced (its Secret deleted) leaves no stale value
// behind.
func (m *Metrics) ForgetCluster(cluster string) {
	if m == nil {
		return
	}
	only := prometheus.Labels{"cluster": cluster}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.passes, m.passDuration, m.lastSuccess, m.managed, m.drift, m.applies,
		m.applyDuration, m.deferred, m.falsePositives, m.clusterUp, m.clusterSuccess, m.shardOwned,
	} {
		v.DeletePartialMatch(only)
	}
}

// forgetResource deletes every series of the resource named name in the
// cluster named cluster: one that is no longer watched (its
// ResourceGraphDefinition deleted) leaves no stale value behind.
func (m *Metrics) forgetResource(cluster, name string) {
	if m == nil {
		return
	}
	only := prometheus.Labels{"cluster": cluster, "resource": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.passes, m.passDuration, m.lastSuccess, m.managed, m.drift, m.applies, m.deferred, m.falsePositives,
	} {
		v.DeletePartialMatch(only)
	}
}

// initialize creates the series of a resource that are known in advance at
// zero, so that rate() and dashboards see them before the first event.
func (m *Metrics) initialize(rs *resourceState) {
	if m == nil {
		return
	}
	for _, result := range []string{"success", "error"} {
		m.passes.WithLabelValues(rs.cluster, rs.name, result)
	}
	m.deferred.WithLabelValues(rs.cluster, rs.name).Set(0)
	for _, ct := range rs.renderer.ChildTypes() {
		m.falsePositives.WithLabelValues(rs.cluster, rs.name, ct.Kind)
		for _, reason := range []string{reasonMissing, reasonChanged, reasonOrphaned} {
			m.drift.WithLabelValues(rs.cluster, rs.name, ct.Kind, reason)
		}
	}
}
