package cluster

import (
	"errors"
	"fmt"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"

	"github.com/resyncd/resyncd/config"
)

// CheckServed asks discovery whether the API server serves each of
// resources, and reports every one it does not, with the configuration's
// file and line, before any pass.
func CheckServed(disc discovery.DiscoveryInterface, cfg *config.Config, resources []config.Resource) error {
	// A 404 from something that is not an API server (a wrong port, a web
	// server behind the address) must not read as a missing CRD.
	if _, err := disc.ServerVersion(); err != nil {
		var ne net.Error
		var status apierrors.APIStatus
		if !apierrors.IsNotFound(err) && (errors.As(err, &ne) || errors.As(err, &status)) {
			return err // no answer, or refused credentials: the error says so
		}
		return fmt.Errorf("the server does not answer like a Kubernetes API server (GET /version: %w); check --kubeconfig and --context", err)
	}
	var problems []string
	for _, r := range resources {
		gv := groupVersion(r)
		served, err := servedBy(disc, gv, r.Resource)
		if err != nil {
			return err
		}
		if !served {
			key := r.Key()
			problems = append(problems, fmt.Sprintf("%s: %s: %s is not served by the API server; install its CustomResourceDefinition "+
				"(for HttpService: kubectl apply --server-side -f deploy/crds/)", cfg.Where(key), key, strings.TrimPrefix(r.Resource+"."+gv, ".")))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// groupVersion is the group/version of r, as discovery names it.
func groupVersion(r config.Resource) string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// servedBy reports whether the API server lists resource among those of
// the group/version gv.
func servedBy(disc discovery.DiscoveryInterface, gv, resource string) (bool, error) {
	list, err := disc.ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("ask the API server which resources it serves: %w", err)
	}
	for _, res := range list.APIResources {
		if res.Name == resource {
			return true, nil
		}
	}
	return false, nil
}
