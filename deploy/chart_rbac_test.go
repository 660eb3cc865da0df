package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/shard"
)

// rbacOf returns the rules of the release's own ClusterRole (nil when
// there is none) and of its Roles, by namespace, in a rendering.
func rbacOf(t *testing.T, manifest string) ([]rbacv1.PolicyRule, map[string][]rbacv1.PolicyRule) {
	t.Helper()
	var cluster []rbacv1.PolicyRule
	roles := map[string][]rbacv1.PolicyRule{}
	for doc := range strings.SplitSeq(manifest, "\n---") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if obj.Metadata.Name != releaseName {
			continue // the Lease's and the metrics' roles
		}
		switch obj.Kind {
		case "ClusterRole":
			cluster = obj.Rules
		case "Role":
			roles[obj.Metadata.Namespace] = obj.Rules
		}
	}
	return cluster, roles
}

// rules are the rules of a watched resource: list its parents, patch
// their status, write its children (each "group/resource"), write Events.
func rules(group, resource string, children ...string) []rbacv1.PolicyRule {
	out := []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"list"}},
		{APIGroups: []string{group}, Resources: []string{resource + "/status"}, Verbs: []string{"patch"}},
	}
	for _, c := range children {
		g, r, _ := strings.Cut(c, "/")
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{r},
			Verbs: []string{"get", "list", "create", "patch", "delete"}})
	}
	return append(out, rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
}

// TestChartGraphRBAC: the rules the chart derives from a graph are exactly
// its templates' resources, by the names the API server serves (endpoints,
// networkpolicies; a custom kind's from rbac.customKinds), in Roles of the
// namespaces its resource lists; the ClusterRole of the resource that
// watches every namespace holds none of them, Secrets least of all.
func TestChartGraphRBAC(t *testing.T) {
	got, err := render(t, graphKinds)
	if err != nil {
		t.Fatal(err)
	}
	cluster, roles := rbacOf(t, got)
	wantCluster := rules("resyncd.io", "httpservices", "/services", "apps/deployments", "autoscaling/horizontalpodautoscalers")
	if diff := cmp.Diff(wantCluster, cluster); diff != "" {
		t.Errorf("ClusterRole rules (-want +got):\n%s", diff)
	}
	tenant := rules("example.resyncd.io", "webapps", "/endpoints", "/secrets", "example.com/widgets", "networking.k8s.io/networkpolicies")
	if diff := cmp.Diff(map[string][]rbacv1.PolicyRule{"team-a": tenant, "team-b": tenant}, roles); diff != "" {
		t.Errorf("Role rules by namespace (-want +got):\n%s", diff)
	}
}

// TestChartNamespacedRoles: a resource that lists namespaces gets Roles
// there and no ClusterRole, even when it alone is configured.
func TestChartNamespacedRoles(t *testing.T) {
	vals := map[string]any{
		"graphs": graphKinds["graphs"], "rbac": graphKinds["rbac"],
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "tenant.yaml", "namespaces": []any{"team-a"}},
		}},
	}
	got, err := render(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	cluster, roles := rbacOf(t, got)
	if cluster != nil {
		t.Errorf("ClusterRole with %v, want none", cluster)
	}
	if ns := slices.Sorted(maps.Keys(roles)); !slices.Equal(ns, []string{"team-a"}) {
		t.Errorf("Roles in %v, want team-a only", ns)
	}
}

