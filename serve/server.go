package serve

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/config"
)

// shutdownTimeout bounds how long a server drains on exit.
const shutdownTimeout = 5 * time.Second

// Metrics returns the handler of /metrics, serving reg, and the TLS
// configuration it is served with: none, unless m is secure; then every
// request is let through only with a bearer token that kube's API server
// authenticates and allows to get the path. kube may be nil when m is not
// secure.
func Metrics(reg *prometheus.Registry, m config.Metrics, kube kubernetes.Interface) (http.Handler, *tls.Config, error) {
	h := http.Handler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if !m.Secure {
		return h, nil, nil
	}
	tlsConfig, err := metricsTLS(m)
	if err != nil {
		return nil, nil, err
	}
	return newMetricsGuard(kube, h), tlsConfig, nil
}

// Run serves h on addr, over TLS when tlsConfig is set, until ctx ends,
// then drains the requests in flight for up to five seconds; name names
// the server in its log line and errors.
func Run(ctx context.Context, log *zap.Logger, name, addr string, h http.Handler, tlsConfig *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s server: %w", name, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("Serving", zap.String("server", name), zap.String("address", ln.Addr().String()), zap.Bool("tls", tlsConfig != nil))
	select {
	case err := <-errc:
		return fmt.Errorf("%s server: %w", name, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}
