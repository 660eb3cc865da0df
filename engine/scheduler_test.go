package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/resyncd/resyncd/config"
)

// setImage makes the stored Deployment ns/name run image, as another
// writer would.
func setImage(t testing.TB, w *memWriter, ns, name, image string) {
	t.Helper()
	w.edit(t, deployments, ns, name, func(u *unstructured.Unstructured) {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = image
		_ = unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers")
	})
}

// invalid is the API server's 422 for a Deployment.
func invalid(name string) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, name,
		field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be greater than or equal to 0")})
}

// TestScheduleBudget: a pass makes at most apply.maxWritesPerPass writes,
// the highest-priority parent's first; the rest are counted Deferred and
// made by the next passes, and the pass after those writes nothing.
func TestScheduleBudget(t *testing.T) {
	t.Parallel()
	// The samples of shop.yaml: checkout (priority 100) has a Deployment,
	// a Service and a status to write; catalog-api the same; storefront
	// also a HorizontalPodAutoscaler: 10 writes.
	checkout := []string{"create-only apply Deployment/shop/checkout", "create-only apply Service/shop/checkout", "status apply HttpService/shop/checkout"}
	catalog := []string{"create-only apply Deployment/shop/catalog-api", "create-only apply Service/shop/catalog-api", "status apply HttpService/shop/catalog-api"}
	storefront := []string{"create-only apply Deployment/shop/storefront", "create-only apply Service/shop/storefront",
		"create-only apply HorizontalPodAutoscaler/shop/storefront", "status apply HttpService/shop/storefront"}
	cat := func(parts ...[]string) []string { return concat(parts...) }
	tests := []struct {
		name   string
		budget int
		passes [][]string // the calls of each pass until nothing is left
		booked []booked
		stored []string // the Deployments after the passes
	}{
		{"enough for every write", 100, [][]string{cat(checkout, catalog, storefront)},
			[]booked{{Created: 7, Statuses: 3}}, []string{"shop/catalog-api", "shop/checkout", "shop/storefront"}},
		{"five: the priority-100 parent first, the rest deferred", 5,
			// The second pass: storefront has children to create, catalog-api
			// only its status: the creates go first.
			[][]string{cat(checkout, catalog[:2]), cat(storefront, catalog[2:])},
			[]booked{{Created: 4, Statuses: 1, Deferred: 5}, {Created: 3, Statuses: 2}}, []string{"shop/catalog-api", "shop/checkout", "shop/storefront"}},
		{"one write a pass", 1, [][]string{checkout[:1], checkout[1:2], checkout[2:], catalog[:1]},
			[]booked{{Created: 1, Deferred: 9}, {Created: 1, Deferred: 8}, {Statuses: 1, Deferred: 7}, {Created: 1, Deferred: 6}},
			[]string{"shop/catalog-api", "shop/checkout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig("shop")
			cfg.Apply.MaxWritesPerPass, cfg.Apply.Concurrency = tt.budget, 1
			p := newMemPass(t, cfg)
			p.samples("shop.yaml")
			for i, want := range tt.passes {
				rep := p.sync()
				if diff := cmp.Diff(want, p.w.log()); diff != "" {
					t.Errorf("pass %d: calls (-want +got):\n%s", i+1, diff)
				}
				if diff := cmp.Diff(tt.booked[i], bookedIn(rep)); diff != "" {
					t.Errorf("pass %d: report (-want +got):\n%s", i+1, diff)
				}
			}
			if diff := cmp.Diff(tt.stored, p.w.names(deployments)); diff != "" {
				t.Errorf("Deployments stored (-want +got):\n%s", diff)
			}
			if tt.booked[len(tt.booked)-1].Deferred == 0 {
				if rep := p.sync(); len(p.w.log()) != 0 || bookedIn(rep) != (booked{}) {
					t.Errorf("the pass after the last write: %+v", bookedIn(rep))
				}
			}
		})
	}
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestScheduleBatches: the jobs of a pass go in batches of about
// apply.batchSize writes; a pass stopped in the middle (its context
// cancelled during the k-th write) finishes the batch in flight, starts no
// other, and counts the child writes of the jobs it dropped as Deferred;
// the next pass makes them.
func TestScheduleBatches(t *testing.T) {
	t.Parallel()
	parents := []string{"p1", "p2", "p3", "p4", "p5", "p6"} // 3 writes each: Deployment, Service, status
	tests := []struct {
		name      string
		batchSize int
		stopAt    int // the write during which the pass is stopped
		written   []string
	}{
		{"two jobs a batch, stopped in the first", 6, 1, parents[:2]},
		{"two jobs a batch, stopped in the second job's first write", 6, 4, parents[:2]},
		{"two jobs a batch, stopped in the second batch", 6, 7, parents[:4]},
		{"one job a batch", 3, 1, parents[:1]},
		{"one job a batch, stopped in its status", 3, 3, parents[:1]},
		{"one batch", 100, 1, parents},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig("shop")
			cfg.Apply.BatchSize, cfg.Apply.Concurrency = tt.batchSize, 1
			p := newMemPass(t, cfg)
			for _, name := range parents {
				p.parent("shop", name, map[string]any{"image": "nginx", "port": int64(8080)})
			}
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			n := 0
			p.w.before = func(c memCall) {
				if c.verb != "get" {
					if n++; n == tt.stopAt {
						stop()
					}
				}
			}
			rep, err := p.engine.SyncOnce(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("stopped pass: err = %v, want context.Canceled", err)
			}
			p.w.before = nil
			if diff := cmp.Diff(tt.written, parentsWritten(p.w.log())); diff != "" {
				t.Errorf("parents written (-want +got):\n%s", diff)
			}
			want := booked{Created: 2 * len(tt.written), Statuses: len(tt.written), Deferred: 2 * (len(parents) - len(tt.written))}
			if diff := cmp.Diff(want, bookedIn(rep.Resources[0])); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			var stored []string
			for _, name := range tt.written {
				stored = append(stored, "shop/"+name)
			}
			if diff := cmp.Diff(stored, p.w.names(deployments)); diff != "" {
				t.Errorf("Deployments stored (-want +got):\n%s", diff)
			}
			rep2 := p.sync()
			if got := parentsWritten(p.w.log()); !cmp.Equal(got, parents[len(tt.written):], cmpopts.EquateEmpty()) || rep2.Deferred != 0 {
				t.Errorf("the next pass wrote for %v, deferred %d; want the rest, %v, and nothing deferred", got, rep2.Deferred, parents[len(tt.written):])
			}
		})
	}
}

