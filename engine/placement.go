package engine

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/desired"
)

// The Stalled reasons of a parent that renders a child where the watched
// resource does not allow children, or reads where it does not allow
// reads: such a child is never written, such a reference never read.
const (
	// ReasonNamespaceNotAllowed: a child in another namespace than the
	// parent's that childNamespaces does not allow, or an external
	// reference whose namespace the parent chose that externalNamespaces
	// does not allow.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonClusterScopedNotAllowed: a cluster-scoped child while
	// clusterScopedChildren is false.
	ReasonClusterScopedNotAllowed = "ClusterScopedNotAllowed"
)

// refuse says why the child k of p, which is outside p's namespace, may
// not be written, or nil when the watched resource allows it there. The
// graph is the platform team's and the parent a tenant's: only the
// configuration decides where a tenant's parent may write.
func refuse(rs *resourceState, k childKey, p *unstructured.Unstructured) *desired.Failure {
	if k.Namespace == "" {
		if rs.cfg.ClusterScopedChildren {
			return nil
		}
		return &desired.Failure{Reason: ReasonClusterScopedNotAllowed, Message: fmt.Sprintf(
			"%s/%s is not written: it is cluster-scoped, and %s does not allow cluster-scoped children (clusterScopedChildren is false)",
			k.Kind, k.Name, rs.name)}
	}
	if rs.cfg.AllowsNamespace(p.GetNamespace(), k.Namespace) {
		return nil
	}
	allowed := "none besides the parent's own"
	if len(rs.cfg.ChildNamespaces) > 0 {
		allowed = strings.Join(rs.cfg.ChildNamespaces, ", ")
	}
	return &desired.Failure{Reason: ReasonNamespaceNotAllowed, Message: fmt.Sprintf(
		"%s is not written: its namespace %s is not the parent's, and the namespaces %s allows children in are %s (childNamespaces)",
		k, k.Namespace, rs.name, allowed)}
}

// refuseRead says why the external reference ref of p, of kind t, may not
// be read, or nil when it may: a namespace that p chose (an expression
// over it gave it) other than p's own is read only where the watched
// resource allows such reads. A namespace the graph writes out, or a
// selector over every namespace that the graph wrote so, is the platform
// team's choice. Refused, nothing is read for p, so that a tenant's
// parent cannot learn through resyncd what another team keeps.
func refuseRead(rs *resourceState, t desired.ExternalType, ref desired.ExternalRef, p *unstructured.Unstructured) *desired.Failure {
	if !ref.Chosen || rs.cfg.AllowsExternalNamespace(p.GetNamespace(), ref.Namespace) {
		return nil
	}
	allowed := "none besides the parent's own"
	if len(rs.cfg.ExternalNamespaces) > 0 {
		allowed = strings.Join(rs.cfg.ExternalNamespaces, ", ")
	}
	where := "gives its namespace " + ref.Namespace + ", not the parent's own"
	if ref.Namespace == "" {
		where = "gives it no namespace, so that it would select in every namespace"
	}
	return &desired.Failure{Reason: ReasonNamespaceNotAllowed, Message: fmt.Sprintf(
		"%s (%s) is not read: the parent's spec %s, and the namespaces %s allows such reads in are %s (externalNamespaces)",
		ref.ID, desired.WhereRef(t, ref), where, rs.name, allowed)}
}
