package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// rgdYAML is an RGD of the kind kind whose instances each get a ConfigMap
// holding spec.greeting and the edition (and, with extra, more templates).
func rgdYAML(name, kind, edition, extra string) string {
	return `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: ` + name + `
spec:
  schema:
    apiVersion: v1alpha1
    kind: ` + kind + `
    spec:
      greeting: string | default="hello"
    status:
      said: ${note.data.greeting}
  resources:
    - id: note
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-note
        data:
          greeting: ${schema.spec.greeting}
          edition: "` + edition + `"
` + extra
}

// applyRGD creates or replaces the RGD of doc.
func applyRGD(t *testing.T, dyn dynamic.Interface, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	rgds := dyn.Resource(rgdGVR)
	live, err := rgds.Get(t.Context(), u.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = rgds.Create(t.Context(), u, metav1.CreateOptions{})
	case err == nil:
		u.SetResourceVersion(live.GetResourceVersion())
		_, err = rgds.Update(t.Context(), u, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// rgdCondition is the condition typ of the RGD named name, and its state.
func rgdState(t *testing.T, dyn dynamic.Interface, name, typ string) (state string, cond map[string]any, rgd *unstructured.Unstructured) {
	t.Helper()
	u, err := dyn.Resource(rgdGVR).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return "", nil, nil
	}
	state, _, _ = unstructured.NestedString(u.Object, "status", "state")
	return state, fixture.Condition(u, typ), u
}

// TestRGDsFromCluster: with resourceGraphDefinitions enabled and no
// resource of its own, resyncd installs kro's RGD CRD, serves an RGD
// applied to the cluster (its CRD applied and Established, its instances
// converged, its status Active as kro writes it), refuses an invalid one
// and one that would widen the guards with a status that says why and
// nothing written, takes an edit at the next pass, and on a deletion stops
// the passes and deletes nothing.
func TestRGDsFromCluster(t *testing.T) {
	rc := env(t).Config
	dyn := dynamic.NewForConfigOrDie(rc)
	cs := kubernetes.NewForConfigOrDie(rc)
	const ns = "rgd-greetings"
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(kubeconfig, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	body := `metrics: {address: "` + testenv.FreeAddr(t) + `"}
health: {address: "` + testenv.FreeAddr(t) + `"}
resourceGraphDefinitions:
  enabled: true
  interval: 1s
`
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfgPath, kubeconfig, 5*time.Second) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("resyncd run: %v", err)
		}
	})

	crds := dyn.Resource(crdGVR)
	fixture.Eventually(t, "kro's RGD CRD installed", 30*time.Second, func() bool {
		_, err := crds.Get(t.Context(), "resourcegraphdefinitions.kro.run", metav1.GetOptions{})
		return err == nil
	})

	applyRGD(t, dyn, rgdYAML("greeting", "Greeting", "1", ""))
	fixture.Eventually(t, "RGD greeting Active, Ready at generation 1", 30*time.Second, func() bool {
		state, ready, _ := rgdState(t, dyn, "greeting", "Ready")
		return state == "Active" && ready["status"] == "True" && ready["observedGeneration"] == int64(1)
	})
	_, _, rgd := rgdState(t, dyn, "greeting", "Ready")
	if order, _, _ := unstructured.NestedStringSlice(rgd.Object, "status", "topologicalOrder"); !slices.Equal(order, []string{"note"}) {
		t.Errorf("topologicalOrder = %v, want [note]", order)
	}
	if !slices.Contains(rgd.GetFinalizers(), desired.KroFinalizer) {
		t.Errorf("finalizers = %v, want %s", rgd.GetFinalizers(), desired.KroFinalizer)
	}
	for _, typ := range []string{rgdGraphAccepted, rgdKindReady, rgdControllerReady} {
		if c := fixture.Condition(rgd, typ); c["status"] != "True" {
			t.Errorf("condition %s = %v, want True", typ, c)
		}
	}
	crd, err := crds.Get(t.Context(), "greetings.kro.run", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := fixture.Condition(crd, "Established"); c["status"] != "True" {
		t.Fatalf("CRD greetings.kro.run Established = %v", c)
	}

	greetings := dyn.Resource(schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "greetings"}).Namespace(ns)
	inst := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kro.run/v1alpha1", "kind": "Greeting",
		"metadata": map[string]any{"name": "one"}, "spec": map[string]any{}}}
	if _, err := greetings.Create(t.Context(), inst, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data := func(key string) string {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "one-note", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return cm.Data[key]
	}
	fixture.Eventually(t, "the instance's ConfigMap says hello, and its status too", 30*time.Second, func() bool {
		u, err := greetings.Get(t.Context(), "one", metav1.GetOptions{})
		said, _, _ := unstructured.NestedString(u.Object, "status", "said")
		return err == nil && data("greeting") == "hello" && data("edition") == "1" && said == "hello"
	})
	assertKroInstance(t, greetings, rgd, "one", cs, ns, "one-note", "note")

	// Deleted: kro's finalizer comes off, the garbage collector is left
	// the children (they name the instance in their ownerReferences).
	two := inst.DeepCopy()
	two.SetName("two")
	if _, err := greetings.Create(t.Context(), two, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "instance two served, with kro's finalizer", 30*time.Second, func() bool {
		u, err := greetings.Get(t.Context(), "two", metav1.GetOptions{})
		_, cmErr := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "two-note", metav1.GetOptions{})
		return err == nil && slices.Contains(u.GetFinalizers(), desired.KroFinalizer) && cmErr == nil
	})
	twoLive, _ := greetings.Get(t.Context(), "two", metav1.GetOptions{})
	if err := greetings.Delete(t.Context(), "two", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "instance two gone once resyncd takes kro's finalizer off", 30*time.Second, func() bool {
		_, err := greetings.Get(t.Context(), "two", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "two-note", metav1.GetOptions{}); err == nil {
		// No garbage collector runs here; the ConfigMap is its to delete.
		if refs := cm.OwnerReferences; len(refs) != 1 || refs[0].UID != twoLive.GetUID() {
			t.Errorf("the child of the deleted instance two: ownerReferences %v, want one to %s", refs, twoLive.GetUID())
		}
	}

	// The example of docs/examples, as README's make run applies it.
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, f := range []string{"webstack-rgd.yaml", "webstack.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "docs", "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatal(err)
		}
		if f == "webstack-rgd.yaml" {
			applyRGD(t, dyn, string(data))
			fixture.Eventually(t, "RGD webstack Active", 30*time.Second, func() bool {
				state, _, _ := rgdState(t, dyn, "webstack", "Ready")
				return state == "Active"
			})
			continue
		}
		ws := dyn.Resource(schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "webstacks"}).Namespace("shop")
		if _, err := ws.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fixture.Eventually(t, "the WebStack landing's ConfigMap and Deployment (3 replicas)", 30*time.Second, func() bool {
		cm, err1 := cs.CoreV1().ConfigMaps("shop").Get(t.Context(), "landing-settings", metav1.GetOptions{})
		d, err2 := cs.AppsV1().Deployments("shop").Get(t.Context(), "landing", metav1.GetOptions{})
		return err1 == nil && err2 == nil && cm.Data["MESSAGE"] == "welcome to the shop" && *d.Spec.Replicas == 3
	})
	// The Service reads the Deployment, whose readyWhen wants every
	// replica available: as under kro, it is not made before (no
	// controller-manager runs here to roll the Deployment out).
	webstacks := dyn.Resource(schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "webstacks"}).Namespace("shop")
	fixture.Eventually(t, "the WebStack IN_PROGRESS, waiting for its Deployment", 30*time.Second, func() bool {
		u, err := webstacks.Get(t.Context(), "landing", metav1.GetOptions{})
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return err == nil && state == "IN_PROGRESS" && fixture.Condition(u, "ResourcesReady")["status"] == "False"
	})
	if _, err := cs.CoreV1().Services("shop").Get(t.Context(), "landing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service landing, which reads a Deployment not ready: %v, want NotFound", err)
	}
	d, err := cs.AppsV1().Deployments("shop").Get(t.Context(), "landing", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status.Replicas, d.Status.AvailableReplicas, d.Status.ReadyReplicas, d.Status.UpdatedReplicas = 3, 3, 3, 3
	d.Status.ObservedGeneration = d.Generation
	if _, err := cs.AppsV1().Deployments("shop").UpdateStatus(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "the WebStack's Service, once its Deployment is available", 30*time.Second, func() bool {
		_, err := cs.CoreV1().Services("shop").Get(t.Context(), "landing", metav1.GetOptions{})
		return err == nil
	})

	// Invalid: nothing written but the RGD's status.
	applyRGD(t, dyn, rgdYAML("broken", "Broken", "x", `    - id: extra
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.spec.nosuch}
`))
	// Widening the guards: a cluster-scoped child, and one in another
	// namespace, which the configuration allows neither.
	applyRGD(t, dyn, rgdYAML("wide", "Wide", "x", `    - id: role
      template:
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRole
        metadata:
          name: ${schema.metadata.name}-reader
        rules: []
`))
	// And a child in another namespace: served, as an instance living
	// there may have it, and refused for every other instance.
	applyRGD(t, dyn, rgdYAML("reach", "Reach", "1", `    - id: elsewhere
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-reach
          namespace: kube-system
`))
	// A template that puts a bool where the child's schema wants a
	// string: refused before its CRD is applied.
	applyRGD(t, dyn, rgdYAML("mistyped", "Mistyped", "x", `    - id: typed
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.metadata.name}
        spec:
          selector: {matchLabels: {app: x}}
          template:
            metadata: {labels: {app: x}}
            spec:
              nodeSelector:
                gpu: ${schema.spec.greeting == "hello"}
              containers: [{name: app, image: nginx}]
`))
	// A second RGD of a kind another serves.
	applyRGD(t, dyn, rgdYAML("greeting-too", "Greeting", "1", ""))
	for name, want := range map[string][]string{
		"broken":       {rgdGraphAccepted, "InvalidResourceGraph", "ResourceGraphDefinition broken: resources[extra]", "nosuch"},
		"wide":         {rgdGraphAccepted, "InvalidResourceGraph", "ClusterRole is cluster-scoped", "set clusterScopedChildren: true in the configuration's resourceGraphDefinitions"},
		"mistyped":     {rgdGraphAccepted, "InvalidResourceGraph", "nodeSelector.gpu", "is of type bool"},
		"greeting-too": {rgdKindReady, "Failed", "greetings.v1alpha1.kro.run is served by ResourceGraphDefinition greeting already"},
	} {
		fixture.Eventually(t, "RGD "+name+" Inactive with "+want[0]+" False", 30*time.Second, func() bool {
			state, c, _ := rgdState(t, dyn, name, want[0])
			return state == "Inactive" && c["status"] == "False"
		})
		_, c, u := rgdState(t, dyn, name, want[0])
		if c["reason"] != want[1] {
			t.Errorf("%s: %s reason %v, want %s", name, want[0], c["reason"], want[1])
		}
		for _, part := range want[2:] {
			if msg, _ := c["message"].(string); !strings.Contains(msg, part) {
				t.Errorf("%s: %s message %q does not say %q", name, want[0], msg, part)
			}
		}
		if ready := fixture.Condition(u, "Ready"); ready["status"] != "False" || ready["reason"] != want[1] {
			t.Errorf("%s: Ready = %v, want False with the reason %s, as kro says", name, ready, want[1])
		}
		if slices.Contains(u.GetFinalizers(), desired.KroFinalizer) {
			t.Errorf("%s: an RGD not served has the finalizer %s", name, desired.KroFinalizer)
		}
	}
	fixture.Eventually(t, "RGD reach Active", 30*time.Second, func() bool {
		state, _, _ := rgdState(t, dyn, "reach", "Ready")
		return state == "Active"
	})
	reaches := dyn.Resource(schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "reaches"}).Namespace(ns)
	if _, err := reaches.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kro.run/v1alpha1", "kind": "Reach",
		"metadata": map[string]any{"name": "out"}, "spec": map[string]any{}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "the instance of reach in "+ns+" FAILED, its ResourcesReady False", 30*time.Second, func() bool {
		u, err := reaches.Get(t.Context(), "out", metav1.GetOptions{})
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return err == nil && state == "ERROR" && fixture.Condition(u, "ResourcesReady")["status"] == "False" &&
			fixture.Condition(u, "Ready")["status"] == "False"
	})
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "out-reach", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the child in kube-system of an instance in %s: %v, want NotFound", ns, err)
	}

	for _, crd := range []string{"brokens.kro.run", "wides.kro.run", "mistypeds.kro.run"} {
		if _, err := crds.Get(t.Context(), crd, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("CRD %s of an RGD refused: %v, want NotFound", crd, err)
		}
	}

	// Edited: the next pass renders the new template.
	applyRGD(t, dyn, rgdYAML("greeting", "Greeting", "2", ""))
	fixture.Eventually(t, "the edit reaches the ConfigMap, and the RGD is Ready at generation 2", 30*time.Second, func() bool {
		state, ready, _ := rgdState(t, dyn, "greeting", "Ready")
		return data("edition") == "2" && state == "Active" && ready["observedGeneration"] == int64(2)
	})

	// Deleted: the RGD goes, its passes stop, nothing else is deleted.
	for _, name := range []string{"greeting-too", "broken", "wide", "mistyped", "reach", "webstack", "greeting"} {
		if err := dyn.Resource(rgdGVR).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fixture.Eventually(t, "RGD greeting gone once its finalizer is removed", 30*time.Second, func() bool {
		_, err := dyn.Resource(rgdGVR).Get(t.Context(), "greeting", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "one-note", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the child of an instance of a deleted RGD: %v", err)
	}
	cm.Data["greeting"] = "changed by hand"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // four intervals: a pass would have repaired it
	if g := data("greeting"); g != "changed by hand" {
		t.Errorf("a child of an RGD deleted was written after the deletion: greeting %q", g)
	}
	if _, err := greetings.Get(t.Context(), "one", metav1.GetOptions{}); err != nil {
		t.Errorf("the instance of a deleted RGD: %v", err)
	}
	if _, err := crds.Get(t.Context(), "greetings.kro.run", metav1.GetOptions{}); err != nil {
		t.Errorf("the CRD of a deleted RGD: %v", err)
	}
}

// assertKroInstance checks that the instance name of rgd carries kro's
// finalizer and labels and shows kro's four conditions, True, and state
// ACTIVE, and that its child, the ConfigMap cmName of resource id, carries
// kro's labels naming it.
func assertKroInstance(t *testing.T, instances dynamic.ResourceInterface, rgd *unstructured.Unstructured, name string,
	cs kubernetes.Interface, ns, cmName, id string) {
	t.Helper()
	var u *unstructured.Unstructured
	fixture.Eventually(t, "instance "+name+" ACTIVE, with kro's conditions", 30*time.Second, func() bool {
		var err error
		u, err = instances.Get(t.Context(), name, metav1.GetOptions{})
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return err == nil && state == "ACTIVE"
	})
	if !slices.Contains(u.GetFinalizers(), desired.KroFinalizer) {
		t.Errorf("instance %s: finalizers %v, want %s", name, u.GetFinalizers(), desired.KroFinalizer)
	}
	for k, v := range map[string]string{"kro.run/owned": "true", "kro.run/resource-graph-definition-name": rgd.GetName(),
		"kro.run/resource-graph-definition-id": string(rgd.GetUID())} {
		if got := u.GetLabels()[k]; got != v {
			t.Errorf("instance %s: label %s = %q, want %q", name, k, got, v)
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var types []string
	for _, c := range conds {
		m := c.(map[string]any)
		types = append(types, m["type"].(string))
		if m["status"] != "True" || m["observedGeneration"] != u.GetGeneration() {
			t.Errorf("instance %s: condition %v, want True at generation %d", name, m, u.GetGeneration())
		}
	}
	if want := []string{"InstanceManaged", "GraphResolved", "ResourcesReady", "Ready"}; !slices.Equal(types, want) {
		t.Errorf("instance %s: conditions %v, want %v", name, types, want)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), cmName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"kro.run/owned": "true", "kro.run/instance-id": string(u.GetUID()), "kro.run/instance-name": name,
		"kro.run/instance-namespace": ns, "kro.run/instance-kind": u.GetKind(), "kro.run/instance-group": "kro.run",
		"kro.run/instance-version": "v1alpha1", "kro.run/node-id": id} {
		if got := cm.Labels[k]; got != v {
			t.Errorf("ConfigMap %s: label %s = %q, want %q", cmName, k, got, v)
		}
	}
}
