package engine

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/resyncd/resyncd/config"
)

// TestServerDriftCheck: driftCheck server dry-runs every child each pass,
// writes nothing when in sync, and repairs what another manager changed.
func TestServerDriftCheck(t *testing.T) {
	t.Parallel()
	cfg := testConfig("servercheck")
	cfg.DriftCheck = config.DriftCheckServer
	h := newHarness(t, cfg)
	h.namespace("servercheck")
	for _, name := range []string{"a", "b"} {
		h.createParent("servercheck", name, map[string]any{"image": "nginx:1.27", "port": int64(80), "replicas": int64(2)})
	}
	h.sync()

	h.log.reset()
	rep := h.sync()
	var dryRuns, real []string
	for _, w := range h.log.reset() {
		if strings.HasPrefix(w, "GET ") {
			continue
		}
		if strings.Contains(w, "dryRun=All") {
			dryRuns = append(dryRuns, w)
		} else {
			real = append(real, w)
		}
	}
	if len(dryRuns) != 4 || len(real) != 0 || rep.InSync != 4 {
		t.Errorf("steady pass: %d dry-runs, %d writes, %d in sync; want 4, 0, 4:\n%s", len(dryRuns), len(real), rep.InSync, strings.Join(real, "\n"))
	}

	forceApply(t, h, "intruder", "servercheck", "a", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":7}}`)
	h.log.reset()
	rep = h.sync()
	real = nil
	for _, w := range writes(h.log.reset()) {
		// The status write that records lastAppliedTime is expected.
		if !strings.Contains(w, "dryRun=All") && !strings.Contains(w, "/httpservices/") {
			real = append(real, w)
		}
	}
	if rep.Drifted != 1 || len(real) != 1 || !strings.Contains(real[0], "/deployments/a") {
		t.Errorf("drifted %d, child writes %v; want one write to Deployment a", rep.Drifted, real)
	}
	if r, _, _ := unstructured.NestedInt64(h.mustGet(deployments, "servercheck", "a").Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas %d, want 2 restored", r)
	}
}
