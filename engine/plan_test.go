package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/resyncd/resyncd/actual"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/internal/fixture"
)

// memPages serves pages from memory, as the API server would: children
// only if the selector selects them.
type memPages struct {
	objects map[string][]*unstructured.Unstructured // by resource
}

func (m memPages) Parents(_ context.Context, gvr schema.GroupVersionResource, _ actual.Scope, fn func(*unstructured.Unstructured) error) (actual.Listed, error) {
	for _, p := range m.objects[gvr.Resource] {
		if err := fn(p.DeepCopy()); err != nil {
			return actual.Listed{}, err
		}
	}
	return actual.Listed{Kind: "HttpService"}, nil
}

func (m memPages) Children(_ context.Context, gvr schema.GroupVersionResource, _ actual.Scope, selector string, fn func(*unstructured.Unstructured) error) (actual.Listed, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return actual.Listed{}, err
	}
	for _, c := range m.objects[gvr.Resource] {
		if sel.Matches(labels.Set(c.GetLabels())) {
			if err := fn(c.DeepCopy()); err != nil {
				return actual.Listed{}, err
			}
		}
	}
	return actual.Listed{}, nil
}

func (m memPages) Kind(schema.GroupVersionResource) (string, error) { return "HttpService", nil }

// planner is an engine that reads pages from memory and cannot write.
func planner(t *testing.T) *Engine {
	t.Helper()
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	e, err := newEngine(SettingsFrom(testConfig("shop")), memPages{}, nil, Options{Renderers: desired.DefaultRegistry(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func planParentObject(name string, spec map[string]any, annotations map[string]string) *unstructured.Unstructured {
	p := fixture.HTTPService("shop", name, spec)
	p.SetUID(types.UID("uid-" + name))
	p.SetResourceVersion("1")
	p.SetGeneration(1)
	p.SetAnnotations(annotations)
	return p
}

// liveChildren are p's children as resyncd last applied them: stamped,
// with resyncd's managedFields entry, then changed by edit.
func liveChildren(t *testing.T, e *Engine, p *unstructured.Unstructured, edit func(kind string, u *unstructured.Unstructured)) []*unstructured.Unstructured {
	t.Helper()
	g, err := e.render(e.resources[0], p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, d := range g.Children {
		tv, err := e.owner.typed(d.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		set, err := tv.ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		js, err := set.ToJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := d.DeepCopy()
		u.SetUID(types.UID("uid-" + d.GetKind() + "-" + d.GetName()))
		u.SetResourceVersion("7")
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "resyncd", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: d.GetAPIVersion(), FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(js))}})
		if edit != nil {
			edit(u.GetKind(), u)
		}
		out = append(out, u)
	}
	return out
}

// describe is what a plan says, a line per job in order: the parent (or
// orphans), what is withheld, and each operation.
func describe(jobs []*job) []string {
	var out []string
	for _, j := range jobs {
		name := "orphans"
		if err := j.unpack(); err != nil {
			name = err.Error()
		} else if j.parent != nil {
			name = j.parent.GetName()
		}
		var parts []string
		for _, o := range append(append([]*op{}, j.ops...), j.prunes...) {
			parts = append(parts, string(o.kind)+" "+o.key.String())
		}
		for _, h := range j.rare().held {
			parts = append(parts, fmt.Sprintf("held %s (drifted %v)", h.Object, h.Drifted))
		}
		for _, tk := range j.rare().taken {
			parts = append(parts, "taken "+strings.SplitN(tk, " exists", 2)[0])
		}
		if j.withheld != "" {
			parts = append(parts, "withheld "+string(j.withheld))
		}
		out = append(out, name+": "+strings.Join(parts, ", "))
	}
	return out
}

// TestPlan: what a pass plans from given pages, with no API server: which
// children are created, updated, pruned, released, held or left alone as
// someone else's, and in which order the jobs run.
func TestPlan(t *testing.T) {
	t.Parallel()
	spec := func(priority int64) map[string]any {
		return map[string]any{"image": "nginx:1", "port": int64(8080), "replicas": int64(1), "priority": priority}
	}
	setImage := func(img string) func(string, *unstructured.Unstructured) {
		return func(kind string, u *unstructured.Unstructured) {
			if kind == "Deployment" {
				cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				cs[0].(map[string]any)["image"] = img
				_ = unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers")
			}
		}
	}
	annotate := func(key, value string, then func(string, *unstructured.Unstructured)) func(string, *unstructured.Unstructured) {
		return func(kind string, u *unstructured.Unstructured) {
			if kind == "Deployment" {
				u.SetAnnotations(map[string]string{key: value})
			}
			if then != nil {
				then(kind, u)
			}
		}
	}
	scaledSpec := func() map[string]any {
		return map[string]any{"image": "nginx:1", "port": int64(8080), "replicas": int64(1),
			"resources":   map[string]any{"requests": map[string]any{"cpu": "100m"}},
			"autoscaling": map[string]any{"minReplicas": int64(1), "maxReplicas": int64(3)}}
	}
	yes := true
	tests := []struct {
		name string
		// world returns the parents and the live children.
		world func(t *testing.T, e *Engine) (parents, children []*unstructured.Unstructured)
		want  []string
	}{
		{"cold", func(*testing.T, *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			return []*unstructured.Unstructured{planParentObject("web", spec(0), nil)}, nil
		}, []string{"web: create Deployment/shop/web, create Service/shop/web"}},
		{"in sync: only the status to write", func(t *testing.T, e *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			p := planParentObject("web", spec(0), nil)
			return []*unstructured.Unstructured{p}, liveChildren(t, e, p, nil)
		}, []string{"web: "}},
		{"drifted", func(t *testing.T, e *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			p := planParentObject("web", spec(0), nil)
			return []*unstructured.Unstructured{p}, liveChildren(t, e, p, setImage("nginx:evil"))
		}, []string{"web: update Deployment/shop/web"}},
		{"held: drifted, not repaired", func(t *testing.T, e *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			p := planParentObject("web", spec(0), nil)
			return []*unstructured.Unstructured{p}, liveChildren(t, e, p, annotate(desired.AnnotationReconcile, desired.Disabled, setImage("nginx:hotfix")))
		}, []string{"web: held Deployment/shop/web (drifted true)"}},
		{"parent gone: orphans pruned, one released", func(t *testing.T, e *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			gone := planParentObject("gone", spec(0), nil)
			return nil, liveChildren(t, e, gone, annotate(desired.AnnotationPrune, desired.Disabled, nil))
		}, []string{"orphans: delete Service/shop/gone, release Deployment/shop/gone"}},
		{"another controller: taken", func(t *testing.T, e *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			p := planParentObject("web", spec(0), nil)
			return []*unstructured.Unstructured{p}, liveChildren(t, e, p, func(kind string, u *unstructured.Unstructured) {
				if kind == "Service" {
					u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-other", Controller: &yes}})
				}
			})
		}, []string{"web: taken Service/shop/web"}},
		{"a name taken holds the pruning of what it no longer renders", func(t *testing.T, e *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			scaled := planParentObject("web", scaledSpec(), nil)
			return []*unstructured.Unstructured{planParentObject("web", spec(0), nil)}, liveChildren(t, e, scaled, func(kind string, u *unstructured.Unstructured) {
				if kind == "Service" {
					u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-other", Controller: &yes}})
				}
			})
		}, []string{"web: update Deployment/shop/web, taken Service/shop/web"}},
		{"what refers to a taken name is pruned all the same", func(t *testing.T, e *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			p := planParentObject("web", scaledSpec(), nil)
			return []*unstructured.Unstructured{p}, liveChildren(t, e, p, func(kind string, u *unstructured.Unstructured) {
				if kind == "Deployment" {
					u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-other", Controller: &yes}})
				}
			})
		}, []string{"web: delete HorizontalPodAutoscaler/shop/web, taken Deployment/shop/web, taken HorizontalPodAutoscaler/shop/web is not written either: it refers to Deployment/shop/web, which is not resyncd's"}},
		{"an earlier parent of the name: replaced", func(t *testing.T, e *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			old := planParentObject("web", spec(0), nil)
			old.SetUID("uid-web-before")
			return []*unstructured.Unstructured{planParentObject("web", spec(0), nil)}, liveChildren(t, e, old, nil)
		}, []string{"web: delete Service/shop/web, delete Deployment/shop/web"}},
		{"paused: withheld", func(*testing.T, *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			return []*unstructured.Unstructured{planParentObject("web", map[string]any{"image": "nginx", "port": int64(8080), "paused": true}, nil)}, nil
		}, []string{"web: create Deployment/shop/web, create Service/shop/web, withheld paused"}},
		{"reconcile disabled on the parent: withheld", func(*testing.T, *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			return []*unstructured.Unstructured{planParentObject("web", spec(0), map[string]string{desired.AnnotationReconcile: desired.Disabled})}, nil
		}, []string{"web: create Deployment/shop/web, create Service/shop/web, withheld disabled"}},
		{"priority first, then the kind of write", func(t *testing.T, e *Engine) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
			synced := planParentObject("a-synced", spec(0), nil)
			drifted := planParentObject("b-drifted", spec(0), nil)
			return []*unstructured.Unstructured{synced, drifted, planParentObject("c-low", spec(-5), nil), planParentObject("d-high", spec(5), nil)},
				append(liveChildren(t, e, synced, nil), liveChildren(t, e, drifted, setImage("x"))...)
		}, []string{
			"d-high: create Deployment/shop/d-high, create Service/shop/d-high",
			"b-drifted: update Deployment/shop/b-drifted",
			"a-synced: ",
			"c-low: create Deployment/shop/c-low, create Service/shop/c-low",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := planner(t)
			parents, children := tt.world(t, e)
			world := memPages{objects: map[string][]*unstructured.Unstructured{"httpservices": parents}}
			for _, c := range children {
				res := strings.ToLower(c.GetKind()) + "s"
				world.objects[res] = append(world.objects[res], c)
			}
			e.reader = world
			rs := e.resources[0]
			rs.begin()
			jobs, err := e.planPass(t.Context(), rs, &ResourceReport{})
			rs.end()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, describe(jobs)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
