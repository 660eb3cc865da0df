package engine

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
	"github.com/resyncd/resyncd/internal/fixture"
)

const externalGraph = "../testdata/kro/external-config.yaml"

var (
	teamApps        = schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "teamapps"}
	serviceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
)

// externalHarness watches TeamApps in ns with testdata/kro/external-config.yaml,
// its CRD made from the graph's spec.schema, and the graph compiled
// against the API server's schemas as resyncd run does.
func externalHarness(t *testing.T, ns string) *harness {
	t.Helper()
	return externalHarnessWith(t, ns, externalGraph)
}

// externalHarnessWith is externalHarness with the graph at path, whose
// parents are TeamApps too.
func externalHarnessWith(t *testing.T, ns, path string) *harness {
	t.Helper()
	return externalHarnessTyped(t, ns, path, true)
}

// externalHarnessTyped is externalHarnessWith, the graph compiled with no
// schema unless typed: as a graph of kinds not served loads offline.
func externalHarnessTyped(t *testing.T, ns, path string, typed bool) *harness {
	t.Helper()
	crd, err := graph.CRDOfFile(externalGraph)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(env(t).Config, envtest.CRDInstallOptions{CRDs: []*extv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatal(err)
	}
	disc := discovery.NewDiscoveryClientForConfigOrDie(env(t).Config)
	fixture.Eventually(t, "the OpenAPI schema of TeamApp published", 30*time.Second, func() bool {
		paths, err := disc.OpenAPIV3().Paths()
		_, ok := paths["apis/kro.run/v1alpha1"]
		return err == nil && ok
	})
	opts := graph.Options{}
	if typed {
		opts = graph.Options{Schemas: &resolver.ClientDiscoveryResolver{Discovery: disc}, Parent: teamApps.GroupVersion().WithKind("TeamApp")}
	}
	g, err := graph.Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(ns)
	r := cfg.Resources[0]
	r.Group, r.Version, r.Resource, r.Renderer, r.Graph = teamApps.Group, teamApps.Version, teamApps.Resource, "", path
	cfg.Resources = []config.Resource{r}
	reg := desired.DefaultRegistry()
	reg[r.RendererKey()] = g
	h := newHarnessWith(t, cfg, reg)
	h.namespace(ns)
	return h
}

func (h *harness) createTeamApp(ns, name, team string) {
	h.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kro.run/v1alpha1", "kind": "TeamApp",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"team": team},
	}}
	if _, err := h.dyn.Resource(teamApps).Namespace(ns).Create(h.t.Context(), u, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// createByHand makes a ConfigMap as a person would, with kubectl's field
// manager.
func (h *harness) createByHand(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	h.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: data}
	got, err := h.cs.CoreV1().ConfigMaps(ns).Create(h.t.Context(), cm, metav1.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		h.t.Fatal(err)
	}
	return got
}

