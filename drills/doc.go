// Package drills holds no code of resyncd: its tests attack resyncd the way
// production will, on a local cluster that really rolls out Deployments and
// collects garbage (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok with fake nodes). `make test-drills` runs them.
package drills
