package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPlanAfterAPass: what the planner decides from the pages a pass left
// behind — the samples of shop.yaml written by a pass in memory, with the
// managedFields resyncd's applies leave — once something changed: nothing
// when nothing did, and only what the change needs otherwise.
func TestPlanAfterAPass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, w *memWriter)
		want   []string
	}{
		{"nothing changed: nothing to do", func(*testing.T, *memWriter) {}, nil},
		{"an image changed by hand", func(t *testing.T, w *memWriter) {
			setImage(t, w, "shop", "storefront", "nginx:evil")
		}, []string{"storefront: update Deployment/shop/storefront"}},
		{"an autoscaler deleted by hand", func(_ *testing.T, w *memWriter) {
			w.remove(hpas, "shop", "storefront")
		}, []string{"storefront: create HorizontalPodAutoscaler/shop/storefront"}},
		{"a status removed: only the status to write", func(t *testing.T, w *memWriter) {
			w.edit(t, httpServices, "shop", "catalog-api", func(u *unstructured.Unstructured) { delete(u.Object, "status") })
		}, []string{"catalog-api: "}},
		{"autoscaling switched off: replicas set, the autoscaler pruned", func(t *testing.T, w *memWriter) {
			w.edit(t, httpServices, "shop", "storefront", func(u *unstructured.Unstructured) {
				unstructured.RemoveNestedField(u.Object, "spec", "autoscaling")
			})
		}, []string{"storefront: update Deployment/shop/storefront, delete HorizontalPodAutoscaler/shop/storefront"}},
		{"a parent deleted: its children are orphans", func(_ *testing.T, w *memWriter) {
			w.remove(httpServices, "shop", "checkout")
		}, []string{"orphans: delete Service/shop/checkout, delete Deployment/shop/checkout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newMemPass(t, testConfig("shop"))
			p.samples("shop.yaml")
			if rep := p.sync(); rep.Created != 7 || rep.Statuses != 3 {
				t.Fatalf("the first pass: %+v", bookedIn(rep))
			}
			tt.change(t, p.w)
			rs := p.engine.resources[0]
			rs.begin()
			jobs, err := p.engine.planPass(t.Context(), rs, &ResourceReport{})
			rs.end()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, describe(jobs), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