// oneKind is a graph of one template of the kind given.
func oneKind(apiVersion, kind string) map[string]any {
	return map[string]any{"apiVersion": "resyncd.io/v1alpha1", "kind": "Graph", "metadata": map[string]any{"name": "one"},
		"spec": map[string]any{"resources": []any{map[string]any{"id": "child", "template": map[string]any{
			"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "${schema.metadata.name}"}}}}}}
}

// graphValues configures one resource of the graph g, as file g.yaml.
func graphValues(g map[string]any, extra map[string]any) map[string]any {
	vals := map[string]any{
		"graphs": map[string]any{"g.yaml": g},
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "g.yaml"},
		}},
	}
	maps.Copy(vals, extra)
	return vals
}

// TestChartRefusesGraphKinds: a graph whose templates the chart cannot
// grant exactly fails the render with a message that names the graph, the
// template and the kind: cluster-scoped kinds of a resource without
// clusterScopedChildren (resyncd would refuse every one), create-only
// kinds, and a custom kind whose resource the values do not give.
func TestChartRefusesGraphKinds(t *testing.T) {
	noRBAC := map[string]any{"rbac": map[string]any{"create": false}}
	tests := []struct {
		name string
		vals map[string]any
		want string
	}{
		{"the five kinds", map[string]any{
			"graphs": map[string]any{"cluster-scoped.yaml": readYAML("../testdata/graphs/cluster-scoped.yaml")},
			"config": map[string]any{"resources": []any{
				map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "cluster-scoped.yaml", "namespaces": []any{"team-a"}},
			}},
		}, `graphs["cluster-scoped.yaml"] spec.resources[3] (id role): kind ClusterRole.rbac.authorization.k8s.io is cluster-scoped, and config.resources[0] does not set clusterScopedChildren: true; resyncd would refuse every one and the chart grants it nothing: set it, or remove the template`},
		{"Namespace", graphValues(oneKind("v1", "Namespace"), nil), `graphs["g.yaml"] spec.resources[0] (id child): kind Namespace is cluster-scoped`},
		{"ClusterRoleBinding", graphValues(oneKind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), nil), "kind ClusterRoleBinding.rbac.authorization.k8s.io is cluster-scoped"},
		{"StorageClass", graphValues(oneKind("storage.k8s.io/v1", "StorageClass"), nil), "kind StorageClass.storage.k8s.io is cluster-scoped"},
		{"CustomResourceDefinition", graphValues(oneKind("apiextensions.k8s.io/v1", "CustomResourceDefinition"), nil), "kind CustomResourceDefinition.apiextensions.k8s.io is cluster-scoped"},
		{"PersistentVolume", graphValues(oneKind("v1", "PersistentVolume"), nil), "kind PersistentVolume is cluster-scoped"},
		{"TokenReview", graphValues(oneKind("authentication.k8s.io/v1", "TokenReview"), nil), "kind TokenReview.authentication.k8s.io takes only create"},
		{"cluster-scoped without RBAC", graphValues(oneKind("v1", "Namespace"), noRBAC), "kind Namespace is cluster-scoped"},
		{"custom kind without a resource", graphValues(oneKind("example.com/v1", "Widget"), nil),
			`graphs["g.yaml"] spec.resources[0] (id child): kind Widget (example.com/v1) is not a built-in kind the chart knows: give its resource, the plural the API server serves (kubectl api-resources), in rbac.customKinds: [{group: "example.com", kind: Widget, resource: ...}]`},
		{"custom kind of another group", graphValues(oneKind("example.com/v1", "Widget"), map[string]any{"rbac": map[string]any{"customKinds": []any{
			map[string]any{"group": "example.org", "kind": "Widget", "resource": "widgets"}}}}), "kind Widget (example.com/v1) is not a built-in kind"},
		{"kind an expression", graphValues(oneKind("v1", "${schema.spec.kind}"), nil),
			`graphs["g.yaml"] spec.resources[0] (id child): the template must set apiVersion and kind, without expressions`},
		{"graph not in graphs", map[string]any{"config": map[string]any{"resources": []any{
			map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "missing.yaml"}}}},
			`config.resources[0].graph: "missing.yaml" is not a file of graphs; add it under graphs`},
		{"custom kind without a plural", map[string]any{"rbac": map[string]any{"customKinds": []any{
			map[string]any{"group": "example.com", "kind": "Widget"}}}}, "resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, tt.vals)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
	// Without RBAC from the chart, its rules need no resource names.
	if _, err := render(t, graphValues(oneKind("example.com/v1", "Widget"), noRBAC)); err != nil {
		t.Errorf("rbac.create false, a custom kind: %v", err)
	}
}

// outsideRBAC returns the rules of the release's ClusterRole for the kinds
// children may leave their parents' namespaces as, nil when there is none.
func outsideRBAC(t *testing.T, manifest string) []rbacv1.PolicyRule {
	t.Helper()
	for doc := range strings.SplitSeq(manifest, "\n---") {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if obj.Kind == "ClusterRole" && obj.Metadata.Name == releaseName+"-outside" {
			return obj.Rules
		}
	}
	return nil
}

// TestChartOutsideRBAC: the kinds a resource lets children leave their
// parents' namespaces as — a template that sets metadata.namespace where
// childNamespaces is set, a cluster-scoped kind where
// clusterScopedChildren is true — are granted in every namespace, in a
// ClusterRole of their own, and nothing else is; without those keys no
// such ClusterRole is made, and the Roles of the watched namespaces stay
// as they are.
func TestChartOutsideRBAC(t *testing.T) {
	resource := func(extra map[string]any) map[string]any {
		r := map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "outside.yaml", "namespaces": []any{"team-a"}}
		maps.Copy(r, extra)
		return map[string]any{"graphs": map[string]any{"outside.yaml": readYAML("../testdata/graphs/outside.yaml")},
			"config": map[string]any{"resources": []any{r}}}
	}
	write := func(group, resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"get", "list", "create", "patch", "delete"}}
	}
	for _, tc := range []struct {
		name  string
		extra map[string]any
		want  []rbacv1.PolicyRule
	}{
		{"both allowed", map[string]any{"childNamespaces": []any{"shared-*"}, "clusterScopedChildren": true},
			[]rbacv1.PolicyRule{write("", "configmaps"), write("rbac.authorization.k8s.io", "clusterroles")}},
		{"cluster-scoped only", map[string]any{"clusterScopedChildren": true},
			[]rbacv1.PolicyRule{write("rbac.authorization.k8s.io", "clusterroles")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(t, resource(tc.extra))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, outsideRBAC(t, got)); diff != "" {
				t.Errorf("the -outside ClusterRole's rules (-want +got):\n%s", diff)
			}
			cluster, roles := rbacOf(t, got)
			if want := rules("example.resyncd.io", "webapps", "/configmaps"); cluster != nil || !cmp.Equal(map[string][]rbacv1.PolicyRule{"team-a": want}, roles) {
				t.Errorf("ClusterRole %v, Roles %v; want none, and team-a's with the ConfigMaps", cluster, roles)
			}
		})
	}
	if _, err := render(t, resource(map[string]any{"childNamespaces": []any{"shared-*"}})); err == nil ||
		!strings.Contains(err.Error(), `graphs["outside.yaml"] spec.resources[2] (id reader): kind ClusterRole.rbac.authorization.k8s.io is cluster-scoped, and config.resources[0] does not set clusterScopedChildren: true`) {
		t.Errorf("a ClusterRole without clusterScopedChildren: %v, want the render refused", err)
	}
	got, err := render(t, graphKinds)
	if err != nil {
		t.Fatal(err)
	}
	if r := outsideRBAC(t, got); r != nil {
		t.Errorf("graphs that stay in their namespace: an -outside ClusterRole with %v", r)
	}
}

