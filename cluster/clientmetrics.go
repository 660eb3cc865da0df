package cluster

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/metrics"
)

// client-go reports its requests through package-level hooks that can be
// set once per process; these adapters send them to resyncd's registry.
var (
	clientMetricsOnce sync.Once
	requestsTotal     = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "HTTP requests to the API server, by status code, method and host.",
	}, []string{"code", "method", "host"})
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Latency of requests to the API server, by verb and host.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"verb", "host"})
)

// RegisterClientMetrics adds client-go's request metrics to reg.
func RegisterClientMetrics(reg prometheus.Registerer) {
	clientMetricsOnce.Do(func() {
		opts := metrics.RegisterOpts{RequestResult: resultAdapter{}, RequestLatency: latencyAdapter{}}
		metrics.Register(opts)
		// Register only takes the first caller's hooks, and a library's init
		// (controller-runtime's, say) may have been first: set them for sure.
		metrics.RequestResult, metrics.RequestLatency = opts.RequestResult, opts.RequestLatency
	})
	reg.MustRegister(requestsTotal, requestDuration)
}

type resultAdapter struct{}

func (resultAdapter) Increment(_ context.Context, code, method, host string) {
	requestsTotal.WithLabelValues(code, method, host).Inc()
}

type latencyAdapter struct{}

func (latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	requestDuration.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}