// TestScheduleOrder: the jobs waiting at once run by the resource's
// priority, then the parent's, then the kind of write most needed
// (create, update, status), then the age of the oldest drift, then the
// order they were listed in.
func TestScheduleOrder(t *testing.T) {
	t.Parallel()
	spec := func(priority int64) map[string]any {
		return map[string]any{"image": "nginx", "port": int64(8080), "priority": priority}
	}
	tests := []struct {
		name string
		cfg  func(*config.Config)
		// world stores the parents and runs the passes before the one
		// whose order is compared.
		world func(t *testing.T, p *memPass)
		want  []string
	}{
		{"the parent's priority, then the order listed", nil, func(t *testing.T, p *memPass) {
			for name, prio := range map[string]int64{"a": 0, "b": 5, "c": -1, "d": 5} {
				p.parent("shop", name, spec(prio))
			}
		}, []string{"b", "d", "a", "c"}},
		{"creates, then updates, then statuses", nil, func(t *testing.T, p *memPass) {
			for _, name := range []string{"a-update", "b-status", "c-create"} {
				p.parent("shop", name, spec(0))
			}
			p.sync()
			setImage(t, p.w, "shop", "a-update", "nginx:evil")
			p.w.edit(t, httpServices, "shop", "b-status", func(u *unstructured.Unstructured) { delete(u.Object, "status") })
			p.w.remove(deployments, "shop", "c-create")
		}, []string{"c-create", "a-update", "b-status"}},
		{"the priority before the kind of write", nil, func(t *testing.T, p *memPass) {
			p.parent("shop", "a-create", spec(0))
			p.parent("shop", "b-status", spec(1))
			p.sync()
			p.w.edit(t, httpServices, "shop", "b-status", func(u *unstructured.Unstructured) { delete(u.Object, "status") })
			p.w.remove(deployments, "shop", "a-create")
		}, []string{"b-status", "a-create"}},
		{"the oldest drift first", nil, func(t *testing.T, p *memPass) {
			p.parent("shop", "a-new", spec(0))
			p.parent("shop", "z-old", spec(0))
			p.sync()
			// z-old drifts first; its repair is refused, so it is still
			// drifted an hour later, when a-new drifts too.
			setImage(t, p.w, "shop", "z-old", "nginx:evil")
			p.w.fail("apply", "Deployment/shop/z-old", invalid("z-old"))
			p.sync()
			p.now = p.now.Add(time.Hour)
			setImage(t, p.w, "shop", "a-new", "nginx:evil")
		}, []string{"z-old", "a-new"}},
		{"the resource's priority before the parent's", func(cfg *config.Config) {
			cfg.Resources = append(cfg.Resources, cfg.Resources[0])
			cfg.Resources[0].Namespaces = []string{"low"}
			cfg.Resources[1].Namespaces, cfg.Resources[1].Priority = []string{"high"}, 10
		}, func(t *testing.T, p *memPass) {
			p.parent("low", "a-urgent", spec(100))
			p.parent("high", "b-plain", spec(0))
			p.parent("high", "c-plain", spec(0))
		}, []string{"b-plain", "c-plain", "a-urgent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig("shop")
			cfg.Apply.Concurrency = 1
			if tt.cfg != nil {
				tt.cfg(cfg)
			}
			p := newMemPass(t, cfg)
			tt.world(t, p)
			p.w.log()
			if _, err := p.engine.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			calls := p.w.log()
			if diff := cmp.Diff(tt.want, parentsWritten(calls)); diff != "" {
				t.Errorf("order of the parents written (-want +got):\n%s\ncalls:\n%s", diff, strings.Join(calls, "\n"))
			}
		})
	}
}
