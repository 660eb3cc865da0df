package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
)

var webApps = schema.GroupVersionResource{Group: "example.resyncd.io", Version: "v1alpha1", Resource: "webapps"}

// newMemChain returns a memPass watching WebApps with the graph at path,
// on a memWriter that, as the API server does, gives every Service a
// clusterIP as it stores it.
func newMemChain(t *testing.T, path string, budget int) *memPass {
	t.Helper()
	g, err := graph.Load(path, graph.Options{Parent: webApps.GroupVersion().WithKind("WebApp")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	r := &cfg.Resources[0]
	r.Group, r.Version, r.Resource, r.Renderer, r.Graph = webApps.Group, webApps.Version, webApps.Resource, "", path
	cfg.Apply.MaxWritesPerPass = budget
	reg := desired.DefaultRegistry()
	reg[r.RendererKey()] = g
	p := &memPass{t: t, w: newMemWriter(cfg.FieldManager), now: memEpoch}
	ips := 0
	p.w.admit = func(u *unstructured.Unstructured) {
		if u.GetKind() == "Service" {
			if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip == "" {
				ips++
				_ = unstructured.SetNestedField(u.Object, fmt.Sprintf("10.96.0.%d", ips), "spec", "clusterIP")
			}
		}
	}
	rd := memReader{w: p.w, kinds: map[schema.GroupVersionResource]string{webApps: "WebApp"}}
	e, err := newEngine(SettingsFrom(cfg), rd, p.w, Options{Renderers: reg,
		Log: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)), Now: func() time.Time { return p.now }})
	if err != nil {
		t.Fatal(err)
	}
	p.engine = e
	return p
}

// TestFoldChain runs testdata/graphs/chain.yaml in memory: four children,
// each reading the live fields of the one before, the last the clusterIP
// the server gives the Service. From nothing one pass writes them all in
// order and the status, and the next writes nothing; with a child deleted
// by hand, one pass makes it again and rewrites what reads it; with a
// budget, the chain's writes count against it and the rest wait.
func TestFoldChain(t *testing.T) {
	settings, dep, svc, addr, status := "create-only apply ConfigMap/team/shop-settings", "create-only apply Deployment/team/shop",
		"create-only apply Service/team/shop", "create-only apply ConfigMap/team/shop-address", "status apply WebApp/team/shop"
	tests := []struct {
		name   string
		budget int
		// world runs the passes before the one compared.
		world  func(p *memPass)
		calls  []string
		booked booked
	}{
		{name: "from nothing", budget: 100,
			calls:  []string{settings, dep, svc, addr, status},
			booked: booked{Created: 4, Statuses: 1}},
		{name: "the Service deleted by hand", budget: 100,
			world: func(p *memPass) {
				p.sync()
				p.w.remove(services, "team", "shop")
			},
			calls:  []string{svc, "apply ConfigMap/team/shop-address", status},
			booked: booked{Created: 1, Updated: 1, Statuses: 1}},
		{name: "the Deployment deleted by hand", budget: 100,
			world: func(p *memPass) {
				p.sync()
				p.w.remove(deployments, "team", "shop")
			},
			// The Service, named after it, is unchanged; the address holds
			// its uid. The status, of a Deployment of the same generation,
			// is unchanged too.
			calls:  []string{dep, "apply ConfigMap/team/shop-address"},
			booked: booked{Created: 1, Updated: 1}},
		{name: "a budget of two", budget: 2,
			calls:  []string{settings, dep},
			booked: booked{Created: 2, Deferred: 2}},
		{name: "a budget of two, the pass after", budget: 2,
			world:  func(p *memPass) { p.sync() },
			calls:  []string{svc, addr},
			booked: booked{Created: 2, Deferred: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newMemChain(t, "../testdata/graphs/chain.yaml", tc.budget)
			p.w.put(webApps, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
				"metadata": map[string]any{"name": "shop", "namespace": "team"},
				"spec":     map[string]any{"image": "nginx", "replicas": int64(2)},
			}})
			if tc.world != nil {
				tc.world(p)
			}
			p.w.log()
			rep := p.sync()
			if got := writesOf(p.w.log()); !slices.Equal(got, tc.calls) {
				t.Errorf("calls:\n  %q\nwant\n  %q", got, tc.calls)
			}
			if got := bookedIn(rep); got != tc.booked {
				t.Errorf("booked %+v, want %+v", got, tc.booked)
			}
			if tc.budget < 100 {
				return
			}
			a := p.w.object(configMaps, "team", "shop-address")
			s, d := p.w.object(services, "team", "shop"), p.w.object(deployments, "team", "shop")
			ip, _, _ := unstructured.NestedString(s.Object, "spec", "clusterIP")
			data, _, _ := unstructured.NestedStringMap(a.Object, "data")
			if data["clusterIP"] != ip || data["deploymentUID"] != string(d.GetUID()) {
				t.Errorf("address holds %v, want the Service's clusterIP %s and the Deployment's uid %s", data, ip, d.GetUID())
			}
			if got := writesOf(p.w.log()); len(p.syncCalls()) != 0 {
				t.Errorf("the pass after the converged one wrote %q", got)
			}
		})
	}
}

// syncCalls runs a pass and returns the writes it made.
func (p *memPass) syncCalls() []string {
	p.w.log()
	p.sync()
	return writesOf(p.w.log())
}

// writesOf is calls without the reads.
func writesOf(calls []string) []string {
	return slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return strings.HasPrefix(c, "get ") })
}
