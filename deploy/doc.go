// Package deploy holds what is installed into a cluster — the HttpService CRD
// in crds/ and, beside it, the Helm chart in helm/ with the Grafana dashboard —
// and the tests that install them into a real API server and run the
// dashboard's queries over resyncd's metrics; it holds no logic of resyncd.
// It is a module of its own, so that the Helm SDK and Prometheus's query
// engine and TSDB, which only these tests use, stay out of the daemon's go.mod.
package deploy