// TestChartOutsideNamedRBAC: where childNamespaces names namespaces only,
// the kinds children may leave for them are granted by Roles in those
// namespaces, as resyncd LISTs them there, and in no other namespace: no
// -outside ClusterRole for them. A glob among the names, or a resource
// watching every namespace, keeps the grant cluster-wide.
func TestChartOutsideNamedRBAC(t *testing.T) {
	values := func(r map[string]any) map[string]any {
		base := map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "outside.yaml"}
		maps.Copy(base, r)
		return map[string]any{"graphs": map[string]any{"outside.yaml": readYAML("../testdata/graphs/outside.yaml")},
			"config": map[string]any{"resources": []any{base}}}
	}
	write := func(group, resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"get", "list", "create", "patch", "delete"}}
	}
	got, err := render(t, values(map[string]any{"namespaces": []any{"team-a"}, "childNamespaces": []any{"shared", "platform"}, "clusterScopedChildren": true}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]rbacv1.PolicyRule{write("rbac.authorization.k8s.io", "clusterroles")}, outsideRBAC(t, got)); diff != "" {
		t.Errorf("names: the -outside ClusterRole's rules (-want +got):\n%s", diff)
	}
	events := rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}
	away := []rbacv1.PolicyRule{write("", "configmaps"), events}
	cluster, roles := rbacOf(t, got)
	want := map[string][]rbacv1.PolicyRule{"team-a": rules("example.resyncd.io", "webapps", "/configmaps"), "shared": away, "platform": away}
	if diff := cmp.Diff(want, roles); cluster != nil || diff != "" {
		t.Errorf("names: ClusterRole %v; Roles (-want +got):\n%s", cluster, diff)
	}

	g := readYAML("../testdata/graphs/outside.yaml")
	spec := g["spec"].(map[string]any)
	spec["resources"] = spec["resources"].([]any)[:2] // without the ClusterRole
	for name, r := range map[string]map[string]any{
		"a glob":          {"namespaces": []any{"team-a"}, "childNamespaces": []any{"shared", "team-*"}},
		"every namespace": {"childNamespaces": []any{"shared"}},
	} {
		vals := values(r)
		vals["graphs"] = map[string]any{"outside.yaml": g}
		if got, err = render(t, vals); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff([]rbacv1.PolicyRule{write("", "configmaps")}, outsideRBAC(t, got)); diff != "" {
			t.Errorf("%s: the -outside ClusterRole's rules (-want +got):\n%s", name, diff)
		}
		if _, roles := rbacOf(t, got); roles["shared"] != nil {
			t.Errorf("%s: a Role in shared: %v", name, roles["shared"])
		}
	}
}

