package daemon

import (
	"context"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

const migrationRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: migrated-app
spec:
  schema:
    apiVersion: v1alpha1
    kind: MigratedApp
    spec:
      image: string | default="nginx:1.27"
      replicas: integer | default=2
      message: string | default="hello"
    status:
      available: ${deployment.status.availableReplicas}
  resources:
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-settings
        data:
          MESSAGE: ${schema.spec.message}
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.metadata.name}
        spec:
          replicas: ${schema.spec.replicas}
          selector:
            matchLabels:
              app: ${schema.metadata.name}
          template:
            metadata:
              labels:
                app: ${schema.metadata.name}
            spec:
              containers:
                - name: app
                  image: ${schema.spec.image}
                  envFrom:
                    - configMapRef:
                        name: ${settings.metadata.name}
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: ${schema.metadata.name}
        spec:
          selector:
            app: ${schema.metadata.name}
          ports:
            - port: 80
              targetPort: 8080
`

// TestMigrationFromKro: kro's controller (v0.9.4, built by make kro)
// serves an RGD and makes an instance's children; it is stopped, and
// resyncd, with resourceGraphDefinitions.adoptFromKro, takes them over:
// the same objects (UIDs), none created or deleted, kro's field managers
// gone, the pass after writing nothing, drift repaired by resyncd; an
// object labelled as kro's child of another instance is not taken.
func TestMigrationFromKro(t *testing.T) {
	root := repoRoot(t)
	kro := filepath.Join(root, "bin", "kro")
	if _, err := os.Stat(kro); err != nil {
		t.Skipf("kro's controller is not built (%v): make kro builds it, and make conformance runs this test", err)
	}
	rc := env(t).Config
	dyn := dynamic.NewForConfigOrDie(rc)
	cs := kubernetes.NewForConfigOrDie(rc)
	const ns = "migration"
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(rc, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "bin", "kro-crds")}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}

	// kro serves the RGD and makes the instance's children.
	stopKro := startKro(t, kro, kubeconfig, filepath.Join(dir, "kro.log"))
	applyRGD(t, dyn, migrationRGD)
	apps := dyn.Resource(schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "migratedapps"}).Namespace(ns)
	fixture.Eventually(t, "kro serves the RGD migrated-app", 60*time.Second, func() bool {
		state, _, _ := rgdState(t, dyn, "migrated-app", "Ready")
		return state == "Active"
	})
	newApp := func(name string) {
		t.Helper()
		if _, err := apps.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kro.run/v1alpha1", "kind": "MigratedApp",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"message": "from " + name}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	newApp("shop")
	type child struct {
		gvr  schema.GroupVersionResource
		name string
	}
	children := []child{{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "shop-settings"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "shop"},
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "shop"}}
	get := func(c child) *unstructured.Unstructured {
		u, err := dyn.Resource(c.gvr).Namespace(ns).Get(t.Context(), c.name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return u
	}
	fixture.Eventually(t, "kro made the instance's three children", 90*time.Second, func() bool {
		for _, c := range children {
			if get(c) == nil {
				return false
			}
		}
		return true
	})
	before := map[string]types.UID{}
	var deploymentGeneration int64
	for _, c := range children {
		u := get(c)
		before[u.GetKind()] = u.GetUID()
		if u.GetKind() == "Deployment" {
			deploymentGeneration = u.GetGeneration()
		}
		if !slices.ContainsFunc(managersOf(u), func(m string) bool { return strings.HasPrefix(m, "kro.run/") }) {
			t.Fatalf("%s %s: field managers %v, none of kro's: not kro's child", u.GetKind(), u.GetName(), managersOf(u))
		}
	}
	shop, err := apps.Get(t.Context(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stopKro()

	// resyncd takes over.
	metricsAddr := testenv.FreeAddr(t)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(`metrics: {address: "`+metricsAddr+`"}