// TestExternalRefWaits: a parent whose external ConfigMap does not exist
// waits — Reconciling, the reason and the object named, not Stalled — and
// the child that reads it is not written, while the child that does not
// is. Created by hand, the next pass writes the child with its values;
// the pass after writes nothing; a change of the external object reaches
// the child in the next pass. The external objects are never written,
// and outlive the parent.
func TestExternalRefWaits(t *testing.T) {
	ns := "external-waits"
	h := externalHarness(t, ns)
	h.createTeamApp(ns, "checkout", "payments")

	h.sync()
	if _, err := h.get(configMaps, ns, "checkout-settings"); !apierrors.IsNotFound(err) {
		t.Errorf("checkout-settings: %v, want not written while platform-settings does not exist", err)
	}
	h.mustGet(serviceAccounts, ns, "checkout")
	parent := h.mustGet(teamApps, ns, "checkout")
	if got := fixture.StatusReason(parent, "Reconciling"); got != "True/WaitingForPlatform" {
		t.Errorf("Reconciling = %q, want True/WaitingForPlatform: %v", got, parent.Object["status"])
	}
	msg, _ := condition(t, parent, "Reconciling")["message"].(string)
	if want := "v1 ConfigMap " + ns + "/platform-settings does not exist"; !strings.Contains(msg, want) {
		t.Errorf("Reconciling message %q does not say %q", msg, want)
	}
	if got := fixture.StatusReason(parent, "Stalled"); strings.HasPrefix(got, "True") {
		t.Errorf("Stalled = %q: waiting is not stalling", got)
	}

	h.createByHand(ns, "platform-settings", nil, map[string]string{"region": "eu-west-1"})
	team := h.createByHand(ns, "pay-db", map[string]string{"team": "payments"}, nil)
	h.createByHand(ns, "ads-db", map[string]string{"team": "ads"}, nil)

	h.sync()
	settings := h.mustGet(configMaps, ns, "checkout-settings")
	if data, _, _ := unstructured.NestedStringMap(settings.Object, "data"); data["region"] != "eu-west-1" || data["teams"] != "1" {
		t.Errorf("checkout-settings data = %v, want region eu-west-1 read from platform-settings, 1 team ConfigMap", data)
	}
	parent = h.mustGet(teamApps, ns, "checkout")
	if st, _ := parent.Object["status"].(map[string]any); st["region"] != "eu-west-1" || st["teamConfigs"] != int64(1) {
		t.Errorf("status = %v, want region eu-west-1 and teamConfigs 1 (pay-db)", st)
	}

	h.log.reset()
	h.sync()
	if w := writes(h.log.reset()); len(w) != 0 {
		t.Errorf("the pass after converging wrote: %v", w)
	}

	if _, err := h.cs.CoreV1().ConfigMaps(ns).Update(t.Context(), withData(h.getConfigMap(ns, "platform-settings"), "region", "us-east-2"),
		metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	platform := h.getConfigMap(ns, "platform-settings")
	h.sync()
	if v, _, _ := unstructured.NestedString(h.mustGet(configMaps, ns, "checkout-settings").Object, "data", "region"); v != "us-east-2" {
		t.Errorf("checkout-settings region = %q after the external object changed, want us-east-2", v)
	}

	h.log.reset()
	h.deleteTeamApp(ns, "checkout")
	h.sync()
	for _, r := range h.log.reset() {
		if !strings.HasPrefix(r, "GET ") && (strings.Contains(r, "/platform-settings") || strings.Contains(r, "/pay-db")) {
			t.Errorf("a write to an external object: %s", r)
		}
	}
	for _, want := range []*corev1.ConfigMap{platform, team} {
		got := h.getConfigMap(ns, want.Name)
		if got.ResourceVersion != want.ResourceVersion {
			t.Errorf("%s: resourceVersion %s, want %s: resyncd wrote it", want.Name, got.ResourceVersion, want.ResourceVersion)
		}
		for _, m := range got.ManagedFields {
			if m.Manager == "resyncd" {
				t.Errorf("%s has fields of resyncd's field manager: %+v", want.Name, m)
			}
		}
		if got.Labels[desired.LabelManagedBy] != "" || len(got.OwnerReferences) > 0 {
			t.Errorf("%s stamped: labels %v, ownerReferences %v", want.Name, got.Labels, got.OwnerReferences)
		}
	}
}

// TestExternalRefOneList: parents that read the same external kind in
// the same namespace cost one LIST of it in a pass, not one read each.
func TestExternalRefOneList(t *testing.T) {
	ns := "external-one-list"
	h := externalHarness(t, ns)
	h.createByHand(ns, "platform-settings", nil, map[string]string{"region": "eu-west-1"})
	for _, name := range []string{"a", "b", "c", "d"} {
		h.createTeamApp(ns, name, "team-"+name)
		h.createByHand(ns, "db-"+name, map[string]string{"team": "team-" + name}, nil)
	}
	for pass := 1; pass <= 2; pass++ {
		h.log.reset()
		rep := h.sync()
		var lists []string
		for _, r := range h.log.reset() {
			if strings.HasPrefix(r, "GET /api/v1/namespaces/"+ns+"/configmaps?") && !strings.Contains(r, "labelSelector") && !strings.Contains(r, "continue=") {
				lists = append(lists, r)
			}
		}
		if len(lists) != 1 || rep.ExternalLists != 1 {
			t.Errorf("pass %d: %d LISTs of the namespace's ConfigMaps, ExternalLists %d; want 1 for 4 parents: %v", pass, len(lists), rep.ExternalLists, lists)
		}
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		got, _, _ := unstructured.NestedInt64(h.mustGet(teamApps, ns, name).Object, "status", "teamConfigs")
		if got != 1 {
			t.Errorf("%s teamConfigs = %d, want 1: db-%s, its own team's only", name, got, name)
		}
	}
	if rep := h.sync(); slices.Contains([]int{rep.Created, rep.Updated, rep.Deleted}, 1) {
		t.Errorf("a pass after convergence wrote children: %+v", rep)
	}
}

func (h *harness) getConfigMap(ns, name string) *corev1.ConfigMap {
	h.t.Helper()
	cm, err := h.cs.CoreV1().ConfigMaps(ns).Get(h.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return cm
}

func (h *harness) deleteTeamApp(ns, name string) {
	h.t.Helper()
	if err := h.dyn.Resource(teamApps).Namespace(ns).Delete(h.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func withData(cm *corev1.ConfigMap, k, v string) *corev1.ConfigMap {
	cm.Data[k] = v
	return cm
}

// forbiddenExternal is a harness whose parent, TeamApp a in ns, reads the
// ConfigMap platform-settings in platformNS through a graph that names
// platformNS, as user, who may read Secrets there and no ConfigMap.
func forbiddenExternal(t *testing.T, ns, platformNS, user string) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "graph.yaml")
	if err := os.WriteFile(path, []byte(`
apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: forbidden}
spec:
  resources:
    - id: platform
      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: platform-settings, namespace: `+platformNS+`}}
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}-settings"}
        data: {region: "${platform.data.region}"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := externalHarnessWith(t, ns, path)
	h.namespace(platformNS)
	h.createByHand(platformNS, "platform-settings", nil, map[string]string{"region": "eu-west-1"})
	h.createTeamApp(ns, "a", "payments")
	all := []string{"get", "list", "create", "patch", "delete"}
	h.grant(ns, user, []rbacv1.PolicyRule{
		{APIGroups: []string{"kro.run"}, Resources: []string{"teamapps"}, Verbs: []string{"list"}},
		{APIGroups: []string{"kro.run"}, Resources: []string{"teamapps/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
	})
	h.grant(platformNS, user, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}})
	h.waitAllowed(ns, user, "patch", "kro.run", "teamapps", "status")
	h.recordEvents()
	h.impersonate(user)
	return h
}

// TestExternalRefForbidden: where resyncd may not LIST the external kind
// in the namespace a graph reads it from, the parent is Stalled with the
// reason and the server's refusal, and nothing that reads it is written;
// granted the read, the next pass proceeds.
func TestExternalRefForbidden(t *testing.T) {
	ns, platformNS := "external-403", "external-403-platform"
	const user = "resyncd-external"
	h := forbiddenExternal(t, ns, platformNS, user)

	rep := h.sync()
	if rep.Stalled != 1 {
		t.Errorf("stalled = %d, want 1", rep.Stalled)
	}
	s := condition(t, h.mustGet(teamApps, ns, "a"), ConditionStalled)
	if msg, _ := s["message"].(string); s["status"] != "True" || s["reason"] != ReasonExternalUnreadable || !strings.Contains(msg, "forbidden") ||
		!strings.Contains(msg, "v1 ConfigMap "+platformNS+"/platform-settings") {
		t.Errorf("Stalled = %v, want True/%s naming the object and the refusal", s, ReasonExternalUnreadable)
	}
	if _, err := h.get(configMaps, ns, "a-settings"); !apierrors.IsNotFound(err) {
		t.Errorf("a-settings: %v, want not written", err)
	}

	h.grant(platformNS, user, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}})
	h.waitAllowed(platformNS, user, "list", "", "configmaps", "")
	h.sync()
	if v, _, _ := unstructured.NestedString(h.mustGet(configMaps, ns, "a-settings").Object, "data", "region"); v != "eu-west-1" {
		t.Errorf("a-settings region = %q once the read is granted, want eu-west-1", v)
	}
	if got := fixture.StatusReason(h.mustGet(teamApps, ns, "a"), ConditionStalled); strings.HasPrefix(got, "True") {
		t.Errorf("Stalled = %q once the read is granted", got)
	}
}

// waitAllowed waits until the API server's authorizer lets user make the
// request.
func (h *harness) waitAllowed(ns, user, verb, group, resource, sub string) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub}}}
		got, err := h.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, err
	})
	if err != nil {
		h.t.Fatalf("RBAC for %s not in force: %v", user, err)
	}
}

// TestExternalRefNotServed: an external kind the API server does not
// serve stalls the parents that read it, naming the kind; a parent whose
// includeWhen leaves the reference out proceeds in the same pass.
func TestExternalRefNotServed(t *testing.T) {
	ns := "external-404"
	path := filepath.Join(t.TempDir(), "graph.yaml")
	if err := os.WriteFile(path, []byte(`
apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: not-served}
spec:
  resources:
    - id: widget
      includeWhen: ["${schema.spec.team == 'widgets'}"]
      externalRef: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}
    - id: account
      template: {apiVersion: v1, kind: ServiceAccount, metadata: {name: "${schema.metadata.name}"}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := externalHarnessTyped(t, ns, path, false)
	h.createTeamApp(ns, "reads", "widgets")
	h.createTeamApp(ns, "skips", "payments")
	rep := h.sync()
	if rep.Stalled != 1 {
		t.Errorf("stalled = %d, want 1", rep.Stalled)
	}
	s := condition(t, h.mustGet(teamApps, ns, "reads"), ConditionStalled)
	if msg, _ := s["message"].(string); s["reason"] != ReasonExternalUnreadable || !strings.Contains(msg, "does not serve example.com/v1 Widget") {
		t.Errorf("Stalled = %v, want %s naming the kind not served", s, ReasonExternalUnreadable)
	}
	if _, err := h.get(serviceAccounts, ns, "reads"); !apierrors.IsNotFound(err) {
		t.Errorf("ServiceAccount reads: %v, want none written for a stalled parent", err)
	}
	h.mustGet(serviceAccounts, ns, "skips")
}

// TestExternalRefForbiddenWhileServerWarmsUp: a 403 on an external LIST
// while the API server says it is not ready, or in the pass after one that
// failed, is the RBAC authorizer warming up: the parent is not Stalled and
// gets no Event; what reads the reference waits, not written, and the
// next pass LISTs again. Once the server is ready and answered the pass
// before, the same 403 stalls the parent with ExternalUnreadable and one
// Event.
func TestExternalRefForbiddenWhileServerWarmsUp(t *testing.T) {
	ns, platformNS := "external-warming", "external-warming-platform"
	h := forbiddenExternal(t, ns, platformNS, "resyncd-external-warming")

	for _, tc := range []struct {
		name   string
		warmUp func(e *Engine)
	}{
		{"readyz refuses", func(e *Engine) {
			e.ready = func(context.Context) error { return errors.New("[-]poststarthook/rbac/bootstrap-roles failed") }
		}},
		{"the pass before failed", func(e *Engine) { e.failing[e.resources[0]] = true }}, // what a failed pass leaves
	} {
		ready := h.engine.ready
		tc.warmUp(h.engine)
		h.log.reset()
		rep := h.sync()
		h.engine.ready = ready
		if rep.Stalled != 0 || rep.ExternalLists != 1 {
			t.Errorf("%s: stalled %d, external LISTs %d; want 0, 1", tc.name, rep.Stalled, rep.ExternalLists)
		}
		if got := requestsIn(h.log.reset(), platformNS); len(got) != 1 || !strings.HasPrefix(got[0], "GET /api/v1/namespaces/"+platformNS+"/configmaps?") {
			t.Errorf("%s: requests to %s %v, want its ConfigMaps LISTed once", tc.name, platformNS, got)
		}
		parent := h.mustGet(teamApps, ns, "a")
		if got := fixture.StatusReason(parent, ConditionStalled); strings.HasPrefix(got, "True") {
			t.Errorf("%s: Stalled = %q during the warm-up", tc.name, got)
		}
		if got := fixture.StatusReason(parent, "Reconciling"); got != "True/WaitingForPlatform" {
			t.Errorf("%s: Reconciling = %q, want True/WaitingForPlatform", tc.name, got)
		}
		if _, err := h.get(configMaps, ns, "a-settings"); !apierrors.IsNotFound(err) {
			t.Errorf("%s: a-settings: %v, want not written before platform-settings is read", tc.name, err)
		}
	}
	rep := h.sync()
	if rep.Stalled != 1 {
		t.Errorf("server ready: stalled %d, want 1", rep.Stalled)
	}
	if s := condition(t, h.mustGet(teamApps, ns, "a"), ConditionStalled); s["status"] != "True" || s["reason"] != ReasonExternalUnreadable {
		t.Errorf("Stalled = %v once the server is ready, want True/%s", s, ReasonExternalUnreadable)
	}
	want := map[string]int{"a/" + ReasonExternalUnreadable: 1}
	if got := fixture.WarningEvents(t, h.cs, ns, "", want); !maps.Equal(got, want) {
		t.Errorf("Warning Events %v, want %v: none during the warm-up", got, want)
	}
}

// TestExternalRefNamespaceNotAllowed: a parent whose spec gives an
// external reference another namespace than its own reads nothing there —
// not one request — and is Stalled with NamespaceNotAllowed, naming the
// reference and the namespace, and one Event; a parent whose spec gives
// its own namespace proceeds in the same pass. With the namespace in
// externalNamespaces, the next pass reads it and writes the child with
// its value.
func TestExternalRefNamespaceNotAllowed(t *testing.T) {
	ns, other := "external-chosen", "external-chosen-bank"
	path := filepath.Join(t.TempDir(), "graph.yaml")
	if err := os.WriteFile(path, []byte(`
apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: chosen}
spec:
  resources:
    - id: platform
      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: platform-settings, namespace: "${schema.spec.team}"}}
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}-settings"}
        data: {region: "${platform.data.region}"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := externalHarnessWith(t, ns, path)
	h.namespace(other)
	h.recordEvents()
	h.createByHand(ns, "platform-settings", nil, map[string]string{"region": "eu-west-1"})
	h.createByHand(other, "platform-settings", nil, map[string]string{"region": "the-bank's"})
	h.createTeamApp(ns, "tenant", other)
	h.createTeamApp(ns, "own", ns)

	for pass := 1; pass <= 2; pass++ {
		h.log.reset()
		rep := h.sync()
		if got := requestsIn(h.log.reset(), other); len(got) != 0 || rep.ExternalLists != 1 {
			t.Errorf("pass %d: requests to %s %v, external LISTs %d; want none there, 1 of %s", pass, other, got, rep.ExternalLists, ns)
		}
	}
	s := condition(t, h.mustGet(teamApps, ns, "tenant"), ConditionStalled)
	if msg := str(s["message"]); s["status"] != "True" || s["reason"] != ReasonNamespaceNotAllowed ||
		!strings.Contains(msg, "platform (v1 ConfigMap "+other+"/platform-settings) is not read") || !strings.Contains(msg, "externalNamespaces") {
		t.Errorf("tenant Stalled = %v, want True/%s naming the reference and its namespace", s, ReasonNamespaceNotAllowed)
	}
	if _, err := h.get(configMaps, ns, "tenant-settings"); !apierrors.IsNotFound(err) {
		t.Errorf("tenant-settings: %v, want not written", err)
	}
	if v, _, _ := unstructured.NestedString(h.mustGet(configMaps, ns, "own-settings").Object, "data", "region"); v != "eu-west-1" {
		t.Errorf("own-settings region = %q, want eu-west-1 from its own namespace", v)
	}
	want := map[string]int{"tenant/" + ReasonNamespaceNotAllowed: 1}
	if got := fixture.WarningEvents(t, h.cs, ns, "", want); !maps.Equal(got, want) {
		t.Errorf("Warning Events %v, want %v", got, want)
	}

	h.engine.resources[0].cfg.ExternalNamespaces = []string{"external-chosen-*"}
	h.sync()
	if v, _, _ := unstructured.NestedString(h.mustGet(configMaps, ns, "tenant-settings").Object, "data", "region"); v != "the-bank's" {
		t.Errorf("tenant-settings region = %q once %s is allowed, want the-bank's", v, other)
	}
	if got := fixture.StatusReason(h.mustGet(teamApps, ns, "tenant"), ConditionStalled); strings.HasPrefix(got, "True") {
		t.Errorf("tenant Stalled = %q once the namespace is allowed", got)
	}
}
