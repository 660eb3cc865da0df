package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestFold: what a pass books from the outcome of each write — created,
// updated, no-op, superseded, failed for good or for a passing reason,
// taken, withheld — in its report and in the status it writes, what the
// store holds after it, and what the pass after it writes.
func TestFold(t *testing.T) {
	t.Parallel()
	web := map[string]any{"image": "nginx", "port": int64(8080)}
	createD, createS, status := "create-only apply Deployment/shop/web", "create-only apply Service/shop/web", "status apply HttpService/shop/web"
	converge := func(p *memPass) {
		p.parent("shop", "web", web)
		p.sync()
	}
	tests := []struct {
		name string
		// world stores the objects and runs the passes before the one
		// compared, and makes its calls fail.
		world  func(t *testing.T, p *memPass)
		calls  []string
		booked booked
		// conditions are the parent's Ready, Reconciling and Stalled after
		// the pass.
		conditions [3]string
		// check looks at the store after the pass.
		check func(t *testing.T, p *memPass)
		// next are the calls of the pass after.
		next []string
	}{
		{name: "created",
			world:      func(_ *testing.T, p *memPass) { p.parent("shop", "web", web) },
			calls:      []string{createD, createS, status},
			booked:     booked{Created: 2, Statuses: 1},
			conditions: [3]string{"False/WaitingForController", "True/WaitingForController", "False/NoError"},
			check: func(t *testing.T, p *memPass) {
				d := p.w.object(deployments, "shop", "web")
				if d == nil || d.GetUID() == "" || len(d.GetManagedFields()) != 1 || d.GetManagedFields()[0].Manager != "resyncd" {
					t.Errorf("Deployment stored without a uid or resyncd's managedFields: %v", d)
				}
			}},
		{name: "updated: another writer's change put back",
			world: func(t *testing.T, p *memPass) {
				converge(p)
				setImage(t, p.w, "shop", "web", "nginx:evil")
			},
			// The Deployment's generation, which the status names, changed.
			calls:      []string{"apply Deployment/shop/web", status},
			booked:     booked{Updated: 1, Statuses: 1},
			conditions: [3]string{"False/WaitingForController", "True/WaitingForController", "False/NoError"},
			check: func(t *testing.T, p *memPass) {
				if img := image(p.w.object(deployments, "shop", "web")); img != "nginx" {
					t.Errorf("image %q after the repair, want nginx", img)
				}
			}},
		{name: "no-op: the server finds nothing to change, and the next pass does not ask again",
			world: func(_ *testing.T, p *memPass) {
				// A mutating webhook points every image at a mirror: what
				// resyncd's field manager owns reads back differently from
				// what it applies, and applying it again changes nothing.
				p.w.admit = func(u *unstructured.Unstructured) {
					if u.GetKind() == "Deployment" {
						cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
						if img := cs[0].(map[string]any)["image"].(string); !strings.HasPrefix(img, "mirror.example/") {
							cs[0].(map[string]any)["image"] = "mirror.example/" + img
						}
						_ = unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers")
					}
				}
				converge(p)
			},
			calls:      []string{"apply Deployment/shop/web"},
			booked:     booked{NoOps: 1},
			conditions: [3]string{"False/WaitingForController", "True/WaitingForController", "False/NoError"},
			check: func(t *testing.T, p *memPass) {
				if rv := p.w.object(deployments, "shop", "web").GetResourceVersion(); rv != "2" {
					t.Errorf("resourceVersion %s after a no-op, want 2, as created", rv)
				}
			}},
		{name: "superseded: re-created since it was read, so the UID precondition keeps it",
			world: func(t *testing.T, p *memPass) {
				converge(p)
				p.w.remove(httpServices, "shop", "web") // its children are orphans now
				p.w.before = func(c memCall) {
					if c.target() == "delete Service/shop/web" {
						p.w.before = nil
						s := p.w.object(services, "shop", "web")
						p.w.remove(services, "shop", "web")
						p.w.put(services, s)
					}
				}
			},
			calls:      []string{"delete Service/shop/web: Conflict", "delete Deployment/shop/web"},
			booked:     booked{Deleted: 1, Superseded: 1},
			conditions: [3]string{"", "", ""},
			check: func(t *testing.T, p *memPass) {
				if s := p.w.object(services, "shop", "web"); s == nil || s.GetUID() == types.UID("mem-uid-3") {
					t.Errorf("the re-created Service is gone or not the new one: %v", s)
				}
			},
			// The new object is an orphan too, and the next pass judges it afresh.
			next: []string{"delete Service/shop/web"}},
		{name: "failed for good: a 422 stalls the parent and blocks its other writes",
			world: func(_ *testing.T, p *memPass) {
				p.parent("shop", "web", web)
				p.w.fail("create-only apply", "Deployment/shop/web", invalid("web"))
			},
			calls:      []string{createD + ": Invalid", status},
			booked:     booked{Failed: 1, Blocked: 1, Statuses: 1, Stalled: 1},
			conditions: [3]string{"False/Stalled", "False/Stalled", "True/Invalid"},
			check: func(t *testing.T, p *memPass) {
				if p.w.object(services, "shop", "web") != nil {
					t.Error("the Service was written after the Deployment was refused")
				}
				msg := stalledMessage(p.w.object(httpServices, "shop", "web"))
				if !strings.Contains(msg, "create Deployment/shop/web") || !strings.Contains(msg, "spec.replicas") {
					t.Errorf("Stalled message %q does not name the write and the field", msg)
				}
			},
			next: []string{createD, createS, status}},
		{name: "transient: a 429 and a 500 retried within the pass",
			world: func(_ *testing.T, p *memPass) {
				p.parent("shop", "web", web)
				p.w.fail("create-only apply", "Deployment/shop/web", apierrors.NewTooManyRequests("slow down", 0), apierrors.NewInternalError(errors.New("etcd leader changed")))
			},
			calls:      []string{createD + ": TooManyRequests", createD + ": InternalError", createD, createS, status},
			booked:     booked{Created: 2, Statuses: 1},
			conditions: [3]string{"False/WaitingForController", "True/WaitingForController", "False/NoError"}},
		{name: "transient past the retries: pending, not stalled",
			world: func(_ *testing.T, p *memPass) {
				p.parent("shop", "web", web)
				unavailable := apierrors.NewServiceUnavailable("later")
				p.w.fail("create-only apply", "Deployment/shop/web", unavailable, unavailable, unavailable, unavailable, unavailable)
			},
			calls: []string{createD + ": ServiceUnavailable", createD + ": ServiceUnavailable", createD + ": ServiceUnavailable",
				createD + ": ServiceUnavailable", createD + ": ServiceUnavailable", createS, status},
			booked:     booked{Created: 1, Statuses: 1, Failed: 1, Transient: 1},
			conditions: [3]string{"False/WritesPending", "True/WritesPending", "False/NoError"},
			next:       []string{createD, status}},
		{name: "taken: a create-only apply finds the name someone else's",
			world: func(_ *testing.T, p *memPass) {
				p.parent("shop", "web", web)
				p.w.put(services, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
					"metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": map[string]any{"type": "ExternalName", "externalName": "example.com"}}})
			},
			calls:      []string{createD, createS + ": Conflict", "get Service/shop/web", status},
			booked:     booked{Created: 1, Statuses: 1, Stalled: 1},
			conditions: [3]string{"False/Stalled", "False/Stalled", "True/NameTaken"},
			check: func(t *testing.T, p *memPass) {
				s := p.w.object(services, "shop", "web")
				if s.GetResourceVersion() != "2" || len(s.GetManagedFields()) != 0 {
					t.Errorf("the other's Service was written: resourceVersion %s, managedFields %v", s.GetResourceVersion(), s.GetManagedFields())
				}
			},
			// The name is read first now, and nothing is written.
			next: []string{"get Service/shop/web"}},
		{name: "withheld: a paused parent's writes are counted, not made",
			world: func(_ *testing.T, p *memPass) {
				p.parent("shop", "web", map[string]any{"image": "nginx", "port": int64(8080), "paused": true})
			},
			calls:      []string{status},
			booked:     booked{Withheld: 2, Statuses: 1},
			conditions: [3]string{"False/Drifted", "False/Paused", "False/NoError"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig("shop")
			cfg.Apply.Concurrency = 1
			p := newMemPass(t, cfg)
			tt.world(t, p)
			p.w.log()
			rep := p.sync()
			if diff := cmp.Diff(tt.calls, p.w.log()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.booked, bookedIn(rep)); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			var got [3]string
			if p.w.object(httpServices, "shop", "web") != nil {
				got = [3]string{p.condition("shop", "web", "Ready"), p.condition("shop", "web", "Reconciling"), p.condition("shop", "web", "Stalled")}
			}
			if got != tt.conditions {
				t.Errorf("Ready, Reconciling, Stalled = %v, want %v", got, tt.conditions)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
			p.sync()
			if diff := cmp.Diff(tt.next, p.w.log(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the next pass's calls (-want +got):\n%s", diff)
			}
		})
	}
}

func image(d *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return ""
	}
	img, _ := cs[0].(map[string]any)["image"].(string)
	return img
}

func stalledMessage(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Stalled" {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}
