package engine

import (
	"strings"
	"testing"
	"unique"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/resyncd/resyncd/internal/fixture"
)

const hsvcResource = "httpservices.v1alpha1.resyncd.io"

// recordEvents makes the engine record Events to the API server.
func (h *harness) recordEvents() {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: h.cs.EventsV1()})
	b.StartRecordingToSink(h.t.Context().Done())
	h.engine.events = b.NewRecorder(scheme.Scheme, "resyncd")
}

// foreignService creates, as `kubectl apply` would, a Service another team
// runs: its own selector and port, no resyncd label.
func (h *harness) foreignService(ns, name string, annotations map[string]string) *corev1.Service {
	h.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP}},
		},
	}
	got, err := h.cs.CoreV1().Services(ns).Create(h.t.Context(), svc, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		h.t.Fatal(err)
	}
	return got
}

// requestsTo returns the requests in reqs to the object of resource and name.
func requestsTo(reqs []string, resource, name string) []string {
	var out []string
	for _, r := range reqs {
		path, _, _ := strings.Cut(r, "?")
		if strings.HasSuffix(path, "/"+resource+"/"+name) {
			out = append(out, r)
		}
	}
	return out
}

func managedGauge(h *harness, kind, state string) float64 {
	return testutil.ToFloat64(h.engine.metrics.managed.WithLabelValues("local", hsvcResource, kind, state))
}

