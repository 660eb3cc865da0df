package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
)

// placements says, for `resyncd validate`, where the templates of g that
// can leave their parent's namespace place their children, and whether r
// allows it; an error for each template r can only ever refuse: a
// cluster-scoped kind while clusterScopedChildren is false, or a
// namespace written out that childNamespaces does not allow and no
// watched parent can live in (namespaces is set and leaves it out). A
// namespace an expression gives, and one written out that only the
// parents living there may use, are decided per parent, when it is
// rendered.
func placements(r config.Resource, g *graph.Renderer) (lines []string, err error) {
	var errs []error
	for _, p := range g.Placements() {
		where := fmt.Sprintf("%s:%d", r.GraphPath(), p.Line)
		verdict := ""
		switch {
		case p.ClusterScoped && r.ClusterScopedChildren:
			verdict = "allowed (clusterScopedChildren)"
		case p.ClusterScoped:
			errs = append(errs, fmt.Errorf("%s: %s: %s is cluster-scoped, and %s does not allow cluster-scoped children: every one would be refused; "+
				"set clusterScopedChildren: true on %s, or remove the template", where, p.Where(), p.Kind, r.Name(), r.Key()))
			continue
		case p.Expression && len(r.ChildNamespaces) == 0:
			verdict = "only where it gives the parent's own namespace (childNamespaces is empty: any other is refused)"
		case p.Expression:
			verdict = "allowed in the parent's namespace and " + strings.Join(r.ChildNamespaces, ", ") + "; refused elsewhere"
		case r.AllowsNamespace("", p.Namespace):
			verdict = "allowed (childNamespaces)"
		case len(r.Namespaces) == 1 && r.Namespaces[0] == p.Namespace:
			verdict = "the parents' own namespace"
		case len(r.Namespaces) == 0 || slices.Contains(r.Namespaces, p.Namespace):
			verdict = "allowed for the parents in " + p.Namespace + "; refused for the others (childNamespaces does not allow it)"
		default:
			errs = append(errs, fmt.Errorf("%s:%d: %s: %s does not allow children in namespace %s: every one would be refused; "+
				"add it to childNamespaces of %s, or remove metadata.namespace", r.GraphPath(), p.NamespaceLine, p.Where(), r.Name(), p.Namespace, r.Key()))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %s: %s", where, p, verdict))
	}
	return lines, errors.Join(errs...)
}

// placementsOffline is placements for r's graph loaded with no cluster:
// Kubernetes' own cluster-scoped kinds are known, any other is taken as
// namespaced (validate --kubeconfig asks discovery: placementLines of the
// graph loaded against the cluster).
func placementsOffline(cfg *config.Config, r config.Resource) ([]string, error) {
	g, err := graph.Load(r.GraphPath(), celOptions(cfg.CEL))
	if err != nil {
		return nil, err
	}
	return placementLines(r, g)
}

// placementLines is placements, with one line for a graph whose children
// all stay in their parent's namespace.
func placementLines(r config.Resource, g *graph.Renderer) ([]string, error) {
	lines, err := placements(r, g)
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
