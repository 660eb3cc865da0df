package engine

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
)

// TestRefuse: a child outside its parent's namespace is refused unless the
// watched resource allows its namespace (by name or glob) or, for a
// cluster-scoped child, cluster-scoped children; the reason says which.
func TestRefuse(t *testing.T) {
	p := &unstructured.Unstructured{}
	p.SetNamespace("team-a")
	for _, tc := range []struct {
		name       string
		namespaces []string
		cluster    bool
		key        childKey
		want       string
	}{
		{"another namespace, none allowed", nil, true, childKey{Kind: "ConfigMap", Namespace: "shared", Name: "x"}, ReasonNamespaceNotAllowed},
		{"another namespace, not matched", []string{"team-*"}, false, childKey{Kind: "ConfigMap", Namespace: "shared", Name: "x"}, ReasonNamespaceNotAllowed},
		{"another namespace, by name", []string{"shared"}, false, childKey{Kind: "ConfigMap", Namespace: "shared", Name: "x"}, ""},
		{"another namespace, by glob", []string{"team-*"}, false, childKey{Kind: "ConfigMap", Namespace: "team-b", Name: "x"}, ""},
		{"any namespace", []string{"*"}, false, childKey{Kind: "ConfigMap", Namespace: "kube-system", Name: "x"}, ""},
		{"cluster-scoped, not allowed", []string{"*"}, false, childKey{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "x"}, ReasonClusterScopedNotAllowed},
		{"cluster-scoped, allowed", nil, true, childKey{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := &resourceState{name: "webapps.v1alpha1.example.resyncd.io", cfg: config.Resource{ChildNamespaces: tc.namespaces, ClusterScopedChildren: tc.cluster}}
			got := refuse(rs, tc.key, p)
			if (got == nil) != (tc.want == "") || (got != nil && got.Reason != tc.want) {
				t.Errorf("refuse = %+v, want reason %q", got, tc.want)
			}
		})
	}
}

// TestValidIdentityNamespace: a namespace a renderer gives a child (from
// the parent's spec, say) that cannot name a namespace is the parent's
// invalid spec, before anything is sent.
func TestValidIdentityNamespace(t *testing.T) {
	p := &unstructured.Unstructured{}
	p.SetName("shop")
	p.SetNamespace("team-a")
	child := func(ns string) *unstructured.Unstructured {
		c := &unstructured.Unstructured{}
		c.SetAPIVersion("v1")
		c.SetKind("ConfigMap")
		c.SetName("x")
		c.SetNamespace(ns)
		return c
	}
	for ns, ok := range map[string]bool{"team-a": true, "shared": true, "": true, "Shared_NS": false, "a/b": false} {
		err := validIdentity(p, desired.Graph{Children: []*unstructured.Unstructured{child(ns)}})
		if (err == nil) != ok || (err != nil && !desired.IsInvalid(err)) {
			t.Errorf("namespace %q: %v, want valid %v", ns, err, ok)
		}
	}
}