// TestChartCustomClusterScoped: a custom kind rbac.customKinds marks
// clusterScoped is treated as Kubernetes' own cluster-scoped kinds: a
// template of it is refused without clusterScopedChildren, and granted in
// the -outside ClusterRole, not in the watched namespaces' Roles, with it.
func TestChartCustomClusterScoped(t *testing.T) {
	custom := map[string]any{"rbac": map[string]any{"customKinds": []any{
		map[string]any{"group": "example.com", "kind": "Tenant", "resource": "tenants", "clusterScoped": true}}}}
	vals := graphValues(oneKind("example.com/v1", "Tenant"), custom)
	r := vals["config"].(map[string]any)["resources"].([]any)[0].(map[string]any)
	r["namespaces"] = []any{"team-a"}
	want := `graphs["g.yaml"] spec.resources[0] (id child): kind Tenant.example.com is cluster-scoped, and config.resources[0] does not set clusterScopedChildren: true`
	if _, err := render(t, vals); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("without clusterScopedChildren: %v, want an error with %q", err, want)
	}
	r["clusterScopedChildren"] = true
	got, err := render(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	write := rbacv1.PolicyRule{APIGroups: []string{"example.com"}, Resources: []string{"tenants"}, Verbs: []string{"get", "list", "create", "patch", "delete"}}
	if diff := cmp.Diff([]rbacv1.PolicyRule{write}, outsideRBAC(t, got)); diff != "" {
		t.Errorf("the -outside ClusterRole's rules (-want +got):\n%s", diff)
	}
	if cluster, roles := rbacOf(t, got); cluster != nil || !cmp.Equal(map[string][]rbacv1.PolicyRule{"team-a": rules("example.resyncd.io", "webapps")}, roles) {
		t.Errorf("ClusterRole %v, Roles %v; want none, and team-a's without the Tenants", cluster, roles)
	}
}

