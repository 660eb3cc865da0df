package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/shard"
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
	h := NewStatus(cfg)
	h.SetLeading(true)
	h.Reached(config.LocalCluster, "https://127.0.0.1")
	h.Down(config.LocalCluster, 0, "config.yaml:3: resources[0]: CRD not applied: spec.loaves: would be removed")
	h.Record(config.LocalCluster, 1, Pass{}, nil)
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		h.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	code, body := readyz()
	want := "bakeries.v1alpha1.kro.run: down: config.yaml:3: resources[0]: CRD not applied: spec.loaves: would be removed\n"
	if code != http.StatusServiceUnavailable || body != want {
		t.Errorf("/readyz: %d %q, want 503 %q", code, body, want)
	}
	h.Reached(config.LocalCluster, "https://127.0.0.1")
	h.Record(config.LocalCluster, 0, Pass{}, nil)
	if code, body := readyz(); code != http.StatusOK || !strings.HasPrefix(body, "ok") {
		t.Errorf("/readyz once the CRD is applied: %d %q", code, body)
	}
}

// TestHealthRing: a replica of a ring is ready while it holds no work in
// its home cluster, and once it does, only when its passes there succeed.
func TestHealthRing(t *testing.T) {
	cfg := &config.Config{
		Clusters:  []config.Cluster{{Name: config.LocalCluster}},
		Resources: []config.Resource{{Group: "resyncd.io", Version: "v1alpha1", Resource: "httpservices", Renderer: "httpservice", Mode: config.ModeEnforce}},
	}
	h := NewStatus(cfg)
	h.SetLeading(true)
	h.SetRing("replica-1", "resyncd-replica-1")
	if why := h.notReady(); len(why) != 0 {
		t.Errorf("not ready without work: %v", why)
	}
	layout := shard.LayoutOf([]string{"a", "b"})
	p := shard.Part{Layout: layout, Slots: 1}
	h.SetShare(config.LocalCluster, p.Slots.Len(), p.Layout.Slots(), p.String())
	if why := h.notReady(); len(why) != 1 || !strings.Contains(why[0], "no pass finished yet") {
		t.Errorf("holding half the cluster before its first pass: %v, want not ready", why)
	}
	h.Record(config.LocalCluster, 0, Pass{Parents: 1, Sharded: true}, nil)
	if why := h.notReady(); len(why) != 0 {
		t.Errorf("not ready after a pass: %v", why)
	}
	body, err := h.status()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"identity": "replica-1"`, `"slots": 1`, `"of": 2`, `"serverSelector": "server"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/statusz has no %s:\n%s", want, body)
		}
	}
}