// TestNameTakenService: another team's Service of the name an HttpService
// renders is never written; the parent is Stalled with NameTaken, one
// Event, the taken metric; its Deployment is created anyway. Later passes
// read the Service once and write nothing. Once the Service is deleted,
// the next pass creates resyncd's.
func TestNameTakenService(t *testing.T) {
	t.Parallel()
	ns := "adopt"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.recordEvents()
	theirs := h.foreignService(ns, "ledger", nil)
	h.createParent(ns, "ledger", map[string]any{"image": "evil:1", "port": int64(8080)})

	for pass := 1; pass <= 3; pass++ {
		h.log.reset()
		rep := h.sync()
		reqs := h.log.reset()
		svc, err := h.cs.CoreV1().Services(ns).Get(t.Context(), "ledger", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.ResourceVersion != theirs.ResourceVersion || len(svc.OwnerReferences) > 0 || len(svc.Labels) > 0 ||
			!cmp.Equal(svc.Spec.Selector, map[string]string{"app": "ledger"}) || len(svc.Spec.Ports) != 1 {
			t.Fatalf("pass %d changed the other team's Service: rv %s→%s, owners %v, labels %v, selector %v, ports %v",
				pass, theirs.ResourceVersion, svc.ResourceVersion, svc.OwnerReferences, svc.Labels, svc.Spec.Selector, svc.Spec.Ports)
		}
		wantMissing := 0
		if pass == 1 {
			wantMissing = 1 // the Deployment, created
		}
		if rep.Taken != 1 || rep.Missing != wantMissing || managedGauge(h, "Service", stateTaken) != 1 {
			t.Errorf("pass %d: taken %d, missing %d, gauge %v; want 1, %d, 1", pass, rep.Taken, rep.Missing, managedGauge(h, "Service", stateTaken), wantMissing)
		}
		svcReqs := requestsTo(reqs, "services", "ledger")
		switch pass {
		case 1: // the create-only apply, refused, then one read
			if len(svcReqs) != 2 || !strings.HasPrefix(svcReqs[0], "PATCH ") || !strings.HasPrefix(svcReqs[1], "GET ") {
				t.Errorf("pass 1 requests to the Service = %v, want the refused apply and one GET", svcReqs)
			}
		default: // one read, no write
			if len(svcReqs) != 1 || !strings.HasPrefix(svcReqs[0], "GET ") {
				t.Errorf("pass %d requests to the Service = %v, want one GET", pass, svcReqs)
			}
			if w := writes(reqs); len(w) != 0 {
				t.Errorf("pass %d writes = %v, want none", pass, w)
			}
		}
	}
	dep := h.mustGet(deployments, ns, "ledger")
	if dep.GetLabels()["resyncd.io/parent"] != "ledger" {
		t.Errorf("the parent's Deployment was not created as resyncd's: labels %v", dep.GetLabels())
	}
	s := condition(t, h.mustGet(httpServices, ns, "ledger"), "Stalled")
	msg := str(s["message"])
	if s["status"] != "True" || s["reason"] != ReasonNameTaken || !strings.Contains(msg, "Service/adopt/ledger") ||
		!strings.Contains(msg, "kubectl-client-side-apply") || !strings.Contains(msg, "resyncd.io/adopt") {
		t.Errorf("Stalled = %v, want True/NameTaken naming the Service, its manager and the adopt annotation", s)
	}
	if got := fixture.WarningEvents(t, h.cs, ns, "", map[string]int{"ledger/NameTaken": 1}); !cmp.Equal(got, map[string]int{"ledger/NameTaken": 1}) {
		t.Errorf("Warning Events = %v, want one NameTaken", got)
	}

	if err := h.cs.CoreV1().Services(ns).Delete(t.Context(), "ledger", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := h.sync()
	svc := h.mustGet(services, ns, "ledger")
	if rep.Created != 1 || svc.GetLabels()["app.kubernetes.io/managed-by"] != "resyncd" || len(svc.GetOwnerReferences()) != 1 {
		t.Errorf("after the name was freed: created %d, labels %v, owners %v; want resyncd's Service", rep.Created, svc.GetLabels(), svc.GetOwnerReferences())
	}
	if s := condition(t, h.mustGet(httpServices, ns, "ledger"), "Stalled"); s["status"] != "False" {
		t.Errorf("Stalled after the name was freed = %v", s)
	}
	if managedGauge(h, "Service", stateTaken) != 0 {
		t.Errorf("taken gauge = %v after the name was freed, want 0", managedGauge(h, "Service", stateTaken))
	}
}

// TestAdoptAnnotation: the owner of an existing Service hands it to one
// parent with resyncd.io/adopt naming it: "true" hands it to nobody (the
// parent is Stalled, told what to write); the parent named takes it over
// in the pass that sees the annotation, with its labels but without an
// ownerReference, so that the garbage collector never deletes it; when
// the parent is deleted, the Service is released, not deleted: whoever
// could annotate it gained no right to delete it.
func TestAdoptAnnotation(t *testing.T) {
	t.Parallel()
	ns := "adopt-annotated"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.foreignService(ns, "given", map[string]string{"resyncd.io/adopt": "HttpService.resyncd.io/given"})
	h.foreignService(ns, "later", map[string]string{"resyncd.io/adopt": "true"})
	for _, name := range []string{"given", "later"} {
		h.createParent(ns, name, map[string]any{"image": "nginx", "port": int64(8080)})
	}
	h.sync()
	adopted := func(name string) bool {
		svc := h.mustGet(services, ns, name)
		sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
		return svc.GetLabels()["app.kubernetes.io/managed-by"] == "resyncd" && sel["resyncd.io/parent"] == name
	}
	if !adopted("given") {
		t.Errorf("Service given, annotated with its parent, was not taken over: %v", h.mustGet(services, ns, "given").Object)
	}
	if refs := h.mustGet(services, ns, "given").GetOwnerReferences(); len(refs) != 0 {
		t.Errorf("adopted Service given has ownerReferences %v; the garbage collector would delete it with its parent", refs)
	}
	if adopted("later") {
		t.Fatal(`Service later was taken over with resyncd.io/adopt: "true", which names no parent`)
	}
	if s := condition(t, h.mustGet(httpServices, ns, "given"), "Stalled"); s["status"] != "False" {
		t.Errorf("given Stalled = %v", s)
	}
	s := condition(t, h.mustGet(httpServices, ns, "later"), "Stalled")
	if s["reason"] != ReasonNameTaken || !strings.Contains(str(s["message"]), `set it to "HttpService.resyncd.io/later"`) {
		t.Errorf(`later Stalled = %v, want NameTaken saying to set resyncd.io/adopt to "HttpService.resyncd.io/later"`, s)
	}

	h.annotate(services, ns, "later", "resyncd.io/adopt", "HttpService.resyncd.io/later")
	h.sync()
	if !adopted("later") {
		t.Errorf("Service later was not taken over in the pass after it was annotated")
	}
	if s := condition(t, h.mustGet(httpServices, ns, "later"), "Stalled"); s["status"] != "False" {
		t.Errorf("later Stalled = %v after adoption", s)
	}
	h.log.reset()
	if rep := h.sync(); rep.Writes() != 0 {
		t.Errorf("the pass after adoption made %d writes: %v", rep.Writes(), writes(h.log.reset()))
	}

	uid := h.mustGet(services, ns, "given").GetUID()
	h.deleteParent(ns, "given")
	if rep := h.sync(); rep.Released != 1 || rep.Deleted != 1 {
		t.Errorf("after the parent was deleted: released %d, deleted %d; want 1 (the Service), 1 (the Deployment resyncd made)", rep.Released, rep.Deleted)
	}
	svc := h.mustGet(services, ns, "given")
	if svc.GetUID() != uid || svc.GetLabels()["app.kubernetes.io/managed-by"] != "" {
		t.Errorf("the adopted Service was not released in place: uid %s (was %s), labels %v", svc.GetUID(), uid, svc.GetLabels())
	}
}

// TestClaimBy: who may write an existing object. An adoption names one
// parent, by kind and name; once adopted (labelled for it), no other
// parent, of the same kind or another, may take it.
func inTeamA(p *unstructured.Unstructured) *unstructured.Unstructured {
	p.SetNamespace("team-a")
	return p
}

func TestClaimBy(t *testing.T) {
	t.Parallel()
	hsvc := schema.GroupKind{Group: "resyncd.io", Kind: "HttpService"}
	webapp := schema.GroupKind{Group: "example.resyncd.io", Kind: "WebApp"}
	parent := func(name, uid string) *unstructured.Unstructured {
		p := &unstructured.Unstructured{}
		p.SetName(name)
		p.SetUID(types.UID(uid))
		return p
	}
	adopted := liveChild{labelled: true, parentKind: "HttpService.resyncd.io", parentName: "payments", rare: &liveRare{adopt: "HttpService.resyncd.io/payments"}}
	for _, tc := range []struct {
		name string
		c    liveChild
		p    *unstructured.Unstructured
		gk   schema.GroupKind
		want claim
	}{
		{"adopt names the parent", liveChild{rare: &liveRare{adopt: "HttpService.resyncd.io/payments"}}, parent("payments", "u1"), hsvc, claimMine},
		{"adopt true names nobody", liveChild{rare: &liveRare{adopt: "true"}}, parent("payments", "u1"), hsvc, claimTaken},
		{"adopt names another kind", liveChild{rare: &liveRare{adopt: "HttpService.resyncd.io/payments"}}, parent("payments", "u1"), webapp, claimTaken},
		{"adopt names another parent", liveChild{rare: &liveRare{adopt: "HttpService.resyncd.io/payments"}}, parent("billing", "u2"), hsvc, claimTaken},
		{"adopted: its parent again", adopted, parent("payments", "u3"), hsvc, claimMine},
		{"adopted: another parent of the kind", adopted, parent("billing", "u2"), hsvc, claimTaken},
		{"adopted: a parent of another kind", adopted, parent("payments", "u4"), webapp, claimTaken},
		{"another controller, adopt naming the parent", liveChild{controller: "x", controllerGK: unique.Make(schema.GroupKind{Kind: "ConfigMap"}),
			rare: &liveRare{adopt: "HttpService.resyncd.io/payments"}}, parent("payments", "u1"), hsvc, claimTaken},
		{"controlled by the parent", liveChild{controller: "u1", labelled: true}, parent("payments", "u1"), hsvc, claimMine},
		{"no label, no annotation", liveChild{}, parent("payments", "u1"), hsvc, claimTaken},
		// Outside the parent's namespace (team-a), in shared.
		{"outside: made for the parent", liveChild{key: childKey{Namespace: "shared"}, labelled: true, parentKind: "HttpService.resyncd.io", parentName: "payments",
			parentNamespace: "team-a"}, inTeamA(parent("payments", "u1")), hsvc, claimMine},
		{"outside: made for the parent of the name in another namespace", liveChild{key: childKey{Namespace: "shared"}, labelled: true,
			parentKind: "HttpService.resyncd.io", parentName: "payments", parentNamespace: "team-b"}, inTeamA(parent("payments", "u1")), hsvc, claimTaken},
		{"outside: the child of a parent of the name in that namespace", liveChild{key: childKey{Namespace: "shared"}, labelled: true,
			parentKind: "HttpService.resyncd.io", parentName: "payments"}, inTeamA(parent("payments", "u1")), hsvc, claimTaken},
		{"outside: controlled by a parent of the kind and name there", liveChild{key: childKey{Namespace: "shared"}, labelled: true, controller: "u9",
			controllerGK: unique.Make(hsvc), controllerName: "payments"}, inTeamA(parent("payments", "u1")), hsvc, claimTaken},
		{"outside: adopt without the parent's namespace", liveChild{key: childKey{Namespace: "shared"}, rare: &liveRare{adopt: "HttpService.resyncd.io/payments"}},
			inTeamA(parent("payments", "u1")), hsvc, claimTaken},
		{"outside: adopt with the parent's namespace", liveChild{key: childKey{Namespace: "shared"}, rare: &liveRare{adopt: "HttpService.resyncd.io/team-a/payments"}},
			inTeamA(parent("payments", "u1")), hsvc, claimMine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.claimBy(tc.p, tc.gk); got != tc.want {
				t.Errorf("claimBy = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestForeignController: Deployments of the parents' names controlled by
// another controller, one with resyncd's label (so the LIST returns it)
// and one without, are never written; each parent is Stalled naming the
// controller; their Services are created.
func TestForeignController(t *testing.T) {
	t.Parallel()
	ns := "foreign-controller"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	owner, err := h.cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rollouts"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	rvs := map[string]string{}
	for name, labels := range map[string]map[string]string{
		"labelled": {"app.kubernetes.io/managed-by": "resyncd", "app": "labelled"},
		"bare":     {"app": "bare"},
	} {
		d := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "theirs:1"}}},
				},
			},
		}}
		d.SetLabels(labels)
		d.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &yes}})
		got, err := h.dyn.Resource(deployments).Namespace(ns).Create(t.Context(), d, metav1.CreateOptions{FieldManager: "rollout-controller"})
		if err != nil {
			t.Fatal(err)
		}
		rvs[name] = got.GetResourceVersion()
		h.createParent(ns, name, map[string]any{"image": "nginx", "port": int64(8080)})
	}
	for range 2 {
		h.sync()
	}
	for name, rv := range rvs {
		if got := h.mustGet(deployments, ns, name); got.GetResourceVersion() != rv || containerImage(t, got) != "" {
			t.Errorf("Deployment %s was written: resourceVersion %s → %s", name, rv, got.GetResourceVersion())
		}
		h.mustGet(services, ns, name)
		s := condition(t, h.mustGet(httpServices, ns, name), "Stalled")
		if s["status"] != "True" || s["reason"] != ReasonNameTaken || !strings.Contains(str(s["message"]), "controlled by ConfigMap rollouts") {
			t.Errorf("%s Stalled = %v, want NameTaken naming ConfigMap rollouts", name, s)
		}
	}
}

