package desired

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestStatusReadiness: HTTPService's verdict on its children, from the
// Deployment's status as LISTed.
func TestStatusReadiness(t *testing.T) {
	spec := map[string]any{"image": "nginx", "port": int64(8080), "replicas": int64(2)}
	available := map[string]any{"observedGeneration": int64(7), "replicas": int64(2), "updatedReplicas": int64(2),
		"readyReplicas": int64(2), "availableReplicas": int64(2)}
	deployment := func(generation int64, status map[string]any) []Child {
		return []Child{{Kind: "Deployment", Name: "web", Generation: generation, Status: status}}
	}
	tests := []struct {
		name     string
		spec     map[string]any
		children []Child
		want     Readiness
	}{
		{"available", spec, deployment(7, available), Readiness{Ready: true, Reason: "Available", Message: "2 of 2 replicas ready"}},
		{"no controller", spec, deployment(8, available), Readiness{Reason: "WaitingForController"}},
		{"rolling out", spec, deployment(7, map[string]any{"observedGeneration": int64(7), "replicas": int64(3),
			"updatedReplicas": int64(1), "readyReplicas": int64(2), "availableReplicas": int64(2)}), Readiness{Reason: "RollingOut"}},
		{"missing", spec, nil, Readiness{Reason: "DeploymentMissing", Message: "Deployment shop/web does not exist yet"}},
		{"autoscaled counts what the autoscaler asked", map[string]any{"image": "nginx", "port": int64(80),
			"autoscaling": map[string]any{"maxReplicas": int64(5)}},
			deployment(7, map[string]any{"observedGeneration": int64(7), "replicas": int64(4), "updatedReplicas": int64(4),
				"readyReplicas": int64(4), "availableReplicas": int64(4)}),
			Readiness{Ready: true, Reason: "Available", Message: "4 of 4 replicas ready"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := HTTPService{}.Status(fixture.HTTPService("shop", "web", tt.spec), Observation{Children: tt.children})
			if err != nil {
				t.Fatal(err)
			}
			got := st.Readiness
			if tt.want.Message == "" {
				got.Message = "" // long, for a person; the reason is what is judged
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusFields: the fields HTTPService owns; lastAppliedTime moves to
// the pass's time only when the pass changed a child.
func TestStatusFields(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	spec := map[string]any{"image": "nginx", "port": int64(8080), "service": map[string]any{"port": int64(80)}}
	dep := []Child{{Kind: "Deployment", Name: "web", Status: map[string]any{"replicas": int64(3), "readyReplicas": int64(1)}}}
	parent := fixture.HTTPService("shop", "web", spec)
	first, err := HTTPService{}.Status(parent, Observation{Now: t0, Applied: true, Children: dep})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"replicas": int64(3), "readyReplicas": int64(1), "url": "http://web.shop.svc:80",
		"lastAppliedTime": "2026-11-30T10:00:00Z"}
	if diff := cmp.Diff(want, first.Fields); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}

	parent.Object["status"] = first.Fields
	later, err := HTTPService{}.Status(parent, Observation{Now: t0.Add(time.Hour), Children: dep})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first.Fields, later.Fields); diff != "" {
		t.Errorf("a pass that changed nothing moved the fields (-first +later):\n%s", diff)
	}
}
