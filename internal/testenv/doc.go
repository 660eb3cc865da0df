// Package testenv runs a local control plane — etcd and kube-apiserver built
// by tools/ — through controller-runtime's envtest, for the integration tests
// and for `make run`; it knows nothing of resyncd's engine.
package testenv
