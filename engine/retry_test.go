package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		{context.Canceled, false},
	}
	for _, tt := range tests {
		if got := isTransient(tt.err); got != tt.want {
			t.Errorf("isTransient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
