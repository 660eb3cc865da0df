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
	"k8s.io/apimachinery/pkg/types"
)

// TestSyncCreatesThenSteady: 30 parents in 3 namespaces with pages of 7.
// One pass creates exactly their children and statuses; the next pass
// makes no write and only the LIST requests of the pages.
func TestSyncCreatesThenSteady(t *testing.T) {
	t.Parallel()
	nss := []string{"steady-a", "steady-b", "steady-c"}
	h := newHarness(t, testConfig(nss...))
	parents := map[string]*unstructured.Unstructured{}
	hpaPerNS := map[string]int{}
	for _, ns := range nss {
		h.namespace(ns)
		for i := range 10 {
			name := fmt.Sprintf("svc-%d", i)
			spec := map[string]any{"image": fmt.Sprintf("ghcr.io/acme/%s:1.%d", ns, i), "port": int64(8000 + i), "replicas": int64(i % 3)}
			if i%4 == 0 {
				spec["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m"}}
				spec["autoscaling"] = map[string]any{"maxReplicas": int64(5)}
				hpaPerNS[ns]++
			}
			parents[ns+"/"+name] = h.createParent(ns, name, spec)
		}
	}

	rep := h.sync()
	if rep.Created != 30+30+3*3 || rep.Statuses != 30 || rep.Failed != 0 {
		t.Errorf("first pass: created %d, statuses %d, failed %d; want 69, 30, 0", rep.Created, rep.Statuses, rep.Failed)
	}
	for key, p := range parents {
		ns, name, _ := strings.Cut(key, "/")
		dep := h.mustGet(deployments, ns, name)
		svc := h.mustGet(services, ns, name)
		for _, child := range []*unstructured.Unstructured{dep, svc} {
			if diff := cmp.Diff(map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "resyncd", "resyncd.io/parent": name, "resyncd.io/parent-kind": "HttpService.resyncd.io"}, child.GetLabels()); diff != "" {
				t.Errorf("%s %s labels (-want +got):\n%s", child.GetKind(), key, diff)
			}
			refs := child.GetOwnerReferences()
			if len(refs) != 1 || refs[0].UID != p.GetUID() || refs[0].Kind != "HttpService" || !*refs[0].Controller || !*refs[0].BlockOwnerDeletion {
				t.Errorf("%s %s ownerReferences = %+v", child.GetKind(), key, refs)
			}
		}
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		image, _ := containers[0].(map[string]any)["image"].(string)
		if want, _, _ := unstructured.NestedString(p.Object, "spec", "image"); image != want {
			t.Errorf("Deployment %s image %q, want %q", key, image, want)
		}
		_, autoscaled, _ := unstructured.NestedMap(p.Object, "spec", "autoscaling")
		_, hasReplicas, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		_, hpaErr := h.get(hpas, ns, name)
		if autoscaled != (hpaErr == nil) {
			t.Errorf("%s: autoscaling %v but HorizontalPodAutoscaler error %v", key, autoscaled, hpaErr)
		}
		// The API server defaults replicas to 1 when left out, so compare with what was asked.
		if !autoscaled && !hasReplicas {
			t.Errorf("Deployment %s has no replicas", key)
		}
		parent := h.mustGet(httpServices, ns, name)
		if g, _, _ := unstructured.NestedInt64(parent.Object, "status", "observedGeneration"); g != parent.GetGeneration() {
			t.Errorf("%s observedGeneration %d, want %d", key, g, parent.GetGeneration())
		}
		svcPort, _, _ := unstructured.NestedInt64(p.Object, "spec", "port")
		if url, _, _ := unstructured.NestedString(parent.Object, "status", "url"); url != fmt.Sprintf("http://%s.%s.svc:%d", name, ns, svcPort) {
			t.Errorf("%s url %q", key, url)
		}
		for _, c := range []string{"Ready", "Reconciling", "Stalled"} {
			condition(t, parent, c)
		}
		if r := condition(t, parent, "Ready"); r["status"] != "False" || r["reason"] != "WaitingForController" {
			t.Errorf("%s Ready = %v, want False/WaitingForController (no controller-manager here)", key, r)
		}
	}
	for _, ns := range nss {
		if n := len(h.list(deployments, ns)); n != 10 {
			t.Errorf("%s: %d Deployments, want 10", ns, n)
		}
		if n := len(h.list(hpas, ns)); n != hpaPerNS[ns] {
			t.Errorf("%s: %d HorizontalPodAutoscalers, want %d", ns, n, hpaPerNS[ns])
		}
	}

	h.log.reset()
	rep = h.sync()
	reqs := h.log.reset()
	if w := writes(reqs); len(w) != 0 {
		t.Errorf("steady pass wrote: %v", w)
	}
	want := 0
	for _, ns := range nss {
		want += pages(10, 7) * 3 // parents, Deployments, Services
		want += pages(hpaPerNS[ns], 7)
	}
	for _, r := range reqs {
		if !strings.Contains(r, "limit=7") {
			t.Errorf("not a paged LIST: %s", r)
		}
	}
	if len(reqs) != want {
		t.Errorf("steady pass made %d requests, want %d LISTs:\n%s", len(reqs), want, strings.Join(reqs, "\n"))
	}
	if rep.InSync != 69 || rep.Writes() != 0 {
		t.Errorf("steady pass: in sync %d, writes %d; want 69, 0", rep.InSync, rep.Writes())
	}
}

// TestPassNow: with an hour's interval, PassNow starts the next pass at
// once, and that pass repairs what changed since the first.
func TestPassNow(t *testing.T) {
	t.Parallel()
	cfg := testConfig("passnow")
	cfg.Resources[0].Interval = time.Hour
	h := newHarness(t, cfg)
	h.namespace("passnow")
	h.createParent("passnow", "web", map[string]any{"image": "nginx", "port": int64(80), "replicas": int64(2)})

	ctx, cancel := context.WithCancel(t.Context())
	passes := make(chan ResourceReport, 4)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		h.engine.Run(ctx, func(_ int, rep ResourceReport, err error) {
			if err != nil {
				t.Errorf("pass: %v", err)
			}
			passes <- rep
		})
	}()
	defer func() { cancel(); <-stopped }()
	next := func(what string) ResourceReport {
		select {
		case rep := <-passes:
			return rep
		case <-time.After(time.Minute):
			t.Fatalf("no pass %s", what)
			return ResourceReport{}
		}
	}
	if rep := next("at start"); rep.Created != 2 {
		t.Fatalf("first pass created %d children, want 2", rep.Created)
	}
	patch := []byte(`{"spec":{"replicas":5}}`)
	if _, err := h.cs.AppsV1().Deployments("passnow").Patch(t.Context(), "web", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	select {
	case rep := <-passes:
		t.Fatalf("a second pass ran before PassNow: %+v", rep)
	default:
	}
	h.engine.PassNow()
	if rep := next("after PassNow"); rep.Updated != 1 {
		t.Errorf("the pass PassNow started updated %d children, want the scaled Deployment", rep.Updated)
	}
	if r := h.mustGet(deployments, "passnow", "web"); r.Object["spec"].(map[string]any)["replicas"] != int64(2) {
		t.Errorf("replicas = %v after the pass, want 2", r.Object["spec"].(map[string]any)["replicas"])
	}
}
