// Package cluster reaches the clusters resyncd keeps in sync: it turns
// the configuration's clusters, their kubeconfig files (re-read when they
// rotate, bound to the server they named first, credential plugins
// refused unless the entry allows them) and the Secrets the configuration
// selects (Argo CD's cluster Secrets, Cluster API's kubeconfig Secrets)
// into Targets with clients of their own, refuses a second entry that
// reaches an API server another one reaches, and sends client-go's request
// metrics to resyncd's registry. It knows nothing of passes: what runs in
// a cluster, and when, is package daemon's.
package cluster
