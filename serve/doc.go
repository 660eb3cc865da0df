// Package serve answers what the process is asked over HTTP: /metrics
// (behind a guard that asks the API server for a bearer token's review
// when the endpoint is secure), /healthz, /readyz and /statusz, the last
// three from a Status that the daemon updates through its methods and the
// handlers only read. It starts no pass and writes to no cluster.
package serve
