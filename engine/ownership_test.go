package engine

import (
	"strings"
	"testing"

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

// TestAdoptAnnotation: the owner of an existing Service hands it over with
// resyncd.io/adopt: the pass that sees the annotation takes it over,
// whether it is there at the first pass or added later.
func TestAdoptAnnotation(t *testing.T) {
	ns := "adopt-annotated"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.foreignService(ns, "given", map[string]string{"resyncd.io/adopt": "true"})
	h.foreignService(ns, "later", nil)
	for _, name := range []string{"given", "later"} {
		h.createParent(ns, name, map[string]any{"image": "nginx", "port": int64(8080)})
	}
	h.sync()
	adopted := func(name string) bool {
		svc := h.mustGet(services, ns, name)
		sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
		refs := svc.GetOwnerReferences()
		return svc.GetLabels()["app.kubernetes.io/managed-by"] == "resyncd" && sel["resyncd.io/parent"] == name &&
			len(refs) == 1 && refs[0].Kind == "HttpService" && refs[0].Name == name
	}
	if !adopted("given") {
		t.Errorf("Service given, annotated, was not taken over: %v", h.mustGet(services, ns, "given").Object)
	}
	if adopted("later") {
		t.Fatal("Service later was taken over without the annotation")
	}
	if s := condition(t, h.mustGet(httpServices, ns, "given"), "Stalled"); s["status"] != "False" {
		t.Errorf("given Stalled = %v", s)
	}

	svc, err := h.cs.CoreV1().Services(ns).Get(t.Context(), "later", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Annotations = map[string]string{"resyncd.io/adopt": "true"}
	if _, err := h.cs.CoreV1().Services(ns).Update(t.Context(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync()
	if !adopted("later") {
		t.Errorf("Service later was not taken over in the pass after it was annotated")
	}
	if s := condition(t, h.mustGet(httpServices, ns, "later"), "Stalled"); s["status"] != "False" {
		t.Errorf("later Stalled = %v after adoption", s)
	}
}

// TestForeignController: Deployments of the parents' names controlled by
// another controller, one with resyncd's label (so the LIST returns it)
// and one without, are never written; each parent is Stalled naming the
// controller; their Services are created.
func TestForeignController(t *testing.T) {
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
