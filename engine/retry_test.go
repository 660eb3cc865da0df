package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// flakyTransport answers the first n PATCH requests with 503 itself, as an
// overloaded API server or a restarting one behind a load balancer would.
type flakyTransport struct {
	next   http.RoundTripper
	failed atomic.Int64
	n      int64
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch && f.failed.Add(1) <= f.n {
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"try again","reason":"ServiceUnavailable","code":503}`
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
	return f.next.RoundTrip(r)
}

// TestTransientErrorsRetried: writes that meet 503s are retried within the
// pass and succeed; nothing is reported failed or stalled.
func TestTransientErrorsRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("flaky"))
	h.namespace("flaky")
	h.createParent("flaky", "web", map[string]any{"image": "nginx", "port": int64(80)})
	flaky := &flakyTransport{next: h.log.next, n: 3}
	h.log.next = flaky
	rep := h.sync()
	if rep.Created != 2 || rep.Failed != 0 || rep.Stalled != 0 {
		t.Errorf("created %d, failed %d, stalled %d; want 2, 0, 0", rep.Created, rep.Failed, rep.Stalled)
	}
	if got := flaky.failed.Load(); got < 3 {
		t.Errorf("only %d PATCH requests; the 503s were not met", got)
	}
	h.mustGet(deployments, "flaky", "web")
	h.mustGet(services, "flaky", "web")
}

func TestIsTransient(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	tests := []struct {
		err  error
		want bool
	}{
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewServiceUnavailable("later"), true},
		{apierrors.NewInternalError(errors.New("boom")), true},
		{apierrors.NewConflict(gr, "web", errors.New("changed")), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), true},
		{apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", nil), false},
		{apierrors.NewForbidden(gr, "web", errors.New("rbac")), false},
		{apierrors.NewBadRequest("no"), false},
		{apierrors.NewInternalError(errors.New("etcdserver: request is too large")), false},
		{apierrors.NewRequestEntityTooLargeError("limit is 3145728"), false},
		{context.Canceled, false},
	}
	for _, tt := range tests {
		if got := isTransient(tt.err); got != tt.want {
			t.Errorf("isTransient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestTooLargeIsPermanent: a parent whose Deployment is just over etcd's
// request limit (each of 256 environment variables has a long name, which
// the Deployment's managedFields repeat) is Stalled with the server's
// message after one try a pass; nothing counts as transient, and the
// other parent converges.
func TestTooLargeIsPermanent(t *testing.T) {
	t.Parallel()
	ns := "too-large"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	var env []any
	for i := range 256 {
		env = append(env, map[string]any{"name": fmt.Sprintf("V%04d_%s", i, strings.Repeat("x", 3100)), "value": "v"})
	}
	h.createParent(ns, "huge", map[string]any{"image": "nginx", "port": int64(8080), "env": env})
	h.createParent(ns, "small", map[string]any{"image": "nginx", "port": int64(8080)})
	for pass := 1; pass <= 2; pass++ {
		h.log.reset()
		rep := h.sync()
		var tries int
		for _, w := range writes(h.log.reset()) {
			if strings.Contains(w, "/deployments/huge") {
				tries++
			}
		}
		if tries != 1 || rep.Transient != 0 || rep.Stalled != 1 {
			t.Errorf("pass %d: %d writes of the huge Deployment, %d transient, %d stalled; want 1, 0, 1", pass, tries, rep.Transient, rep.Stalled)
		}
	}
	s := condition(t, h.mustGet(httpServices, ns, "huge"), "Stalled")
	if s["status"] != "True" || s["reason"] != "RequestTooLarge" || !strings.Contains(str(s["message"]), "too large") {
		t.Errorf("Stalled = %v, want True/RequestTooLarge with the server's message", s)
	}
	h.mustGet(deployments, ns, "small")
}

// beforeTransport runs hook before it passes on the first request that
// match selects.
type beforeTransport struct {
	next   http.RoundTripper
	match  func(*http.Request) bool
	hook   func()
	called atomic.Bool
}

func (b *beforeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.match(r) && b.called.CompareAndSwap(false, true) {
		b.hook()
	}
	return b.next.RoundTrip(r)
}

// TestChildDeletedBeforeWrite: a drifted child deleted by someone between
// the pass's LIST and its repair is made again by the repair; an orphan
// deleted before resyncd's delete counts as deleted. Nothing fails.
func TestChildDeletedBeforeWrite(t *testing.T) {
	t.Parallel()
	ns := "deleted-between"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.createParent(ns, "web", map[string]any{"image": "nginx:1", "port": int64(8080)})
	h.createParent(ns, "gone", map[string]any{"image": "nginx:1", "port": int64(8080)})
	h.sync()
	forceApply(t, h, "someone", ns, "web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"deleted-between"},
		"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`)
	h.deleteParent(ns, "gone") // no garbage collector: its children are orphans
	del := func(gvr schema.GroupVersionResource, name string) func() {
		return func() {
			if err := h.dyn.Resource(gvr).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete %s %s: %v", gvr.Resource, name, err)
			}
		}
	}
	first := &beforeTransport{next: h.log.next, hook: del(deployments, "web"),
		match: func(r *http.Request) bool {
			return r.Method == http.MethodPatch && strings.HasSuffix(r.URL.Path, "/deployments/web")
		}}
	second := &beforeTransport{next: first, hook: del(services, "gone"),
		match: func(r *http.Request) bool {
			return r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/services/gone")
		}}
	h.log.next = second
	rep := h.sync()
	if !first.called.Load() || !second.called.Load() {
		t.Fatal("the writes to delete ahead of were not made")
	}
	if rep.Failed != 0 || rep.Stalled != 0 {
		t.Errorf("failed %d, stalled %d; want 0, 0", rep.Failed, rep.Stalled)
	}
	if img := containerImage(t, h.mustGet(deployments, ns, "web")); img != "nginx:1" {
		t.Errorf("Deployment web image %q after the repair, want nginx:1", img)
	}
	if _, err := h.get(services, ns, "gone"); err == nil {
		t.Error("orphan Service gone still exists")
	}
}