// TestPredecessorIsReplaced: a child that resyncd made for an earlier
// parent of the same name (deleted, with no garbage collector to remove
// its children) is deleted and made again for the new parent, not taken
// for someone else's.
func TestPredecessorIsReplaced(t *testing.T) {
	t.Parallel()
	ns := "predecessor"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})
	h.sync()
	h.deleteParent(ns, "web")
	p := h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})
	for range 2 {
		h.sync()
	}
	for _, gvr := range []string{"deployments", "services"} {
		var refs []metav1.OwnerReference
		if gvr == "deployments" {
			refs = h.mustGet(deployments, ns, "web").GetOwnerReferences()
		} else {
			refs = h.mustGet(services, ns, "web").GetOwnerReferences()
		}
		if len(refs) != 1 || refs[0].UID != p.GetUID() {
			t.Errorf("%s web owners = %v, want the new parent %s", gvr, refs, p.GetUID())
		}
	}
	if s := condition(t, h.mustGet(httpServices, ns, "web"), "Stalled"); s["status"] != "False" {
		t.Errorf("Stalled = %v", s)
	}
}

// TestUpgradeRelabels: children that an earlier release converged carry
// no resyncd.io/parent-kind label, so the pass's LIST does not select
// them. The create that follows finds them, sees they are the parent's,
// and updates them in place: the same objects (UIDs), now labelled, no
// child deleted or created, within the write budget; the pass after writes
// nothing.
func TestUpgradeRelabels(t *testing.T) {
	t.Parallel()
	ns := "upgrade"
	cfg := testConfig(ns)
	cfg.Apply.MaxWritesPerPass = 3 // two children and the status
	h := newHarness(t, cfg)
	h.namespace(ns)
	h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})
	h.sync()
	uids := map[string]types.UID{}
	for _, gvr := range []schema.GroupVersionResource{deployments, services} {
		if _, err := h.dyn.Resource(gvr).Namespace(ns).Patch(t.Context(), "web", types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/metadata/labels/resyncd.io~1parent-kind"}]`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		uids[gvr.Resource] = h.mustGet(gvr, ns, "web").GetUID()
	}
	rep := h.sync()
	if rep.Updated != 2 || rep.Created != 0 || rep.Deleted != 0 || rep.Failed != 0 || rep.Deferred != 0 {
		t.Errorf("upgrade pass: updated %d, created %d, deleted %d, failed %d, deferred %d; want 2, 0, 0, 0, 0",
			rep.Updated, rep.Created, rep.Deleted, rep.Failed, rep.Deferred)
	}
	for _, gvr := range []schema.GroupVersionResource{deployments, services} {
		u := h.mustGet(gvr, ns, "web")
		if u.GetUID() != uids[gvr.Resource] || u.GetLabels()["resyncd.io/parent-kind"] != "HttpService.resyncd.io" {
			t.Errorf("%s: uid %s (was %s), labels %v", gvr.Resource, u.GetUID(), uids[gvr.Resource], u.GetLabels())
		}
	}
	h.log.reset()
	if rep := h.sync(); rep.Writes() != 0 || rep.InSync != 2 {
		t.Errorf("pass after the upgrade: %d writes, %d in sync; want 0, 2", rep.Writes(), rep.InSync)
	}
}

