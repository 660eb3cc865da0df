// Package daemon is the process that runs: Run wires the status model and
// the HTTP endpoints of package serve, leader election (client-go's) or
// the ring of replicas (package shard decides, the daemon acts), and a
// supervisor that runs one loop of passes per cluster (package engine),
// starting and stopping them as clusters of package cluster come and go.
// It applies the CRDs of resources that ask for it when a cluster is made
// ready, compiles their graphs against that cluster's schemas, and drains
// on shutdown: the batch of writes in flight is written, then the Lease is
// released. Prepare and PassOnce are the same readiness and one pass, for
// the commands that run a single pass. It never renders a child or
// decides a write itself.
package daemon
