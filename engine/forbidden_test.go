package engine

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/resyncd/resyncd/internal/fixture"
)

// grant gives user the rules in namespace ns, replacing what it had.
func (h *harness) grant(ns, user string, rules []rbacv1.PolicyRule) {
	h.t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules}
	// Roles are created by an update too.
	if _, err := h.cs.RbacV1().Roles(ns).Update(h.t.Context(), role, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}
	if _, err := h.cs.RbacV1().RoleBindings(ns).Update(h.t.Context(), rb, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// waitRBAC waits until the API server's authorizer lets user list
// Deployments in ns and patch none of the resources withheld.
func (h *harness) waitRBAC(ns, user string, withheld ...string) {
	h.t.Helper()
	allowed := func(ctx context.Context, verb, group, resource, sub string) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub}}}
		got, err := h.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Allowed, nil
	}
	err := wait.PollUntilContextTimeout(h.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if ok, err := allowed(ctx, "list", "apps", "deployments", ""); !ok || err != nil {
			return false, err
		}
		for _, w := range withheld {
			resource, sub, _ := strings.Cut(w, "/")
			group := "apps"
			if resource == "httpservices" {
				group = "resyncd.io"
			}
			if ok, err := allowed(ctx, "patch", group, resource, sub); ok || err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		h.t.Fatalf("RBAC for %s not in force: %v", user, err)
	}
}

// impersonate makes the engine act as user from now on ("": as the
// test's administrator). The new engine starts with no memory of passes.
func (h *harness) impersonate(user string) {
	h.t.Helper()
	rc := rest.CopyConfig(env(h.t).Config)
	if user != "" {
		rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { h.log.next = rt; return h.log })
	h.reg = prometheus.NewRegistry()
	e, err := New(h.engine.cfg, Options{REST: rc, Renderers: h.engine.renderers, Metrics: NewMetrics(h.reg),
		Log: zaptest.NewLogger(h.t, zaptest.Level(zap.WarnLevel)), Events: h.engine.events})
	if err != nil {
		h.t.Fatal(err)
	}
	h.engine = e
}

// refusedRepair converges an HttpService web in a new namespace ns, then
// makes the engine act as user, who may not patch Deployments there, and
// changes the Deployment as another writer would: the next repair is
// refused with a 403. Events are recorded to the API server.
func refusedRepair(t *testing.T, ns, user string) *harness {
	t.Helper()
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.recordEvents()
	h.createParent(ns, "web", map[string]any{"image": "nginx:1", "port": int64(8080)})
	h.sync()
	h.grant(ns, user, fixture.Rules("deployments"))
	h.waitRBAC(ns, user, "deployments")
	h.impersonate(user)
	forceApply(t, h, "someone", ns, "web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"`+ns+`"},
		"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`)
	return h
}

// TestRefusedWriteIsNoFight: with patch on Deployments withheld, resyncd's
// repairs are refused pass after pass. That is Stalled/Forbidden with one
// Event, not another writer: no DriftRecurring. With the status write
// refused too, the Forbidden Event is still recorded, once.
func TestRefusedWriteIsNoFight(t *testing.T) {
	t.Parallel()
	ns := "refused"
	const user = "resyncd-limited"
	h := refusedRepair(t, ns, user)
	for range 4 {
		rep := h.sync()
		if rep.Failed != 1 {
			t.Errorf("failed writes = %d, want 1 (the Deployment)", rep.Failed)
		}
	}
	s := condition(t, h.mustGet(httpServices, ns, "web"), ConditionStalled)
	if s["status"] != "True" || s["reason"] != "Forbidden" {
		t.Errorf("Stalled = %v, want True/Forbidden", s)
	}

	// Now the status cannot be written either: a second parent, drifted the same way.
	h.impersonate("")
	h.createParent(ns, "api", map[string]any{"image": "nginx:1", "port": int64(8080)})
	h.sync()
	forceApply(t, h, "someone", ns, "api", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"refused"},
		"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`)
	h.grant(ns, user, fixture.Rules("deployments", "httpservices/status"))
	h.waitRBAC(ns, user, "deployments", "httpservices/status")
	h.impersonate(user)
	for range 3 {
		h.sync()
	}
	if s := condition(t, h.mustGet(httpServices, ns, "api"), ConditionStalled); s["status"] == "True" {
		t.Fatalf("the status of api was written: %v", s)
	}
	want := map[string]int{"web/Forbidden": 1, "api/Forbidden": 1}
	got := fixture.WarningEvents(t, h.cs, ns, "", want)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Warning Events %v, want %v", got, want)
			break
		}
	}
	for k := range got {
		if strings.HasSuffix(k, "/DriftRecurring") {
			t.Errorf("DriftRecurring recorded for refused repairs: %v", got)
		}
	}
}

// TestForbiddenWhileServerWarmsUp: a 403 while the API server says it is
// not ready, or in the pass after one that failed (the server just came
// back), is the RBAC authorizer warming up: transient, the parent not
// Stalled, no Event. Once the server is ready and answered the pass
// before, the same 403 is a refusal: Stalled/Forbidden.
func TestForbiddenWhileServerWarmsUp(t *testing.T) {
	t.Parallel()
	ns := "warming"
	h := refusedRepair(t, ns, "resyncd-warming")

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
		rep := h.sync()
		h.engine.ready = ready
		if rep.Failed != 1 || rep.Transient != 1 || rep.Stalled != 0 {
			t.Errorf("%s: failed %d, transient %d, stalled %d; want 1, 1, 0", tc.name, rep.Failed, rep.Transient, rep.Stalled)
		}
		if s := condition(t, h.mustGet(httpServices, ns, "web"), ConditionStalled); s["status"] == "True" {
			t.Errorf("%s: Stalled = %v during the warm-up", tc.name, s)
		}
	}
	rep := h.sync()
	if rep.Failed != 1 || rep.Transient != 0 || rep.Stalled != 1 {
		t.Errorf("server ready: failed %d, transient %d, stalled %d; want 1, 0, 1", rep.Failed, rep.Transient, rep.Stalled)
	}
	if s := condition(t, h.mustGet(httpServices, ns, "web"), ConditionStalled); s["status"] != "True" || s["reason"] != "Forbidden" {
		t.Errorf("Stalled = %v once the server is ready, want True/Forbidden", s)
	}
	want := map[string]int{"web/Forbidden": 1}
	if got := fixture.WarningEvents(t, h.cs, ns, "", want); got["web/Forbidden"] != 1 {
		t.Errorf("Warning Events %v, want one Forbidden, after the warm-up", got)
	}
}