// TestTakenDeploymentGetsNoAutoscaler: another team's Deployment of the
// name an HttpService with autoscaling renders is never scaled through
// resyncd: the HorizontalPodAutoscaler that would name it is not created,
// whether the LIST sees the Deployment (labelled) or the create finds it
// (bare); the parent is Stalled naming both; its Service is created.
func TestTakenDeploymentGetsNoAutoscaler(t *testing.T) {
	t.Parallel()
	ns := "taken-scaled"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	for name, labels := range map[string]map[string]string{
		"payments": {"app": "payments"},
		"ledger":   {"app": "ledger", "app.kubernetes.io/managed-by": "resyncd", "resyncd.io/parent-kind": "HttpService.resyncd.io"},
	} {
		d := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{
				"replicas": int64(6),
				"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "theirs:1"}}},
				},
			},
		}}
		d.SetLabels(labels)
		d.SetOwnerReferences(nil)
		if name == "ledger" {
			// Labelled as resyncd's, but another parent kind's controller owns it.
			owner, err := h.cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			yes := true
			d.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &yes}})
		}
		if _, err := h.dyn.Resource(deployments).Namespace(ns).Create(t.Context(), d, metav1.CreateOptions{FieldManager: "team-x"}); err != nil {
			t.Fatal(err)
		}
		h.createParent(ns, name, map[string]any{"image": "evil:1", "port": int64(8080),
			"resources":   map[string]any{"requests": map[string]any{"cpu": "100m"}},
			"autoscaling": map[string]any{"minReplicas": int64(1), "maxReplicas": int64(1)}})
	}
	for pass := 1; pass <= 2; pass++ {
		h.sync()
		if got := h.list(hpas, ns); len(got) != 0 {
			t.Fatalf("pass %d: HorizontalPodAutoscalers %v exist; none may name another team's Deployment", pass, names(got))
		}
	}
	for _, name := range []string{"payments", "ledger"} {
		if r, _, _ := unstructured.NestedInt64(h.mustGet(deployments, ns, name).Object, "spec", "replicas"); r != 6 {
			t.Errorf("Deployment %s has %d replicas, want the other team's 6", name, r)
		}
		h.mustGet(services, ns, name)
		s := condition(t, h.mustGet(httpServices, ns, name), "Stalled")
		msg := str(s["message"])
		if s["status"] != "True" || s["reason"] != ReasonNameTaken || !strings.Contains(msg, "Deployment/"+ns+"/"+name) ||
			!strings.Contains(msg, "HorizontalPodAutoscaler/"+ns+"/"+name+" is not written") {
			t.Errorf("%s Stalled = %v, want NameTaken naming the Deployment and the HorizontalPodAutoscaler", name, s)
		}
	}
}
