package engine

import (
	"slices"
	"testing"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
)

// TestChildNamespaces: a kind whose children may leave their parent's
// namespace is LISTed in the watched namespaces and the ones
// childNamespaces names when it names them all, so that Roles there
// suffice; cluster-wide only for a glob, for a resource watching every
// namespace, and for a cluster-scoped kind.
func TestChildNamespaces(t *testing.T) {
	t.Parallel()
	anywhere := desired.ChildType{Anywhere: true}
	for _, tc := range []struct {
		name       string
		watched    []string
		child      []string
		ct         desired.ChildType
		namespaces []string
		wide       bool
	}{
		{"stays", []string{"team"}, []string{"shared"}, desired.ChildType{}, []string{"team"}, false},
		{"anywhere, nothing allowed", []string{"team"}, nil, anywhere, []string{"team"}, false},
		{"names", []string{"team", "shared"}, []string{"shared", "platform"}, anywhere, []string{"team", "shared", "platform"}, true},
		{"a glob", []string{"team"}, []string{"shared", "team-*"}, anywhere, nil, true},
		{"any", []string{"team"}, []string{"*"}, anywhere, nil, true},
		{"every namespace watched", nil, []string{"shared"}, anywhere, nil, true},
		{"cluster-scoped", []string{"team"}, []string{"shared"}, desired.ChildType{ClusterScoped: true}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := config.Resource{Namespaces: tc.watched, ChildNamespaces: tc.child}
			namespaces, wide := childNamespaces(r, tc.ct)
			if !slices.Equal(namespaces, tc.namespaces) || wide != tc.wide {
				t.Errorf("got %v, wide %v; want %v, wide %v", namespaces, wide, tc.namespaces, tc.wide)
			}
		})
	}
}
