// Package deploy holds what is installed into a cluster — the HttpService CRD
// in crds/ and, beside it, the Helm chart in helm/ — and the tests that install
// them into a real API server; it holds no logic of resyncd.
package deploy
