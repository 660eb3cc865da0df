package engine

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestLongParentNames: a parent name of 63 characters, the longest a
// Service may have, converges with valid labels; one of 64 is Stalled as
// InvalidSpec and nothing is written for it.
func TestLongParentNames(t *testing.T) {
	t.Parallel()
	ns := "long-names"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	core, logs := observer.New(zapcore.InfoLevel)
	h.engine.log = zap.New(core)
	longest, tooLong := "a"+strings.Repeat("b", 62), "a"+strings.Repeat("b", 63)
	h.createParent(ns, longest, map[string]any{"image": "nginx", "port": int64(8080)})
	h.createParent(ns, tooLong, map[string]any{"image": "nginx", "port": int64(8080)})
	rep := h.sync()
	if rep.Created != 2 || rep.Failed != 0 || rep.Stalled != 1 {
		t.Errorf("created %d, failed %d, stalled %d; want 2, 0, 1", rep.Created, rep.Failed, rep.Stalled)
	}
	if l := h.mustGet(services, ns, longest).GetLabels(); l["resyncd.io/parent"] != longest {
		t.Errorf("Service labels %v", l)
	}
	s := condition(t, h.mustGet(httpServices, ns, tooLong), "Stalled")
	if s["reason"] != "InvalidSpec" || !strings.Contains(str(s["message"]), "metadata.name") {
		t.Errorf("64-character parent Stalled = %v, want InvalidSpec naming metadata.name", s)
	}
	if rep := h.sync(); rep.Writes() != 0 {
		t.Errorf("second pass made %d writes, want 0", rep.Writes())
	}
	if n := logs.FilterMessage("Parent stalled").Len(); n != 1 {
		t.Errorf("%d Parent stalled lines over two passes, want 1", n)
	}
}

// countingEvents counts the Events recorded, and records none.
type countingEvents struct{ n atomic.Int64 }

func (c *countingEvents) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {
	c.n.Add(1)
}

var _ events.EventRecorder = (*countingEvents)(nil)

// TestNamespaceBeingDeleted: in a namespace being deleted (no controller
// finishes it here, so it stays so) the API server refuses new objects.
// Each pass makes one refused write for the parent, the parent is
// Stalled, and one Event is recorded in all, not one a pass.
func TestNamespaceBeingDeleted(t *testing.T) {
	t.Parallel()
	ns := "terminating"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	// A finalizer of its own keeps the namespace in Terminating even if a
	// namespace controller ran.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hold", Namespace: ns, Finalizers: []string{"test.resyncd.io/hold"}}}
	if _, err := h.cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})
	if err := h.cs.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's admission learns of the deletion from its cache, a
	// moment later: wait until it refuses a new object there.
	fixture.Eventually(t, "the namespace refuses new objects", 30*time.Second, func() bool {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns}}
		_, err := h.cs.CoreV1().ConfigMaps(ns).Create(t.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err)
	})
	rec := &countingEvents{}
	h.engine.events = rec
	for pass := 1; pass <= 3; pass++ {
		h.log.reset()
		rep := h.sync()
		if w := childWrites(h.log.reset()); len(w) != 1 || rep.Stalled != 1 || rep.Transient != 0 {
			t.Errorf("pass %d: child writes %v, stalled %d, transient %d; want one refused write, 1, 0", pass, w, rep.Stalled, rep.Transient)
		}
	}
	s := condition(t, h.mustGet(httpServices, ns, "web"), "Stalled")
	if s["status"] != "True" || !strings.Contains(str(s["message"]), "being terminated") {
		t.Errorf("Stalled = %v, want True with the server's message", s)
	}
	if n := rec.n.Load(); n != 1 {
		t.Errorf("%d Events recorded over three passes, want 1", n)
	}
}

// TestStopDuringList: a stop (SIGTERM cancels the pass's context) while
// the pass LISTs ends the pass without counting it failed: one "Pass
// stopped" line, no "Pass failed".
func TestStopDuringList(t *testing.T) {
	t.Parallel()
	ns := "stopped"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})
	core, logs := observer.New(zapcore.InfoLevel)
	h.engine.log = zap.New(core)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h.log.next = &beforeTransport{next: h.log.next, hook: cancel,
		match: func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/httpservices") }}
	if _, err := h.engine.SyncOnce(ctx); err == nil {
		t.Fatal("the stopped pass reported no error")
	}
	failed := testutil.ToFloat64(h.engine.metrics.passes.WithLabelValues("local", hsvcResource, "error"))
	if failed != 0 || logs.FilterMessage("Pass failed").Len() != 0 || logs.FilterMessage("Pass stopped").Len() != 1 {
		t.Errorf("passes_total{result=error} %v, %d Pass failed, %d Pass stopped lines; want 0, 0, 1",
			failed, logs.FilterMessage("Pass failed").Len(), logs.FilterMessage("Pass stopped").Len())
	}
}
