package cluster

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// claims are the API servers the clusters of a command reach, by address
// and by the UID of their kube-system namespace. Two entries that reach
// one server would write every child twice: the first to claim it keeps
// it, the other is refused.
type claims struct {
	mu sync.Mutex
	by map[string]string // "server URL" or "kube-system UID" → cluster
}

func newClaims() *claims { return &claims{by: map[string]string{}} }

// claim gives key to cluster, or refuses it when another cluster holds
// it; what says what the two share.
func (s *claims) claim(cluster, key, what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if other, ok := s.by[key]; ok && other != cluster {
		return &SameServerError{Cluster: cluster, Other: other, What: what}
	}
	s.by[key] = cluster
	return nil
}

// release gives up what cluster claimed.
func (s *claims) release(cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.by {
		if c == cluster {
			delete(s.by, k)
		}
	}
}

// SameServerError refuses a cluster that reaches the API server another
// cluster of the configuration reaches.
type SameServerError struct {
	// Cluster is the one refused, Other the one that reaches the server
	// already.
	Cluster, Other string
	// What the two share: the address, or the kube-system namespace.
	What string
}

func (e *SameServerError) Error() string {
	return fmt.Sprintf("cluster %s reaches the API server of cluster %s (%s): every child would be written twice; "+
		"remove one of the two entries, or point it at another cluster", e.Cluster, e.Other, e.What)
}

// kubeSystemUID returns the UID of the server's kube-system namespace;
// empty when the server has none or resyncd may not get it.
func kubeSystemUID(kube kubernetes.Interface) (string, error) {
	// No context, as for discovery: the request timeout bounds it.
	ns, err := kube.CoreV1().Namespaces().Get(context.Background(), metav1.NamespaceSystem, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err), apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get namespace %s: %w", metav1.NamespaceSystem, err)
	}
	return string(ns.UID), nil
}