health: {address: "`+testenv.FreeAddr(t)+`"}
resourceGraphDefinitions:
  enabled: true
  interval: 1s
  adoptFromKro: true
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: resyncd stops, then the instances go.
	t.Cleanup(func() {
		for _, name := range []string{"shop", "other"} {
			_ = apps.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
		_ = dyn.Resource(rgdGVR).Delete(context.Background(), "migrated-app", metav1.DeleteOptions{})
	})
	startRun(t, cfgPath, kubeconfig)
	fixture.Eventually(t, "resyncd took the children over: its labels and ownerReference on each, kro's managers gone", 60*time.Second, func() bool {
		for _, c := range children {
			u := get(c)
			if u == nil || u.GetLabels()["app.kubernetes.io/managed-by"] != "resyncd" || len(u.GetOwnerReferences()) != 1 ||
				u.GetOwnerReferences()[0].UID != shop.GetUID() || slices.ContainsFunc(managersOf(u), func(m string) bool { return strings.HasPrefix(m, "kro.run/") }) {
				return false
			}
		}
		u, err := apps.Get(t.Context(), "shop", metav1.GetOptions{})
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return err == nil && state != "" && fixture.Condition(u, "InstanceManaged")["status"] == "True"
	})
	for _, c := range children {
		u := get(c)
		if u.GetUID() != before[u.GetKind()] {
			t.Errorf("%s %s re-created: UID %s, was %s", u.GetKind(), u.GetName(), u.GetUID(), before[u.GetKind()])
		}
		if u.GetKind() == "Deployment" && u.GetGeneration() != deploymentGeneration {
			t.Errorf("Deployment shop: generation %d, was %d under kro: its spec was changed, its Pods would roll", u.GetGeneration(), deploymentGeneration)
		}
	}

	// The pass after writes nothing: every object stays at its version
	// over three passes.
	versions := func() map[string]string {
		out := map[string]string{}
		for _, c := range children {
			u := get(c)
			out[u.GetKind()] = u.GetResourceVersion()
		}
		u, _ := apps.Get(t.Context(), "shop", metav1.GetOptions{})
		out["MigratedApp"] = u.GetResourceVersion()
		return out
	}
	settled := versions()
	time.Sleep(3 * time.Second)
	if now := versions(); !maps.Equal(settled, now) {
		t.Errorf("passes after the takeover wrote: resourceVersions %v, then %v", settled, now)
	}
	for _, op := range []string{"create", "delete"} {
		if n := appliesOf(t, metricsAddr, "migratedapps", op); n != 0 {
			t.Errorf("resyncd_apply_total{operation=%q} = %v for the instances of migrated-app, want 0", op, n)
		}
	}

	// Drift is resyncd's to repair now.
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "shop-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["MESSAGE"] = "changed by hand"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "the drift repaired by resyncd", 30*time.Second, func() bool {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "shop-settings", metav1.GetOptions{})
		return err == nil && cm.Data["MESSAGE"] == "from shop"
	})

	// An object labelled as kro's child of shop, under the name that the
	// instance other renders: not other's to take.
	newApp("other")
	decoy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-settings", Namespace: ns, Labels: map[string]string{
		"kro.run/owned": "true", "kro.run/instance-id": string(shop.GetUID()), "kro.run/instance-name": "shop",
		"kro.run/instance-kind": "MigratedApp", "kro.run/instance-group": "kro.run"}}, Data: map[string]string{"MESSAGE": "someone's"}}
	decoy, err = cs.CoreV1().ConfigMaps(ns).Create(t.Context(), decoy, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The decoy is left alone, and other says why.
	fixture.Eventually(t, "instance other FAILED: the name is taken", 30*time.Second, func() bool {
		u, err := apps.Get(t.Context(), "other", metav1.GetOptions{})
		return err == nil && fixture.Condition(u, "ResourcesReady")["reason"] == "NameTaken"
	})
	got, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "other-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["MESSAGE"] != "someone's" || got.ResourceVersion != decoy.ResourceVersion || len(got.OwnerReferences) != 0 {
		t.Errorf("the object labelled for another instance was written: %v, ownerReferences %v", got.Data, got.OwnerReferences)
	}
	if _, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "other", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment other, which refers to the taken ConfigMap: %v, want NotFound", err)
	}
}

// startKro starts kro's controller (the binary kro) against the API
// server of kubeconfig, its logs appended to logPath, with flags after
// its own; it is stopped by the returned func, or at the test's end.
func startKro(t *testing.T, kro, kubeconfig, logPath string, flags ...string) (stop func()) {
	t.Helper()
	cmd := exec.Command(kro, append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address", testenv.FreeAddr(t),
		"--health-probe-bind-address", testenv.FreeAddr(t)}, flags...)...)
	logs, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = logs.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

// startRun runs resyncd (run) with the configuration at cfgPath through
// kubeconfig until the returned func, or the test's end, stops it; an
// error it ends with fails the test.
func startRun(t *testing.T, cfgPath, kubeconfig string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfgPath, kubeconfig, 5*time.Second) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("resyncd run: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// managersOf lists the field managers of u.
func managersOf(u *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range u.GetManagedFields() {
		out = append(out, mf.Manager)
	}
	return out
}

// appliesOf sums resyncd_apply_total, as the metrics endpoint at addr
// serves it, over the series of operation op for a resource named
// resource.
func appliesOf(t *testing.T, addr, resource, op string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "resyncd_apply_total{") || !strings.Contains(line, `operation="`+op+`"`) || !strings.Contains(line, resource) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		sum += v
	}
	return sum
}
