package daemon

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired/graph"
)

// Placements says, for `resyncd validate`, where the templates of g that
// can leave their parent's namespace place their children, and whether r
// allows it; an error for each template r can only ever refuse: a
// cluster-scoped kind while clusterScopedChildren is false, or a
// namespace written out that childNamespaces does not allow and no
// watched parent can live in (namespaces is set and leaves it out). A
// namespace an expression gives, and one written out that only the
// parents living there may use, are decided per parent, when it is
// rendered.
func Placements(r config.Resource, g *graph.Renderer) (lines []string, err error) {
	return placements(r, g, r.GraphPath())
}

// placements is Placements of the graph that path names in messages.
func placements(r config.Resource, g *graph.Renderer, path string) (lines []string, err error) {
	var errs []error
	on, of := "on "+r.Key(), "of "+r.Key()
	if r.RGD() != "" {
		on = "in the configuration's resourceGraphDefinitions (the platform's guards, which no ResourceGraphDefinition widens)"
		of = on
	}
	for _, p := range g.Placements() {
		where := fmt.Sprintf("%s:%d", path, p.Line)
		verdict := ""
		switch {
		case p.ClusterScoped && r.ClusterScopedChildren:
			verdict = "allowed (clusterScopedChildren)"
		case p.ClusterScoped:
			errs = append(errs, fmt.Errorf("%s: %s: %s is cluster-scoped, and %s does not allow cluster-scoped children: every one would be refused; "+
				"set clusterScopedChildren: true %s, or remove the template", where, p.Where(), p.Kind, r.Name(), on))
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
				"add it to childNamespaces %s, or remove metadata.namespace", path, p.NamespaceLine, p.Where(), r.Name(), p.Namespace, of))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %s: %s", where, p, verdict))
	}
	return lines, errors.Join(errs...)
}
