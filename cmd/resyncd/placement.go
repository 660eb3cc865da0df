package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/daemon"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
)

// placementsOffline is placements for r's graph loaded with no cluster:
// Kubernetes' own cluster-scoped kinds are known, any other is taken as
// namespaced (validate --kubeconfig asks discovery: placementLines of the
// graph loaded against the cluster).
func placementsOffline(cfg *config.Config, r config.Resource) ([]string, error) {
	g, err := graph.Load(r.GraphPath(), daemon.GraphOptions(cfg.CEL))
	if err != nil {
		return nil, err
	}
	return placementLines(r, g)
}

// placementLines is placements, with one line for a graph whose children
// all stay in their parent's namespace.
func placementLines(r config.Resource, g *graph.Renderer) ([]string, error) {
	lines, err := daemon.Placements(r, g)
	if len(lines) == 0 && err == nil {
		lines = []string{fmt.Sprintf("%s: every child in its parent's namespace", r.GraphPath())}
	}
	return append(lines, chosenReads(r, g)...), err
}

// chosenReads says, for `resyncd validate`, which external references of g
// read in a namespace an expression gives — which the parent's spec may
// choose — and where r allows them to read: the parent's own namespace,
// and externalNamespaces. Decided per parent, so never an error.
func chosenReads(r config.Resource, g *graph.Renderer) []string {
	verdict := "only where it gives the parent's own namespace (externalNamespaces is empty: any other is refused)"
	if len(r.ExternalNamespaces) > 0 {
		verdict = "allowed in the parent's namespace and " + strings.Join(r.ExternalNamespaces, ", ") + "; refused elsewhere"
	}
	var lines []string
	for _, p := range g.ChosenReads() {
		lines = append(lines, fmt.Sprintf("%s:%d: %s: reads in the namespace %s gives: %s", r.GraphPath(), p.Line, p.Where(), p.Namespace, verdict))
	}
	return lines
}

// refusedPlace says why r does not let child of parent be written where it
// is placed, as the engine refuses it; "" when it may be.
func refusedPlace(r config.Resource, parent, child *unstructured.Unstructured) string {
	ns := child.GetNamespace()
	switch {
	case !desired.Outside(child, parent):
		return ""
	case ns == "" && !r.ClusterScopedChildren:
		return fmt.Sprintf("%s %s: cluster-scoped, and %s does not allow cluster-scoped children (clusterScopedChildren)", child.GetKind(), child.GetName(), r.Name())
	case ns != "" && !r.AllowsNamespace(parent.GetNamespace(), ns):
		return fmt.Sprintf("%s %s/%s: %s does not allow children in namespace %s (childNamespaces)", child.GetKind(), ns, child.GetName(), r.Name(), ns)
	}
	return ""
}
