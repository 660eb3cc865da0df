// Package shard splits a cluster's namespaces between the replicas of
// resyncd that share the work: the hash space of namespace names in slots
// (slots.go), who should own which slots of which cluster (assign.go), and
// the ring of Leases through which replicas see each other and hand slots
// over without two writing the same namespace (ring.go). It reads and
// writes only the ring's own Leases.
package shard
