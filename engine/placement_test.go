package engine

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// TestRefuseRead: an external reference is refused only when the parent
// chose its namespace (Chosen) and that is neither the parent's own nor
// one externalNamespaces allows; a selector the parent sent to every
// namespace only with a pattern that matches any. A namespace the graph
// wrote is never refused; the reason names the reference and the
// namespace.
func TestRefuseRead(t *testing.T) {
	p := &unstructured.Unstructured{}
	p.SetNamespace("team-a")
	secrets := desired.ExternalType{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}
	named := func(ns string, chosen bool) desired.ExternalRef {
		return desired.ExternalRef{ID: "db", Name: "creds", Namespace: ns, Chosen: chosen}
	}
	for _, tc := range []struct {
		name    string
		allowed []string
		ref     desired.ExternalRef
		want    string // in the message; "" allowed
	}{
		{"written out", nil, named("platform", false), ""},
		{"a selector written without a namespace", nil, desired.ExternalRef{ID: "db"}, ""},
		{"chosen, the parent's own", nil, named("team-a", true), ""},
		{"chosen, another, none allowed", nil, named("bank", true),
			"db (v1 Secret bank/creds) is not read: the parent's spec gives its namespace bank, not the parent's own, and the namespaces webapps.v1alpha1.example.resyncd.io allows such reads in are none besides the parent's own (externalNamespaces)"},
		{"chosen, another, not matched", []string{"shared-*"}, named("bank", true), "are shared-* (externalNamespaces)"},
		{"chosen, by name", []string{"bank"}, named("bank", true), ""},
		{"chosen, by glob", []string{"ba*"}, named("bank", true), ""},
		{"chosen, every namespace, by a glob of names", []string{"team-*"}, desired.ExternalRef{ID: "db", Chosen: true}, "would select in every namespace"},
		{"chosen, every namespace, by *", []string{"*"}, desired.ExternalRef{ID: "db", Chosen: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := &resourceState{name: "webapps.v1alpha1.example.resyncd.io", cfg: config.Resource{ExternalNamespaces: tc.allowed}}
			got := refuseRead(rs, secrets, tc.ref, p)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %+v", got)
			case tc.want != "" && (got == nil || got.Reason != ReasonNamespaceNotAllowed || !strings.Contains(got.Message, tc.want)):
				t.Errorf("refuseRead = %+v, want %s saying %q", got, ReasonNamespaceNotAllowed, tc.want)
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