// TestChartKindTable: the chart's table of built-in kinds (kinds.yaml)
// says what the API server says: each kind resyncd can write with the
// resource the server serves it as, each kind it cannot write (cluster-
// scoped, or without the verbs resyncd uses) as such, and no built-in
// kind missing.
func TestChartKindTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Namespaced    map[string]string `json:"namespaced"`
		ClusterScoped map[string]string `json:"clusterScoped"`
		Unwritable    map[string]string `json:"unwritable"`
	}
	if err := yaml.UnmarshalStrict(data, &table); err != nil {
		t.Fatal(err)
	}
	_, lists, err := discovery.NewDiscoveryClientForConfigOrDie(env(t).Config).ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		if gv.Group != "" && strings.Contains(gv.Group, ".") && !strings.HasSuffix(gv.Group, ".k8s.io") && gv.Group != "resyncd.io" {
			continue // custom resources other tests installed
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // subresources
			}
			key := r.Kind
			if gv.Group != "" {
				key += "." + gv.Group
			}
			served[key] = true
			writable := true
			for _, v := range []string{"get", "list", "create", "patch", "delete"} {
				writable = writable && slices.Contains(r.Verbs, v)
			}
			switch {
			case writable && r.Namespaced && table.Namespaced[key] != r.Name:
				t.Errorf("%s (%s): kinds.yaml namespaced has %q, the API server serves %q", key, l.GroupVersion, table.Namespaced[key], r.Name)
			case writable && !r.Namespaced && table.ClusterScoped[key] != r.Name:
				t.Errorf("%s (%s) is cluster-scoped: kinds.yaml clusterScoped has %q, the API server serves %q", key, l.GroupVersion, table.ClusterScoped[key], r.Name)
			case !writable && !r.Namespaced && table.Unwritable[key] != "cluster-scoped" && table.Unwritable[key] != "create-only":
				t.Errorf("%s (%s) is cluster-scoped: kinds.yaml unwritable has %q, want cluster-scoped (or create-only)", key, l.GroupVersion, table.Unwritable[key])
			case !writable && r.Namespaced && table.Unwritable[key] != "create-only":
				t.Errorf("%s (%s) is namespaced with verbs %v: kinds.yaml unwritable has %q, want create-only", key, l.GroupVersion, r.Verbs, table.Unwritable[key])
			}
		}
	}
	for key := range table.Namespaced {
		if _, both := table.Unwritable[key]; both {
			t.Errorf("%s is both namespaced and unwritable in kinds.yaml", key)
		}
		if _, both := table.ClusterScoped[key]; both {
			t.Errorf("%s is both namespaced and cluster-scoped in kinds.yaml", key)
		}
		if !served[key] {
			t.Logf("%s: not served by this API server (a feature gate, or an older version); taken as kinds.yaml says", key)
		}
	}
	for key := range table.ClusterScoped {
		if _, both := table.Unwritable[key]; both {
			t.Errorf("%s is both cluster-scoped and unwritable in kinds.yaml", key)
		}
		if !served[key] {
			t.Logf("%s: not served by this API server (a feature gate, or an older version); taken as kinds.yaml says", key)
		}
	}
	for key, why := range table.Unwritable {
		if !slices.Contains([]string{"cluster-scoped", "create-only", "subresource"}, why) {
			t.Errorf("%s: kinds.yaml unwritable reason %q; the chart knows cluster-scoped, create-only, subresource", key, why)
		}
	}
}

// TestChartExternalRefRBAC: an external reference is granted get and list,
// never a write: in its literal namespace (a Role there, and nothing else
// there but Events), in the resource's namespaces when its namespace is
// the parent's, cluster-wide for a selector over every namespace. A kind
// it only reads keeps its Role's rules to the read; one it also writes as
// a child keeps the child's.
func TestChartExternalRefRBAC(t *testing.T) {
	ref := func(id string, x map[string]any) map[string]any { return map[string]any{"id": id, "externalRef": x} }
	g := map[string]any{"apiVersion": "resyncd.io/v1alpha1", "kind": "Graph", "metadata": map[string]any{"name": "ext"},
		"spec": map[string]any{"resources": []any{
			ref("platform", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "platform", "namespace": "platform-system"}}),
			ref("token", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "${schema.spec.secret}"}}),
			ref("widgets", map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"selector": map[string]any{}}}),
			ref("own", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "${schema.metadata.namespace}"}}),
			map[string]any{"id": "config", "template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "${schema.metadata.name}"}}},
		}}}
	vals := graphValues(g, map[string]any{"rbac": map[string]any{"customKinds": []any{
		map[string]any{"group": "example.com", "kind": "Widget", "resource": "widgets"}}}})
	vals["config"].(map[string]any)["resources"].([]any)[0].(map[string]any)["namespaces"] = []any{"team-a"}
	got, err := render(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	read := func(group, resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"get", "list"}}
	}
	events := rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}
	cluster, roles := rbacOf(t, got)
	if diff := cmp.Diff([]rbacv1.PolicyRule{read("example.com", "widgets"), events}, cluster); diff != "" {
		t.Errorf("ClusterRole rules (-want +got):\n%s", diff)
	}
	tenant := rules("example.resyncd.io", "webapps", "/configmaps")
	tenant = slices.Insert(tenant, len(tenant)-1, read("", "secrets"))
	want := map[string][]rbacv1.PolicyRule{"team-a": tenant, "platform-system": {read("", "configmaps"), events}}
	if diff := cmp.Diff(want, roles); diff != "" {
		t.Errorf("Role rules by namespace (-want +got):\n%s", diff)
	}

	// A kind the chart does not know is named, as a template's is.
	g["spec"].(map[string]any)["resources"] = []any{ref("gadget", map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"}})}
	_, err = render(t, graphValues(g, nil))
	if want := `graphs["g.yaml"] spec.resources[0] (id gadget) externalRef: kind Gadget (example.com/v1) is not a namespaced built-in kind the chart knows`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error with %q", err, want)
	}
}

