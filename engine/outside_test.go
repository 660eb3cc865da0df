package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
	"github.com/resyncd/resyncd/internal/fixture"
)

var clusterRoles = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}

const outsideGraph = "../testdata/graphs/outside.yaml"

// outsideHarness watches WebApps in ns with testdata/graphs/outside.yaml,
// its kinds' scopes from discovery as resyncd run has them, and where
// allow lets children be placed.
func outsideHarness(t *testing.T, ns string, allow func(*config.Resource)) *harness {
	t.Helper()
	return placedHarness(t, ns, outsideGraph, allow)
}

// placedHarness is outsideHarness with the graph file at path.
func placedHarness(t *testing.T, ns, path string, allow func(*config.Resource)) *harness {
	t.Helper()
	fixture.InstallWebApps(t, env(t).Config)
	disc := discovery.NewDiscoveryClientForConfigOrDie(env(t).Config)
	g, err := graph.Load(path, graph.Options{Schemas: &resolver.ClientDiscoveryResolver{Discovery: disc},
		Parent: fixture.WebApps.GroupVersion().WithKind("WebApp")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(ns)
	r := cfg.Resources[0]
	r.Group, r.Version, r.Resource, r.Renderer, r.Graph = fixture.WebApps.Group, fixture.WebApps.Version, fixture.WebApps.Resource, "", path
	allow(&r)
	cfg.Resources = []config.Resource{r}
	reg := desired.DefaultRegistry()
	reg[r.RendererKey()] = g
	return newHarnessWith(t, cfg, reg)
}

// requestsIn returns the requests in reqs to objects in namespace ns.
func requestsIn(reqs []string, ns string) []string {
	var out []string
	for _, r := range reqs {
		if strings.Contains(r, "/namespaces/"+ns+"/") {
			out = append(out, r)
		}
	}
	return out
}

// assertOutsideChild checks that u is resyncd's child of the WebApp
// ns/name made outside its namespace: labels naming the parent and its
// namespace, no ownerReference.
func assertOutsideChild(t *testing.T, u *unstructured.Unstructured, ns, name string) {
	t.Helper()
	l := u.GetLabels()
	if len(u.GetOwnerReferences()) != 0 || l[desired.LabelManagedBy] != desired.ManagedByValue || l[desired.LabelParent] != name ||
		l[desired.LabelParentKind] != "WebApp.example.resyncd.io" || l[desired.LabelParentNamespace] != ns {
		t.Errorf("%s %s: owners %v, labels %v; want no ownerReference and the labels of the parent %s/%s", u.GetKind(), u.GetName(), u.GetOwnerReferences(), l, ns, name)
	}
}

// TestOutsideNamespaceRefused: a tenant's WebApp whose spec names a
// namespace the watched resource does not allow writes nothing there — not
// one request — and is Stalled with NamespaceNotAllowed and an Event; its
// child in its own namespace is created, and another parent, whose spec
// names its own namespace, proceeds.
func TestOutsideNamespaceRefused(t *testing.T) {
	ns, other := "out-refused", "out-refused-shared"
	h := outsideHarness(t, ns, func(r *config.Resource) { r.ChildNamespaces = []string{"out-allowed-*"} })
	h.namespace(ns)
	h.namespace(other)
	h.recordEvents()
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx", "tags": []any{other}})
	h.createWebApp(ns, "blog", map[string]any{"image": "nginx", "tags": []any{ns}})

	for pass := 1; pass <= 2; pass++ {
		h.log.reset()
		h.sync()
		if got := requestsIn(h.log.reset(), other); len(got) != 0 {
			t.Errorf("pass %d sent requests to %s: %v", pass, other, got)
		}
	}
	if got := h.list(configMaps, other); len(got) != 0 {
		t.Errorf("ConfigMaps in %s: %v, want none", other, names(got))
	}
	if got := names(h.list(configMaps, ns)); !slices.Equal(got, []string{"blog-home", "out-refused-blog", "shop-home"}) {
		t.Errorf("ConfigMaps in %s: %v, want both homes and blog's shared one, in its own namespace", ns, got)
	}
	s := condition(t, h.mustGet(fixture.WebApps, ns, "shop"), "Stalled")
	if msg := str(s["message"]); s["status"] != "True" || s["reason"] != ReasonNamespaceNotAllowed ||
		!strings.Contains(msg, "ConfigMap/"+other+"/out-refused-shop") || !strings.Contains(msg, "out-allowed-*") {
		t.Errorf("shop Stalled = %v, want True/%s naming the child, its namespace and what is allowed", s, ReasonNamespaceNotAllowed)
	}
	if s := condition(t, h.mustGet(fixture.WebApps, ns, "blog"), "Stalled"); s["status"] != "False" {
		t.Errorf("blog Stalled = %v, want False", s)
	}
	if got := fixture.WarningEvents(t, h.cs, ns, "", map[string]int{"shop/" + ReasonNamespaceNotAllowed: 1}); got["shop/"+ReasonNamespaceNotAllowed] != 1 {
		t.Errorf("Warning Events = %v, want one %s", got, ReasonNamespaceNotAllowed)
	}
}

// TestOutsideNamespaceAllowed: with the namespace allowed, the child is
// created there without an ownerReference, with its parent's labels and
// namespace; the next pass writes nothing; a foreign object of the name
// another parent renders there is not taken (NameTaken); a cluster-scoped
// child is refused while clusterScopedChildren is false, and with it is
// created; switched off (includeWhen) it is deleted, not released; when the
// parent is deleted every child of it is pruned, the ClusterRole that
// refers to the ConfigMap first.
func TestOutsideNamespaceAllowed(t *testing.T) {
	ns, other := "out-tenant", "out-allowed-shared"
	allowNS := func(r *config.Resource) { r.ChildNamespaces = []string{"out-allowed-*"} }
	h := outsideHarness(t, ns, allowNS)
	h.namespace(ns)
	h.namespace(other)
	h.recordEvents()
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ns + "-blog", Namespace: other}, Data: map[string]string{"team": "platform"}}
	theirs, err := h.cs.CoreV1().ConfigMaps(other).Create(t.Context(), foreign, metav1.CreateOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatal(err)
	}
	// The child of a parent in a namespace this resource does not watch
	// (another entry's, or another replica's): read in every namespace,
	// but never taken for an orphan of this one.
	elsewhere := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere-ghost", Namespace: other, Labels: map[string]string{
		desired.LabelManagedBy: desired.ManagedByValue, desired.LabelParentKind: "WebApp.example.resyncd.io",
		desired.LabelParent: "ghost", desired.LabelParentNamespace: "out-elsewhere"}}}
	if _, err := h.cs.CoreV1().ConfigMaps(other).Create(t.Context(), elsewhere, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.createWebApp(ns, "shop", map[string]any{"image": "nginx", "expose": true, "tags": []any{other}})
	h.createWebApp(ns, "blog", map[string]any{"image": "nginx", "tags": []any{other}})

	h.sync() // home and shared; reader waits for shared
	h.sync() // reader: refused
	shared := h.mustGet(configMaps, other, ns+"-shop")
	assertOutsideChild(t, shared, ns, "shop")
	if img, _, _ := unstructured.NestedString(shared.Object, "data", "image"); img != "nginx" {
		t.Errorf("shared ConfigMap data = %v", shared.Object["data"])
	}
	if _, err := h.get(clusterRoles, "", ns+"-shop-reader"); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole with clusterScopedChildren false: %v, want not found", err)
	}
	s := condition(t, h.mustGet(fixture.WebApps, ns, "shop"), "Stalled")
	if s["status"] != "True" || s["reason"] != ReasonClusterScopedNotAllowed || !strings.Contains(str(s["message"]), "ClusterRole/"+ns+"-shop-reader") {
		t.Errorf("shop Stalled = %v, want True/%s naming the ClusterRole", s, ReasonClusterScopedNotAllowed)
	}
	if got, _ := h.cs.CoreV1().ConfigMaps(other).Get(t.Context(), ns+"-blog", metav1.GetOptions{}); got.ResourceVersion != theirs.ResourceVersion || len(got.Labels) != 0 {
		t.Errorf("the foreign ConfigMap was written: rv %s→%s, labels %v", theirs.ResourceVersion, got.ResourceVersion, got.Labels)
	}
	s = condition(t, h.mustGet(fixture.WebApps, ns, "blog"), "Stalled")
	if s["status"] != "True" || s["reason"] != ReasonNameTaken || !strings.Contains(str(s["message"]), "ConfigMap/"+other+"/"+ns+"-blog") ||
		!strings.Contains(str(s["message"]), "WebApp.example.resyncd.io/"+ns+"/blog") {
		t.Errorf("blog Stalled = %v, want True/NameTaken naming the ConfigMap and the adopt value with the parent's namespace", s)
	}

	// The same cluster, now with cluster-scoped children allowed.
	h = outsideHarness(t, ns, func(r *config.Resource) { allowNS(r); r.ClusterScopedChildren = true })
	h.sync()
	assertOutsideChild(t, h.mustGet(clusterRoles, "", ns+"-shop-reader"), ns, "shop")
	if s := condition(t, h.mustGet(fixture.WebApps, ns, "shop"), "Stalled"); s["status"] != "False" {
		t.Errorf("shop Stalled with the ClusterRole allowed = %v", s)
	}
	h.log.reset()
	h.sync()
	if w := writes(h.log.reset()); len(w) != 0 {
		t.Errorf("the pass after convergence wrote %v", w)
	}

	h.mergePatch(fixture.WebApps, ns, "shop", map[string]any{"spec": map[string]any{"expose": false}})
	h.log.reset()
	h.sync()
	if _, err := h.get(clusterRoles, "", ns+"-shop-reader"); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole after expose: false: %v, want deleted", err)
	}
	if w := requestsTo(h.log.reset(), "clusterroles", ns+"-shop-reader"); len(w) != 1 || !strings.HasPrefix(w[0], "DELETE ") {
		t.Errorf("requests to the ClusterRole = %v, want one DELETE", w)
	}
	h.mergePatch(fixture.WebApps, ns, "shop", map[string]any{"spec": map[string]any{"expose": true}})
	h.sync()
	h.mustGet(clusterRoles, "", ns+"-shop-reader")

	if err := h.dyn.Resource(fixture.WebApps).Namespace(ns).Delete(t.Context(), "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.log.reset()
	h.sync()
	deletes := deleted(h.log.reset())
	if want := []string{"clusterroles/" + ns + "-shop-reader", "configmaps/" + ns + "-shop", "configmaps/shop-home"}; !cmp.Equal(want, deletes) {
		t.Errorf("deletes after the parent was deleted = %v, want %v: the ClusterRole before the ConfigMap it refers to", deletes, want)
	}
	if _, err := h.get(configMaps, other, ns+"-shop"); !apierrors.IsNotFound(err) {
		t.Errorf("the shared ConfigMap after its parent was deleted: %v, want deleted", err)
	}
	for _, name := range []string{ns + "-blog", "elsewhere-ghost"} {
		if _, err := h.get(configMaps, other, name); err != nil {
			t.Errorf("ConfigMap %s/%s, not this resource's: %v", other, name, err)
		}
	}
}