// TestDeleteOfRecreatedObject: an orphan re-created by someone under the
// same name between the pass's LIST and resyncd's delete is not deleted:
// the UID precondition fails with a conflict, which is not retried (one
// DELETE) and is counted as superseded, not as a deletion or a failure.
func TestDeleteOfRecreatedObject(t *testing.T) {
	t.Parallel()
	ns := "recreated-between"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.createParent(ns, "gone", map[string]any{"image": "nginx:1", "port": int64(8080)})
	h.sync()
	h.deleteParent(ns, "gone") // no garbage collector: its children are orphans
	hook := &beforeTransport{next: h.log.next, hook: func() {
		if err := h.dyn.Resource(services).Namespace(ns).Delete(t.Context(), "gone", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
		h.foreignService(ns, "gone", nil)
	}, match: func(r *http.Request) bool {
		return r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/services/gone")
	}}
	h.log.next = hook
	h.log.reset()
	rep := h.sync()
	if !hook.called.Load() {
		t.Fatal("the orphan Service was not deleted")
	}
	var deletes int
	for _, r := range requestsTo(h.log.reset(), "services", "gone") {
		if strings.HasPrefix(r, "DELETE ") {
			deletes++
		}
	}
	if deletes != 1 || rep.Superseded != 1 || rep.Deleted != 1 || rep.Failed != 0 {
		t.Errorf("DELETEs of the Service %d, superseded %d, deleted %d (the Deployment), failed %d; want 1, 1, 1, 0",
			deletes, rep.Superseded, rep.Deleted, rep.Failed)
	}
	if svc := h.mustGet(services, ns, "gone"); svc.GetLabels()["app.kubernetes.io/managed-by"] != "" {
		t.Errorf("the Service left is not the one made since: labels %v", svc.GetLabels())
	}
}
