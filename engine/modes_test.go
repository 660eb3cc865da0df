package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/fixture"
)

// TestWarnModeAndPaused: drift is counted and shown in metrics and status,
// and no child is written.
func TestWarnModeAndPaused(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mode   config.Mode
		paused bool
		reason string
	}{
		{"warn", config.ModeWarn, false, "WarnMode"},
		{"paused", config.ModeEnforce, true, "Paused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := "mode-" + tt.name
			cfg := testConfig(ns)
			h := newHarness(t, cfg)
			h.namespace(ns)
			h.createParent(ns, "web", map[string]any{"image": "nginx:1.27", "port": int64(80)})
			h.createParent(ns, "api", map[string]any{"image": "nginx:1.27", "port": int64(80)})
			// Let the children exist first, then hold back.
			h.sync()
			if tt.paused {
				for _, name := range []string{"web", "api"} {
					p := h.mustGet(httpServices, ns, name)
					if err := unstructured.SetNestedField(p.Object, true, "spec", "paused"); err != nil {
						t.Fatal(err)
					}
					if _, err := h.dyn.Resource(httpServices).Namespace(ns).Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			h.engine.resources[0].cfg.Mode = tt.mode
			forceApply(t, h, "intruder", ns, "web", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:evil"}]}}}}`)
			if err := h.dyn.Resource(services).Namespace(ns).Delete(t.Context(), "api", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}

			gvr := "httpservices.v1alpha1.resyncd.io"
			changed := h.engine.metrics.drift.WithLabelValues("local", gvr, "Deployment", "changed")
			missing := h.engine.metrics.drift.WithLabelValues("local", gvr, "Service", "missing")
			changedBefore, missingBefore := testutil.ToFloat64(changed), testutil.ToFloat64(missing)
			h.log.reset()
			rep := h.sync()
			cw := childWrites(h.log.reset())
			if len(cw) != 0 {
				t.Errorf("child writes in %s: %v", tt.name, cw)
			}
			if rep.Drifted != 1 || rep.Missing != 1 || rep.Withheld != 2 {
				t.Errorf("drifted %d, missing %d, withheld %d; want 1, 1, 2", rep.Drifted, rep.Missing, rep.Withheld)
			}
			if img := containerImage(t, h.mustGet(deployments, ns, "web")); img != "nginx:evil" {
				t.Errorf("image %q was repaired", img)
			}
			if got := testutil.ToFloat64(changed) - changedBefore; got != 1 {
				t.Errorf("resyncd_drift_total changed grew by %g, want 1", got)
			}
			if got := testutil.ToFloat64(missing) - missingBefore; got != 1 {
				t.Errorf("resyncd_drift_total missing grew by %g, want 1", got)
			}
			for _, name := range []string{"web", "api"} {
				p := h.mustGet(httpServices, ns, name)
				if r := condition(t, p, "Ready"); r["status"] != "False" || r["reason"] != "Drifted" {
					t.Errorf("%s Ready = %v, want False/Drifted", name, r)
				}
				if r := condition(t, p, "Reconciling"); r["reason"] != tt.reason {
					t.Errorf("%s Reconciling = %v, want reason %s", name, r, tt.reason)
				}
			}
			if tt.mode == config.ModeWarn {
				// A parent gone: its children are orphans, reported and kept.
				h.createParent(ns, "gone", map[string]any{"image": "nginx:1.27", "port": int64(80)})
				h.engine.resources[0].cfg.Mode = config.ModeEnforce
				h.sync()
				h.engine.resources[0].cfg.Mode = config.ModeWarn
				if err := h.dyn.Resource(httpServices).Namespace(ns).Delete(t.Context(), "gone", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				h.log.reset()
				rep := h.sync()
				if cw := childWrites(h.log.reset()); len(cw) != 0 || rep.Orphaned != 2 {
					t.Errorf("warn mode with a parent gone: orphaned %d, child writes %v; want 2, none", rep.Orphaned, cw)
				}
				h.mustGet(deployments, ns, "gone")
			}
		})
	}
}

// TestInvalidParentStalls: a parent whose Deployment the API server
// rejects (requests above limits) is Stalled with the server's message and
// one Event across several passes; the others converge.
func TestInvalidParentStalls(t *testing.T) {
	ns := "invalid"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: h.cs.EventsV1()})
	b.StartRecordingToSink(t.Context().Done())
	h.engine.events = b.NewRecorder(scheme.Scheme, "resyncd")

	h.createParent(ns, "good-1", map[string]any{"image": "nginx", "port": int64(80)})
	h.createParent(ns, "bad", map[string]any{"image": "nginx", "port": int64(80),
		"resources": map[string]any{"requests": map[string]any{"cpu": "2"}, "limits": map[string]any{"cpu": "1"}}})
	h.createParent(ns, "good-2", map[string]any{"image": "nginx", "port": int64(80)})
	h.createParent(ns, "bad-name.v2", map[string]any{"image": "nginx", "port": int64(80)})

	var failedWrites []int
	for range 3 {
		h.log.reset()
		rep := h.sync()
		n := 0
		for _, w := range writes(h.log.reset()) {
			if strings.Contains(w, "/deployments/bad") {
				n++
			}
		}
		failedWrites = append(failedWrites, n)
		if rep.Stalled != 2 {
			t.Errorf("stalled = %d, want 2", rep.Stalled)
		}
		// bad's Service waits for its refused Deployment: blocked, not
		// withheld on purpose.
		if rep.Blocked != 1 || rep.Withheld != 0 {
			t.Errorf("blocked %d, withheld %d; want 1, 0", rep.Blocked, rep.Withheld)
		}
	}
	if failedWrites[1] > 1 || failedWrites[2] > 1 {
		t.Errorf("writes of the invalid Deployment per pass = %v, want at most 1 each", failedWrites)
	}
	for _, name := range []string{"good-1", "good-2"} {
		h.mustGet(deployments, ns, name)
		h.mustGet(services, ns, name)
		if s := condition(t, h.mustGet(httpServices, ns, name), "Stalled"); s["status"] != "False" {
			t.Errorf("%s Stalled = %v", name, s)
		}
	}
	bad := h.mustGet(httpServices, ns, "bad")
	s := condition(t, bad, "Stalled")
	if s["status"] != "True" || s["reason"] != "Invalid" || !strings.Contains(str(s["message"]), "must be less than or equal to cpu limit") {
		t.Errorf("bad Stalled = %v, want True/Invalid with the API server's message", s)
	}
	if _, err := h.get(deployments, ns, "bad-name.v2"); err == nil {
		t.Error("a child of the parent with an invalid name was created")
	}
	s = condition(t, h.mustGet(httpServices, ns, "bad-name.v2"), "Stalled")
	if s["status"] != "True" || s["reason"] != "InvalidSpec" || !strings.Contains(str(s["message"]), "metadata.name") {
		t.Errorf("bad-name.v2 Stalled = %v, want True/InvalidSpec naming metadata.name", s)
	}

	// The broadcaster writes asynchronously: wait for the Events, then check
	// that there is one per stalled parent, not one per pass.
	want := map[string]int{"bad/Invalid": 1, "bad-name.v2/InvalidSpec": 1}
	got := fixture.WarningEvents(t, h.cs, ns, "", want)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Warning Events %v, want %v", got, want)
			break
		}
	}
}

