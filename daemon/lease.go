package daemon

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkLease makes sure, with a dry-run create, that the Lease name can be
// made where the configuration says: a missing namespace or a missing
// permission would otherwise show only as retries, forever. Other errors
// are left to the elector or the ring, which retry them.
func (d *daemon) checkLease(ctx context.Context, name string) error {
	le := d.cfg.LeaderElection
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: le.Namespace, Name: name}}
	_, err := d.home.Kube.CoordinationV1().Leases(le.Namespace).Create(ctx, lease, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	where := d.cfg.Where("leaderElection.namespace")
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: leaderElection.namespace: namespace %q does not exist; create it, or name the namespace resyncd runs in", where, le.Namespace)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: leaderElection: resyncd may not create the Lease %s/%s: %w", where, le.Namespace, name, err)
	}
	return nil
}
