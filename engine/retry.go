package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// maxLoggedErrors bounds the write errors logged per pass; the rest are
// counted in the pass line and the metrics.
const maxLoggedErrors = 5

// transientBackoff retries a write that failed for a passing reason within
// the pass: about 3 s in all, then the write waits for the next pass.
var transientBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 5, Cap: 2 * time.Second}

// warmth caches, for one pass, whether the API server may still be
// warming up: asked once, at the first 403.
type warmth struct {
	once    sync.Once
	warming bool
}

// warmingUp says whether the API server may still be warming up: the
// pass before failed (cameBack: the server was away, or restarting), or
// the server says it is not ready. Until the RBAC authorizer has loaded
// the roles and bindings, it refuses requests it allows moments later;
// such a 403 is transient, not a reason to stall a parent.
func (w *warmth) warmingUp(ctx context.Context, e *Engine, cameBack bool) bool {
	w.once.Do(func() {
		if cameBack {
			w.warming = true
			return
		}
		if e.ready != nil {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			// Where /readyz itself is refused (a cluster without the
			// default public-info-viewer binding), readiness is unknown and
			// a 403 counts as it always does.
			err := e.ready(ctx)
			w.warming = err != nil && !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err)
		}
	})
	return w.warming
}

// warmingUp is warmth.warmingUp for the pass's writes.
func (r *run) warmingUp() bool { return r.warm.warmingUp(r.inFlight, r.e, r.cameBack) }

// transient says whether err, met by a write of this pass, may pass: as
// isTransient says, or a 403 while the server warms up.
func (r *run) transient(err error) bool {
	return isTransient(err) || (apierrors.IsForbidden(err) && r.warmingUp())
}

// lastPassFailed says whether the last pass over rs failed: the API
// server may have just come back.
func (e *Engine) lastPassFailed(rs *resourceState) bool {
	e.failingMu.Lock()
	defer e.failingMu.Unlock()
	return e.failing[rs]
}

// paced makes one write: each try waits for the write limiter, and the
// errors retriable says may pass are retried with capped backoff.
func (e *Engine) paced(ctx context.Context, retriable func(error) bool, write func() error) error {
	return retry.OnError(transientBackoff, retriable, func() error {
		if err := e.limiter.Wait(ctx); err != nil {
			return err
		}
		return write()
	})
}

// isTransient says whether err may pass if the write is tried again.
func isTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if tooLarge(err) {
			return false
		}
		return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
			apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err) ||
			apierrors.IsUnexpectedServerError(err) || status.Status().Code >= 500
	}
	// Not an answer from the server: the connection was refused, reset or
	// cut, or timed out. The server may be back on the next try.
	return true
}

// tooLarge says whether the server refused a write because the object is
// too large to store: etcd's "request is too large", which the API server
// returns as a 500, or the API server's own 413. Trying again cannot help.
func tooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) ||
		(apierrors.IsInternalError(err) && strings.Contains(apiMessage(err), "request is too large"))
}

func failureReason(err error) string {
	if tooLarge(err) {
		return "RequestTooLarge"
	}
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return string(r)
	}
	return "WriteFailed"
}

func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