// TestStoredBeforeTheRule: a parent stored before the CRD rejected
// autoscaling without a CPU request (the rule is taken out of the CRD to
// store it, then put back) is still Stalled as InvalidSpec, naming what
// to add, and none of its children is written.
func TestStoredBeforeTheRule(t *testing.T) {
	ns := "before-rule"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	crds := h.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	setRules := func(ctx context.Context, rules []any) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := crds.Get(ctx, "httpservices.resyncd.io", metav1.GetOptions{})
			if err != nil {
				return err
			}
			path := []string{"spec", "versions"}
			versions, _, _ := unstructured.NestedSlice(crd.Object, path...)
			v := versions[0].(map[string]any)
			spec := v["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
			if rules == nil {
				delete(spec, "x-kubernetes-validations")
			} else {
				spec["x-kubernetes-validations"] = rules
			}
			if err := unstructured.SetNestedSlice(crd.Object, versions, path...); err != nil {
				return err
			}
			_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	crd, err := crds.Get(t.Context(), "httpservices.resyncd.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	rules, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-validations")
	if len(rules) == 0 {
		t.Fatal("the CRD has no validation rule on spec")
	}
	setRules(t.Context(), nil)
	t.Cleanup(func() { setRules(context.WithoutCancel(t.Context()), rules) })
	legacy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resyncd.io/v1alpha1", "kind": "HttpService",
		"metadata": map[string]any{"name": "legacy", "namespace": ns},
		"spec":     map[string]any{"image": "nginx", "port": int64(8080), "autoscaling": map[string]any{"maxReplicas": int64(3)}},
	}}
	// The API server serves the schema without the rule a moment later.
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := h.dyn.Resource(httpServices).Namespace(ns).Create(ctx, legacy, metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("store a parent without the rule: %v", err)
	}
	setRules(t.Context(), rules)
	h.log.reset()
	h.sync()
	if w := childWrites(h.log.reset()); len(w) != 0 {
		t.Errorf("child writes %v, want none", w)
	}
	s := condition(t, h.mustGet(httpServices, ns, "legacy"), "Stalled")
	if s["status"] != "True" || s["reason"] != "InvalidSpec" || !strings.Contains(str(s["message"]), "cpu") {
		t.Errorf("Stalled = %v, want True/InvalidSpec about the CPU request", s)
	}
}