// TestChartExternalNamespacesRBAC: a reference whose namespace an
// expression gives is granted get and list in the resource's namespaces
// and, as externalNamespaces allows, in a Role in each namespace it names
// and cluster-wide for a glob; a reference whose namespace is written out
// is granted there only, whatever externalNamespaces says. Without it,
// nothing beyond the watched namespaces.
func TestChartExternalNamespacesRBAC(t *testing.T) {
	ref := func(id string, x map[string]any) map[string]any { return map[string]any{"id": id, "externalRef": x} }
	g := map[string]any{"apiVersion": "resyncd.io/v1alpha1", "kind": "Graph", "metadata": map[string]any{"name": "ext"},
		"spec": map[string]any{"resources": []any{
			ref("db", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": "${schema.spec.secretNamespace}"}}),
			ref("platform", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "platform", "namespace": "platform-system"}}),
			map[string]any{"id": "config", "template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "${schema.metadata.name}"}}},
		}}}
	read := func(group, resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"get", "list"}}
	}
	events := rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}
	tenant := rules("example.resyncd.io", "webapps", "/configmaps")
	tenant = slices.Insert(tenant, len(tenant)-1, read("", "secrets"))
	for _, tc := range []struct {
		name    string
		allowed []any
		cluster []rbacv1.PolicyRule
		roles   map[string][]rbacv1.PolicyRule
	}{
		{"none", nil, nil, map[string][]rbacv1.PolicyRule{"team-a": tenant, "platform-system": {read("", "configmaps"), events}}},
		{"names and a glob", []any{"bank", "vault-*"}, []rbacv1.PolicyRule{read("", "secrets"), events},
			map[string][]rbacv1.PolicyRule{"team-a": tenant, "platform-system": {read("", "configmaps"), events}, "bank": {read("", "secrets"), events}}},
	} {
		vals := graphValues(g, nil)
		r := vals["config"].(map[string]any)["resources"].([]any)[0].(map[string]any)
		r["namespaces"] = []any{"team-a"}
		if tc.allowed != nil {
			r["externalNamespaces"] = tc.allowed
		}
		got, err := render(t, vals)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cluster, roles := rbacOf(t, got)
		if diff := cmp.Diff(tc.cluster, cluster); diff != "" {
			t.Errorf("%s: ClusterRole rules (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.roles, roles); diff != "" {
			t.Errorf("%s: Role rules by namespace (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestChartRingRBAC installs the chart with three replicas (the ring) and
// clusters from Secrets in two namespaces, then acts and asks the API
// server as the release's ServiceAccount: a replica creates its Lease in
// the release's namespace, lists the ring's, renews and deletes its own,
// and gets and lists Secrets in the namespaces config.clusterSecrets names.
// Every other verb on Leases and Secrets, and every verb on them in any
// other namespace or across all, is denied (SelfSubjectAccessReview, each
// verb the API server knows).
func TestChartRingRBAC(t *testing.T) {
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "ring-system", "ring-apps", "ring-argocd", "ring-capi", "ring-other")
	_, sa := helmInstallOnly(t, "ring", "ring-system", map[string]any{"replicaCount": 3, "config": map[string]any{
		"resources": []any{map[string]any{"group": "resyncd.io", "version": "v1alpha1", "resource": "httpservices", "renderer": "httpservice", "namespaces": []any{"ring-apps"}}},
		"clusterSecrets": []any{
			map[string]any{"namespace": "ring-argocd", "labelSelector": "argocd.argoproj.io/secret-type=cluster"},
			map[string]any{"namespace": "ring-capi", "labelSelector": "cluster.x-k8s.io/cluster-name"},
		},
	}})
	saKube := kubernetes.NewForConfigOrDie(sa)
	leases := saKube.CoordinationV1().Leases("ring-system")

	// A replica's Lease, as the ring names and labels it.
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "ring-resyncd-ring-resyncd-0", Labels: map[string]string{"resyncd.io/ring": "ring-resyncd"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptrTo("ring-resyncd-0"), LeaseDurationSeconds: ptrTo[int32](15), RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	// The authorizer learns of new Roles from its cache, a moment later.
	fixture.Eventually(t, "the ring's Role in force", 30*time.Second, func() bool {
		created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
		if err == nil {
			lease = created
		}
		return err == nil
	})
	ring, err := leases.List(ctx, metav1.ListOptions{LabelSelector: "resyncd.io/ring=ring-resyncd"})
	if err != nil || len(ring.Items) != 1 {
		t.Fatalf("list the ring: %v, %d Leases", err, len(ring.Items))
	}
	mine, err := leases.Get(ctx, lease.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get its Lease: %v", err)
	}
	mine.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := leases.Update(ctx, mine, metav1.UpdateOptions{}); err != nil {
		t.Errorf("renew its Lease: %v", err)
	}
	if err := leases.Delete(ctx, lease.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete its Lease: %v", err)
	}

	// The ring itself, as the ServiceAccount: it joins, holds the one
	// cluster whole, and deletes its Lease on the way out.
	member := shard.New(shard.Options{Leases: saKube.CoordinationV1(), Namespace: "ring-system", Name: "ring-resyncd", Identity: "ring-resyncd-1",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond, Log: zaptest.NewLogger(t)})
	member.SetClusters([]string{"local"})
	ringCtx, stopRing := context.WithCancel(ctx)
	ringDone := make(chan error, 1)
	go func() { ringDone <- member.Run(ringCtx) }()
	fixture.Eventually(t, "the ring holds the cluster", 20*time.Second, func() bool {
		p, release := member.Acquire("local")
		release()
		return p.IsWhole()
	})
	if err := member.Leave(ctx); err != nil {
		t.Errorf("leave the ring: %v", err)
	}
	stopRing()
	if err := <-ringDone; !errors.Is(err, context.Canceled) {
		t.Errorf("the ring's Run returned %v, want it cancelled", err)
	}
	if left, err := leases.List(ctx, metav1.ListOptions{LabelSelector: "resyncd.io/ring=ring-resyncd"}); err != nil || len(left.Items) != 0 {
		t.Errorf("after leaving, the ring has %d Leases (%v), want none", len(left.Items), err)
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "east", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"server": "https://east.example.com"}}
	if _, err := admin.CoreV1().Secrets("ring-argocd").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "the Secrets' Roles in force", 30*time.Second, func() bool {
		_, errA := saKube.CoreV1().Secrets("ring-argocd").Get(ctx, "east", metav1.GetOptions{})
		_, errC := saKube.CoreV1().Secrets("ring-capi").List(ctx, metav1.ListOptions{LabelSelector: "cluster.x-k8s.io/cluster-name"})
		return errA == nil && errC == nil
	})
	if got, err := saKube.CoreV1().Secrets("ring-argocd").List(ctx, metav1.ListOptions{LabelSelector: "argocd.argoproj.io/secret-type=cluster"}); err != nil || len(got.Items) != 1 {
		t.Errorf("list the cluster Secrets: %v", err)
	}

	// What the ServiceAccount may do to Leases and Secrets, by namespace
	// ("" for all of them at once).
	got := map[string][]string{}
	for _, resource := range []string{"leases", "secrets"} {
		group := map[string]string{"leases": "coordination.k8s.io", "secrets": ""}[resource]
		for _, ns := range []string{"ring-system", "ring-apps", "ring-argocd", "ring-capi", "ring-other", ""} {
			for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
				review, err := saKube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
					Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: ns, Verb: verb, Group: group, Resource: resource}}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if review.Status.Allowed {
					key := fmt.Sprintf("%s in %q", resource, ns)
					got[key] = append(got[key], verb)
				}
			}
		}
	}
	want := map[string][]string{
		`leases in "ring-system"`:  {"get", "list", "create", "update", "delete"},
		`secrets in "ring-argocd"`: {"get", "list"},
		`secrets in "ring-capi"`:   {"get", "list"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verbs allowed on Leases and Secrets (-want +got):\n%s", diff)
	}
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }
