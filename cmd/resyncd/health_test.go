package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/engine"
)

// TestHealthDown: a resource whose CRD was refused makes /readyz say so,
// with the reason, while the other resource's pass counts as usual; made
// ready again, the reason is gone.
func TestHealthDown(t *testing.T) {
	cfg := &config.Config{
		Clusters: []config.Cluster{{Name: config.LocalCluster}},
		Resources: []config.Resource{
			{Group: "kro.run", Version: "v1alpha1", Resource: "bakeries", Graph: "bakery.yaml", Mode: config.ModeEnforce},
			{Group: "resyncd.io", Version: "v1alpha1", Resource: "httpservices", Renderer: "httpservice", Mode: config.ModeEnforce},
		},
	}
	h := newHealth(cfg)
	h.setLeading(true)
	h.reached(config.LocalCluster, "https://127.0.0.1")
	h.down(config.LocalCluster, 0, "config.yaml:3: resources[0]: CRD not applied: spec.loaves: would be removed")
	h.record(config.LocalCluster, 1, engine.ResourceReport{}, nil)
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		h.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	code, body := readyz()
	want := "bakeries.v1alpha1.kro.run: down: config.yaml:3: resources[0]: CRD not applied: spec.loaves: would be removed\n"
	if code != http.StatusServiceUnavailable || body != want {
		t.Errorf("/readyz: %d %q, want 503 %q", code, body, want)
	}
	h.reached(config.LocalCluster, "https://127.0.0.1")
	h.record(config.LocalCluster, 0, engine.ResourceReport{}, nil)
	if code, body := readyz(); code != http.StatusOK || !strings.HasPrefix(body, "ok") {
		t.Errorf("/readyz once the CRD is applied: %d %q", code, body)
	}
}
