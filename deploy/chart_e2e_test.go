package deploy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	"helm.sh/helm/v3/pkg/action"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/cluster"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/daemon"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/desired/graph"
	"github.com/resyncd/resyncd/engine"
	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// TestChartEndToEnd installs the chart with the Helm SDK, then runs resyncd
// in-process as the chart's ServiceAccount, with the configuration from the
// chart's ConfigMap: it converges HttpServices, takes the Lease of leader
// election (two replicas, one writer), records an Event — and may do nothing
// the configuration does not need.
func TestChartEndToEnd(t *testing.T) {
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, releaseNamespace, "chart-e2e")

	// helm install resyncd deploy/helm/resyncd -n resyncd-system \
	//   --set replicaCount=2 --set config.sharding.enabled=false
	cfg, sa := helmInstall(t, releaseName, releaseNamespace, map[string]any{"replicaCount": 2,
		"config": map[string]any{"sharding": map[string]any{"enabled": false}}})
	if !cfg.LeaderElection.Enabled || cfg.LeaderElection.Namespace != releaseNamespace {
		t.Errorf("leader election = %+v, want enabled in %s with 2 replicas", cfg.LeaderElection, releaseNamespace)
	}

	saKube := kubernetes.NewForConfigOrDie(sa)
	saDyn := dynamic.NewForConfigOrDie(sa)

	adminDyn := dynamic.NewForConfigOrDie(env(t).Config)
	for i, spec := range []map[string]any{
		{"image": "nginx:1.27", "port": int64(8080), "replicas": int64(2)},
		{"image": "nginx:1.27", "port": int64(8080), "resources": map[string]any{"requests": map[string]any{"cpu": "100m"}},
			"autoscaling": map[string]any{"maxReplicas": int64(4)}},
		{"image": "nginx:1.27", "port": int64(8080), // rejected by the Deployment's validation: an Event
			"resources": map[string]any{"requests": map[string]any{"cpu": "2"}, "limits": map[string]any{"cpu": "1"}}},
		{"image": "nginx:1.27", "port": int64(8080)}, // its Service's name is taken: read, never written
	} {
		fixture.CreateParent(t, adminDyn, "chart-e2e", fmt.Sprintf("app-%d", i), spec)
	}

	theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app-3", Namespace: "chart-e2e"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}}}
	theirs, err := admin.CoreV1().Services("chart-e2e").Create(ctx, theirs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: saKube.EventsV1()})
	b.StartRecordingToSink(ctx.Done())
	eng, err := engine.New(engine.SettingsFrom(cfg), engine.Options{REST: sa, Renderers: desired.DefaultRegistry(),
		Metrics: engine.NewMetrics(prometheus.NewRegistry()), Events: b.NewRecorder(scheme.Scheme, "resyncd")})
	if err != nil {
		t.Fatal(err)
	}

	// Lead as client-go's elector does (get, create, update the Lease), and
	// run two passes while leading.
	var reports []engine.ResourceReport
	var passErr error
	leCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	leaderelection.RunOrDie(leCtx, leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.LeaderElection.Namespace, Name: cfg.LeaderElection.LeaseName},
			Client:     saKube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "chart-e2e"},
		},
		LeaseDuration: cfg.LeaderElection.LeaseDuration, RenewDeadline: cfg.LeaderElection.RenewDeadline,
		RetryPeriod: cfg.LeaderElection.RetryPeriod, ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				defer cancel()
				for range 2 {
					rep, err := eng.SyncOnce(ctx)
					if err != nil {
						passErr = err
						return
					}
					reports = append(reports, rep.Resources[0])
				}
			},
			OnStoppedLeading: func() {},
		},
	})
	if passErr != nil {
		t.Fatalf("pass as the ServiceAccount: %v", passErr)
	}
	if len(reports) != 2 {
		t.Fatalf("never led: the ServiceAccount could not take the Lease (%d passes)", len(reports))
	}
	if r := reports[0]; r.Created != 6 || r.Statuses != 4 || r.Stalled != 2 || r.Failed != 1 || r.Taken != 1 {
		t.Errorf("first pass as the ServiceAccount: created %d, statuses %d, stalled %d, failed %d, taken %d; want 6, 4, 2, 1, 1",
			r.Created, r.Statuses, r.Stalled, r.Failed, r.Taken)
	}
	if r := reports[1]; r.Created+r.Updated+r.Deleted+r.Statuses != 0 || r.InSync != 6 || r.Taken != 1 {
		t.Errorf("second pass: %d writes, %d in sync, %d taken; want 0, 6, 1", r.Created+r.Updated+r.Deleted+r.Statuses, r.InSync, r.Taken)
	}
	if got, err := admin.CoreV1().Services("chart-e2e").Get(ctx, "app-3", metav1.GetOptions{}); err != nil || got.ResourceVersion != theirs.ResourceVersion {
		t.Errorf("the Service resyncd did not create was written: %v", err)
	}
	for _, name := range []string{"app-0", "app-1"} {
		if _, err := admin.AppsV1().Deployments("chart-e2e").Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Deployment %s: %v", name, err)
		}
	}
	if _, err := admin.AutoscalingV2().HorizontalPodAutoscalers("chart-e2e").Get(ctx, "app-1", metav1.GetOptions{}); err != nil {
		t.Errorf("HorizontalPodAutoscaler app-1: %v", err)
	}
	// The broadcaster writes asynchronously: the ServiceAccount records both Events.
	var reasons map[string]string
	fixture.Eventually(t, "Events for the stalled app-2 and app-3", 30*time.Second, func() bool {
		evs, err := admin.EventsV1().Events("chart-e2e").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		reasons = map[string]string{}
		for _, ev := range evs.Items {
			reasons[ev.Regarding.Name] = ev.Reason
		}
		return reasons["app-2"] == "Invalid" && reasons["app-3"] == "NameTaken"
	})

	// Least privilege: nothing the configuration does not need.
	forbidden := map[string]error{}
	_, forbidden["list secrets"] = saKube.CoreV1().Secrets("chart-e2e").List(ctx, metav1.ListOptions{})
	_, forbidden["get a secret"] = saKube.CoreV1().Secrets(releaseNamespace).Get(ctx, "sh.helm.release.v1.resyncd.v1", metav1.GetOptions{})
	_, forbidden["create a ConfigMap"] = saKube.CoreV1().ConfigMaps("chart-e2e").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	_, forbidden["update an HttpService"] = saDyn.Resource(httpServices).Namespace("chart-e2e").Update(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "resyncd.io/v1alpha1", "kind": "HttpService",
			"metadata": map[string]any{"name": "app-0", "namespace": "chart-e2e"}, "spec": map[string]any{"image": "x", "port": int64(1)}}},
		metav1.UpdateOptions{})
	_, forbidden["create a Lease elsewhere"] = saKube.CoordinationV1().Leases("chart-e2e").Create(ctx,
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	wantForbidden(t, forbidden)
}

// helmInstall installs the chart as release in namespace with vals, and
// returns the configuration of its ConfigMap, as the pod would read it
// from its volume, and a client configuration that is the release's
// ServiceAccount, as the API server authenticates a pod's token.
func helmInstall(t *testing.T, release, namespace string, vals map[string]any) (*config.Config, *rest.Config) {
	t.Helper()
	ctx := t.Context()
	fullname, sa := helmInstallOnly(t, release, namespace, vals)
	cm, err := kubernetes.NewForConfigOrDie(env(t).Config).CoreV1().ConfigMaps(namespace).Get(ctx, fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// As the pod's volume holds them: every key a file.
	dir := t.TempDir()
	for name, data := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, err := config.Load(cfgPath, config.Options{Renderers: desired.DefaultRegistry().Names()})
	if err != nil {
		t.Fatalf("the chart's configuration does not load: %v", err)
	}
	return cfg, sa
}

// helmInstallOnly installs the chart as release in namespace with vals,
// and returns the release's full name and a client configuration that is
// its ServiceAccount, as the API server authenticates a pod's token.
func helmInstallOnly(t *testing.T, release, namespace string, vals map[string]any) (string, *rest.Config) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	getter := genericclioptions.NewConfigFlags(false)
	getter.KubeConfig = &kubeconfig
	getter.Namespace = &namespace
	helmCfg := &action.Configuration{}
	if err := helmCfg.Init(getter, namespace, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(helmCfg)
	install.ReleaseName, install.Namespace = release, namespace
	if _, err := install.Run(loadChart(t), vals); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	fullname := release // the chart's resyncd.fullname
	if !strings.Contains(release, "resyncd") {
		fullname = release + "-resyncd"
	}
	sa := rest.CopyConfig(env(t).Config)
	sa.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", namespace, fullname),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	return fullname, sa
}

// TestChartTarget installs the chart as a target cluster's: no daemon, no
// configuration, no Service; a ServiceAccount with a token Secret; and
// RBAC with which a pass, made with a token of that ServiceAccount as a
// resyncd elsewhere would, converges an HttpService.
func TestChartTarget(t *testing.T) {
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "target-system", "target-app")
	fullname, _ := helmInstallOnly(t, "target", "target-system", map[string]any{"target": map[string]any{"enabled": true}})
	deps, err := admin.AppsV1().Deployments("target-system").List(ctx, metav1.ListOptions{})
	if err != nil || len(deps.Items) != 0 {
		t.Errorf("a target release made %d Deployments (%v), want none", len(deps.Items), err)
	}
	if _, err := admin.CoreV1().ConfigMaps("target-system").Get(ctx, fullname, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap %s: %v, want none", fullname, err)
	}
	secret, err := admin.CoreV1().Secrets("target-system").Get(ctx, fullname+"-token", metav1.GetOptions{})
	if err != nil || secret.Type != corev1.SecretTypeServiceAccountToken || secret.Annotations[corev1.ServiceAccountNameKey] != fullname {
		t.Fatalf("token Secret: %v, %+v", err, secret)
	}
	// The token controller (kube-controller-manager) would fill the Secret;
	// this control plane has none: a token from the TokenRequest API is the
	// same ServiceAccount's.
	tr, err := admin.CoreV1().ServiceAccounts("target-system").CreateToken(ctx, fullname, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	remote := &rest.Config{Host: env(t).Config.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: env(t).Config.CAData}}
	fixture.CreateParent(t, dynamic.NewForConfigOrDie(env(t).Config), "target-app", "web", map[string]any{"image": "nginx", "port": int64(8080)})
	fixture.Eventually(t, "the ClusterRole in force", 30*time.Second, func() bool {
		_, err := dynamic.NewForConfigOrDie(remote).Resource(httpServices).Namespace("target-app").List(ctx, metav1.ListOptions{})
		return err == nil
	})
	cfg := config.Default()
	r := config.DefaultResource()
	r.Group, r.Version, r.Resource, r.Renderer, r.Namespaces = "resyncd.io", "v1alpha1", "httpservices", desired.HTTPServiceRendererName, []string{"target-app"}
	cfg.Resources = []config.Resource{r}
	eng, err := engine.New(engine.SettingsFrom(&cfg), engine.Options{REST: remote, Renderers: desired.DefaultRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eng.SyncOnce(ctx)
	if err != nil {
		t.Fatalf("pass with the target's token: %v", err)
	}
	if r := rep.Resources[0]; r.Created != 2 || r.Failed != 0 || r.Statuses != 1 {
		t.Errorf("created %d, failed %d, statuses %d; want 2, 0, 1", r.Created, r.Failed, r.Statuses)
	}
	if _, err := admin.AppsV1().Deployments("target-app").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("Deployment target-app/web: %v", err)
	}
}

// TestChartNamespacedRBAC: when every watched resource lists its
// namespaces, the chart grants Roles in those namespaces only. As the
// release's ServiceAccount, a pass converges a parent in its namespace,
// and the same requests elsewhere, or cluster-wide, are Forbidden.
func TestChartNamespacedRBAC(t *testing.T) {
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "scoped-system", "scoped-in", "scoped-out")
	cfg, sa := helmInstall(t, "scoped", "scoped-system", map[string]any{"config": map[string]any{"resources": []any{
		map[string]any{"group": "resyncd.io", "version": "v1alpha1", "resource": "httpservices", "renderer": "httpservice", "namespaces": []any{"scoped-in"}},
	}}})
	if _, err := admin.RbacV1().ClusterRoles().Get(ctx, "scoped-resyncd", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole scoped-resyncd: %v, want none", err)
	}
	adminDyn := dynamic.NewForConfigOrDie(env(t).Config)
	for _, ns := range []string{"scoped-in", "scoped-out"} {
		fixture.CreateParent(t, adminDyn, ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})
	}
	saKube, saDyn := kubernetes.NewForConfigOrDie(sa), dynamic.NewForConfigOrDie(sa)
	// The authorizer learns of new Roles from its cache, a moment later.
	fixture.Eventually(t, "the Role in force", 30*time.Second, func() bool {
		_, err := saDyn.Resource(httpServices).Namespace("scoped-in").List(ctx, metav1.ListOptions{})
		return err == nil
	})
	rep := passAs(t, cfg, sa, desired.DefaultRegistry())
	if r := rep.Resources[0]; r.Created != 2 || r.Failed != 0 {
		t.Errorf("created %d, failed %d; want 2, 0", r.Created, r.Failed)
	}
	forbidden := map[string]error{}
	_, forbidden["list Deployments in scoped-out"] = saKube.AppsV1().Deployments("scoped-out").List(ctx, metav1.ListOptions{})
	_, forbidden["list Deployments everywhere"] = saKube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	_, forbidden["list HttpServices in scoped-out"] = saDyn.Resource(httpServices).Namespace("scoped-out").List(ctx, metav1.ListOptions{})
	_, forbidden["get a Service in scoped-out"] = saKube.CoreV1().Services("scoped-out").Get(ctx, "web", metav1.GetOptions{})
	wantForbidden(t, forbidden)
	if _, err := admin.AppsV1().Deployments("scoped-out").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment in scoped-out: %v, want none", err)
	}
}

// TestChartGraph installs the chart with a graph in its values: the
// graph is mounted beside the configuration, and the RBAC the chart derives
// from its templates lets a pass as the release's ServiceAccount converge
// a WebApp (ConfigMap, then Deployment, and Service) in its namespace.
func TestChartGraph(t *testing.T) {
	ctx := t.Context()
	fixture.InstallWebApps(t, env(t).Config)
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "graph-system", "chart-graph")
	cfg, sa := helmInstall(t, "graphs", "graph-system", valueSets["graph"])
	if g := cfg.Resources[0].GraphPath(); filepath.Base(g) != "webapp.yaml" {
		t.Fatalf("graph path = %q", g)
	}
	saDyn := dynamic.NewForConfigOrDie(sa)
	fixture.Eventually(t, "the Role in force", 30*time.Second, func() bool {
		_, err := saDyn.Resource(fixture.WebApps).Namespace("chart-graph").List(ctx, metav1.ListOptions{})
		return err == nil
	})
	g, err := graph.Load(cfg.Resources[0].GraphPath(), graph.Options{
		Schemas: &resolver.ClientDiscoveryResolver{Discovery: discovery.NewDiscoveryClientForConfigOrDie(sa)},
		Parent:  fixture.WebApps.GroupVersion().WithKind("WebApp")})
	if err != nil {
		t.Fatalf("the mounted graph, typed as the ServiceAccount: %v", err)
	}
	reg := desired.DefaultRegistry()
	reg[cfg.Resources[0].RendererKey()] = g
	webapp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": "site", "namespace": "chart-graph"},
		"spec":     map[string]any{"image": "nginx", "expose": true},
	}}
	if _, err := dynamic.NewForConfigOrDie(env(t).Config).Resource(fixture.WebApps).Namespace("chart-graph").Create(ctx, webapp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.SettingsFrom(cfg), engine.Options{REST: sa, Renderers: reg})
	if err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		rep, err := eng.SyncOnce(ctx)
		if err != nil || rep.Resources[0].Failed != 0 {
			t.Fatalf("pass %d as the ServiceAccount: %v, %+v", pass+1, err, rep.Resources[0])
		}
	}
	if _, err := admin.CoreV1().ConfigMaps("chart-graph").Get(ctx, "site-config", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := admin.AppsV1().Deployments("chart-graph").Get(ctx, "site", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := admin.CoreV1().Services("chart-graph").Get(ctx, "site", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}

// TestChartGraphKinds installs the chart with HttpServices watched in
// every namespace and a graph of a Secret, Endpoints and a NetworkPolicy
// watched in one: a pass as the release's ServiceAccount converges a WebApp
// there with the rules the chart derived (resource names as the API server
// serves them), while Secrets elsewhere, and every cluster-scoped kind,
// stay out of its reach.
func TestChartGraphKinds(t *testing.T) {
	ctx := t.Context()
	fixture.InstallWebApps(t, env(t).Config)
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "kinds-system", "kinds-in", "kinds-out")
	// tenant.yaml without its Widget, a kind this API server does not serve.
	tenant := readYAML("../testdata/graphs/tenant.yaml")
	spec := tenant["spec"].(map[string]any)
	spec["resources"] = spec["resources"].([]any)[:3]
	cfg, sa := helmInstall(t, "kinds", "kinds-system", map[string]any{
		"graphs": map[string]any{"tenant.yaml": tenant},
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "resyncd.io", "version": "v1alpha1", "resource": "httpservices", "renderer": "httpservice"},
			map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "tenant.yaml", "namespaces": []any{"kinds-in"}},
		}},
	})
	saKube, saDyn := kubernetes.NewForConfigOrDie(sa), dynamic.NewForConfigOrDie(sa)
	fixture.Eventually(t, "the Role in force", 30*time.Second, func() bool {
		_, err := saDyn.Resource(fixture.WebApps).Namespace("kinds-in").List(ctx, metav1.ListOptions{})
		return err == nil
	})
	res := cfg.Resources[1]
	reg := graphRegistry(t, res, sa)
	adminDyn := dynamic.NewForConfigOrDie(env(t).Config)
	for _, ns := range []string{"kinds-in", "kinds-out"} {
		webapp := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
			"metadata": map[string]any{"name": "site", "namespace": ns},
			"spec":     map[string]any{"image": "nginx"},
		}}
		if _, err := adminDyn.Resource(fixture.WebApps).Namespace(ns).Create(ctx, webapp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rep := passAs(t, cfg, sa, reg)
	if r := rep.Resources[1]; r.Created != 3 || r.Failed != 0 || r.Stalled != 0 {
		t.Errorf("WebApps: created %d, failed %d, stalled %d; want 3, 0, 0", r.Created, r.Failed, r.Stalled)
	}
	if _, err := admin.CoreV1().Secrets("kinds-in").Get(ctx, "site-credentials", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	endpoints := schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
	if _, err := adminDyn.Resource(endpoints).Namespace("kinds-in").Get(ctx, "site-external", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := admin.NetworkingV1().NetworkPolicies("kinds-in").Get(ctx, "site", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := admin.CoreV1().Secrets("kinds-out").Get(ctx, "site-credentials", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret in kinds-out: %v, want none (the resource does not watch it)", err)
	}
	forbidden := map[string]error{}
	_, forbidden["list Secrets in kinds-out"] = saKube.CoreV1().Secrets("kinds-out").List(ctx, metav1.ListOptions{})
	_, forbidden["list Secrets everywhere"] = saKube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	_, forbidden["list NetworkPolicies everywhere"] = saKube.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	_, forbidden["list ClusterRoles"] = saKube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	_, forbidden["list Namespaces"] = saKube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	wantForbidden(t, forbidden)
}

// TestChartOutsideKinds installs the chart with a graph whose children
// leave their parent's namespace (testdata/graphs/outside.yaml), its
// resource allowing other namespaces by a glob, and cluster-scoped
// children (the ClusterRole child grants reading a ConfigMap, which the
// API server lets resyncd grant only while it holds that itself in every
// namespace, as the glob has the chart grant it): passes
// as the release's ServiceAccount create the ConfigMap there and the
// ClusterRole, write nothing once converged, and prune both after the
// parent is deleted, with only the rules the chart derived; kinds no
// template places outside stay out of reach beyond the watched namespace.
func TestChartOutsideKinds(t *testing.T) {
	ctx := t.Context()
	fixture.InstallWebApps(t, env(t).Config)
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "outside-system", "outside-in", "outside-shared")
	cfg, sa := helmInstall(t, "outside", "outside-system", map[string]any{
		"graphs": map[string]any{"outside.yaml": readYAML("../testdata/graphs/outside.yaml")},
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "outside.yaml",
				"namespaces": []any{"outside-in"}, "childNamespaces": []any{"outside-shared*"}, "clusterScopedChildren": true},
		}},
	})
	saKube := kubernetes.NewForConfigOrDie(sa)
	fixture.Eventually(t, "the ClusterRole in force", 30*time.Second, func() bool {
		_, err := saKube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		return err == nil
	})
	res := cfg.Resources[0]
	reg := graphRegistry(t, res, sa)
	adminDyn := dynamic.NewForConfigOrDie(env(t).Config)
	webapp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": "site", "namespace": "outside-in"},
		"spec":     map[string]any{"image": "nginx", "expose": true, "tags": []any{"outside-shared"}},
	}}
	if _, err := adminDyn.Resource(fixture.WebApps).Namespace("outside-in").Create(ctx, webapp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.SettingsFrom(cfg), engine.Options{REST: sa, Renderers: reg})
	if err != nil {
		t.Fatal(err)
	}
	pass := func() engine.ResourceReport {
		t.Helper()
		rep, err := eng.SyncOnce(ctx)
		if err != nil {
			t.Fatalf("pass as the ServiceAccount: %v", err)
		}
		return rep.Resources[0]
	}
	created := pass().Created + pass().Created // the ClusterRole waits for the ConfigMap it names
	if r := pass(); created != 3 || r.Created+r.Updated+r.Deleted+r.Statuses+r.Failed+r.Stalled != 0 {
		t.Errorf("created %d, want 3; the pass after: %+v, want nothing written", created, r)
	}
	if _, err := admin.CoreV1().ConfigMaps("outside-shared").Get(ctx, "outside-in-site", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Get(ctx, "outside-in-site-reader", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if err := adminDyn.Resource(fixture.WebApps).Namespace("outside-in").Delete(ctx, "site", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := pass(); r.Deleted != 3 || r.Failed != 0 {
		t.Errorf("after the parent was deleted: deleted %d, failed %d; want 3, 0", r.Deleted, r.Failed)
	}
	if _, err := admin.CoreV1().ConfigMaps("outside-shared").Get(ctx, "outside-in-site", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the shared ConfigMap after its parent: %v, want deleted", err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Get(ctx, "outside-in-site-reader", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRole after its parent: %v, want deleted", err)
	}
	forbidden := map[string]error{}
	_, forbidden["list Secrets everywhere"] = saKube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	_, forbidden["list Namespaces"] = saKube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	_, forbidden["list ClusterRoleBindings"] = saKube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	wantForbidden(t, forbidden)
}

// TestChartOutsideNamed installs the chart with a graph that places a
// Secret in the namespace the parent's spec names, its resource allowing
// one namespace by name: the chart grants Secrets by Roles in the watched
// namespace and that one, and nothing cluster-wide; passes as the
// release's ServiceAccount, which LIST the Secrets in those two namespaces
// only, create the Secret there, write nothing once converged and prune it
// after the parent is deleted; a Secret in any other namespace is out of
// the ServiceAccount's reach.
func TestChartOutsideNamed(t *testing.T) {
	ctx := t.Context()
	fixture.InstallWebApps(t, env(t).Config)
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "named-system", "named-in", "named-shared", "named-other")
	g := map[string]any{"apiVersion": "resyncd.io/v1alpha1", "kind": "Graph", "metadata": map[string]any{"name": "named"},
		"spec": map[string]any{"resources": []any{
			map[string]any{"id": "home", "template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "${schema.metadata.name}-home"}, "data": map[string]any{"image": "${schema.spec.image}"}}},
			map[string]any{"id": "shared", "template": map[string]any{"apiVersion": "v1", "kind": "Secret",
				"metadata":   map[string]any{"name": "${schema.metadata.namespace}-${schema.metadata.name}", "namespace": "${schema.spec.tags[0]}"},
				"stringData": map[string]any{"image": "${schema.spec.image}"}}},
		}}}
	cfg, sa := helmInstall(t, "named", "named-system", map[string]any{
		"graphs": map[string]any{"named.yaml": g},
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "named.yaml",
				"namespaces": []any{"named-in"}, "childNamespaces": []any{"named-shared"}},
		}},
	})
	saKube := kubernetes.NewForConfigOrDie(sa)
	fixture.Eventually(t, "the Roles in force", 30*time.Second, func() bool {
		_, err1 := saKube.CoreV1().Secrets("named-in").List(ctx, metav1.ListOptions{})
		_, err2 := saKube.CoreV1().Secrets("named-shared").List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil
	})
	res := cfg.Resources[0]
	reg := graphRegistry(t, res, sa)
	adminDyn := dynamic.NewForConfigOrDie(env(t).Config)
	webapp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": "site", "namespace": "named-in"},
		"spec":     map[string]any{"image": "nginx", "tags": []any{"named-shared"}},
	}}
	if _, err := adminDyn.Resource(fixture.WebApps).Namespace("named-in").Create(ctx, webapp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.SettingsFrom(cfg), engine.Options{REST: sa, Renderers: reg})
	if err != nil {
		t.Fatal(err)
	}
	pass := func() engine.ResourceReport {
		t.Helper()
		rep, err := eng.SyncOnce(ctx)
		if err != nil {
			t.Fatalf("pass as the ServiceAccount: %v", err)
		}
		return rep.Resources[0]
	}
	if r := pass(); r.Created != 2 || r.Failed+r.Stalled != 0 {
		t.Errorf("the first pass: %+v, want 2 created", r)
	}
	if r := pass(); r.Created+r.Updated+r.Deleted+r.Statuses+r.Failed+r.Stalled != 0 {
		t.Errorf("the pass after: %+v, want nothing written", r)
	}
	if _, err := admin.CoreV1().Secrets("named-shared").Get(ctx, "named-in-site", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if err := adminDyn.Resource(fixture.WebApps).Namespace("named-in").Delete(ctx, "site", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := pass(); r.Deleted != 2 || r.Failed != 0 {
		t.Errorf("after the parent was deleted: deleted %d, failed %d; want 2, 0", r.Deleted, r.Failed)
	}
	if _, err := admin.CoreV1().Secrets("named-shared").Get(ctx, "named-in-site", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the shared Secret after its parent: %v, want deleted", err)
	}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "planted", Namespace: "named-other"}}
	forbidden := map[string]error{}
	_, forbidden["list Secrets everywhere"] = saKube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	_, forbidden["create a Secret in another namespace"] = saKube.CoreV1().Secrets("named-other").Create(ctx, other, metav1.CreateOptions{})
	_, forbidden["list ConfigMaps in another namespace"] = saKube.CoreV1().ConfigMaps("named-other").List(ctx, metav1.ListOptions{})
	_, forbidden["list ClusterRoles"] = saKube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	wantForbidden(t, forbidden)
}

// TestChartExternalRef installs the chart with a graph that reads a
// ConfigMap in a namespace it does not watch: a pass as the release's
// ServiceAccount reads it and writes the child that uses it, with the
// rules the chart derived, which let it read that namespace's ConfigMaps
// and write none of them.
func TestChartExternalRef(t *testing.T) {
	ctx := t.Context()
	fixture.InstallWebApps(t, env(t).Config)
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "ext-system", "ext-in", "ext-platform")
	platform := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: "ext-platform"}, Data: map[string]string{"region": "eu-west-1"}}
	if _, err := admin.CoreV1().ConfigMaps("ext-platform").Create(ctx, platform, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := map[string]any{"apiVersion": "resyncd.io/v1alpha1", "kind": "Graph", "metadata": map[string]any{"name": "ext"},
		"spec": map[string]any{"resources": []any{
			map[string]any{"id": "platform", "externalRef": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "platform", "namespace": "ext-platform"}}},
			map[string]any{"id": "config", "template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "${schema.metadata.name}-config"}, "data": map[string]any{"region": "${platform.data.region}"}}},
		}}}
	cfg, sa := helmInstall(t, "ext", "ext-system", map[string]any{
		"graphs": map[string]any{"ext.yaml": g},
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "ext.yaml", "namespaces": []any{"ext-in"}},
		}},
	})
	saKube := kubernetes.NewForConfigOrDie(sa)
	fixture.Eventually(t, "the Roles in force", 30*time.Second, func() bool {
		_, err1 := saKube.CoreV1().ConfigMaps("ext-in").List(ctx, metav1.ListOptions{})
		_, err2 := saKube.CoreV1().ConfigMaps("ext-platform").List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil
	})
	res := cfg.Resources[0]
	reg := graphRegistry(t, res, sa)
	createWebApp(t, "ext-in", "site", map[string]any{"image": "nginx"})
	rep := passAs(t, cfg, sa, reg)
	if r := rep.Resources[0]; r.Created != 1 || r.Failed != 0 || r.Stalled != 0 {
		t.Errorf("created %d, failed %d, stalled %d; want 1, 0, 0", r.Created, r.Failed, r.Stalled)
	}
	got, err := admin.CoreV1().ConfigMaps("ext-in").Get(ctx, "site-config", metav1.GetOptions{})
	if err != nil || got.Data["region"] != "eu-west-1" {
		t.Errorf("site-config: %v %v, want region eu-west-1 read from ext-platform", got.Data, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written", Namespace: "ext-platform"}}
	forbidden := map[string]error{}
	_, forbidden["create a ConfigMap in ext-platform"] = saKube.CoreV1().ConfigMaps("ext-platform").Create(ctx, cm, metav1.CreateOptions{})
	forbidden["delete the external ConfigMap"] = saKube.CoreV1().ConfigMaps("ext-platform").Delete(ctx, "platform", metav1.DeleteOptions{})
	_, forbidden["list ConfigMaps everywhere"] = saKube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	wantForbidden(t, forbidden)
}

// TestChartExternalNamespaces installs the chart with a graph whose
// external reference takes its namespace from the parent's spec, and
// externalNamespaces naming one namespace: a pass as the release's
// ServiceAccount reads the ConfigMap there and writes the child with its
// value, with the Role the chart made there, which lets it read that
// namespace's ConfigMaps, write none of them, and read no other
// namespace's.
func TestChartExternalNamespaces(t *testing.T) {
	ctx := t.Context()
	fixture.InstallWebApps(t, env(t).Config)
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "extns-system", "extns-in", "extns-bank", "extns-other")
	bank := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rates", Namespace: "extns-bank"}, Data: map[string]string{"rate": "4.5"}}
	if _, err := admin.CoreV1().ConfigMaps("extns-bank").Create(ctx, bank, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := map[string]any{"apiVersion": "resyncd.io/v1alpha1", "kind": "Graph", "metadata": map[string]any{"name": "extns"},
		"spec": map[string]any{"resources": []any{
			map[string]any{"id": "rates", "externalRef": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "rates", "namespace": "${schema.spec.tags[0]}"}}},
			map[string]any{"id": "config", "template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "${schema.metadata.name}-config"}, "data": map[string]any{"rate": "${rates.data.rate}"}}},
		}}}
	cfg, sa := helmInstall(t, "extns", "extns-system", map[string]any{
		"graphs": map[string]any{"extns.yaml": g},
		"config": map[string]any{"resources": []any{
			map[string]any{"group": "example.resyncd.io", "version": "v1alpha1", "resource": "webapps", "graph": "extns.yaml",
				"namespaces": []any{"extns-in"}, "externalNamespaces": []any{"extns-bank"}},
		}},
	})
	saKube := kubernetes.NewForConfigOrDie(sa)
	fixture.Eventually(t, "the Roles in force", 30*time.Second, func() bool {
		_, err1 := saKube.CoreV1().ConfigMaps("extns-in").List(ctx, metav1.ListOptions{})
		_, err2 := saKube.CoreV1().ConfigMaps("extns-bank").List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil
	})
	res := cfg.Resources[0]
	if !slices.Equal(res.ExternalNamespaces, []string{"extns-bank"}) {
		t.Errorf("externalNamespaces in the chart's configuration = %v, want [extns-bank]", res.ExternalNamespaces)
	}
	reg := graphRegistry(t, res, sa)
	createWebApp(t, "extns-in", "loan", map[string]any{"image": "nginx", "tags": []any{"extns-bank"}})
	rep := passAs(t, cfg, sa, reg)
	if r := rep.Resources[0]; r.Created != 1 || r.Failed != 0 || r.Stalled != 0 {
		t.Errorf("created %d, failed %d, stalled %d; want 1, 0, 0", r.Created, r.Failed, r.Stalled)
	}
	got, err := admin.CoreV1().ConfigMaps("extns-in").Get(ctx, "loan-config", metav1.GetOptions{})
	if err != nil || got.Data["rate"] != "4.5" {
		t.Errorf("loan-config: %v %v, want rate 4.5 read from extns-bank", got.Data, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written", Namespace: "extns-bank"}}
	forbidden := map[string]error{}
	_, forbidden["create a ConfigMap in extns-bank"] = saKube.CoreV1().ConfigMaps("extns-bank").Create(ctx, cm, metav1.CreateOptions{})
	_, forbidden["list ConfigMaps in extns-other"] = saKube.CoreV1().ConfigMaps("extns-other").List(ctx, metav1.ListOptions{})
	_, forbidden["list ConfigMaps everywhere"] = saKube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	wantForbidden(t, forbidden)
}

// TestChartKroGraph installs the chart with a kro ResourceGraphDefinition
// named alone, installCRD set: the configuration it renders watches the
// parent kind spec.schema declares, and the release's ServiceAccount may
// apply that CRD as resyncd does at start (create it, read it, apply it
// again) and list and patch the parents — but touch no other CRD.
func TestChartKroGraph(t *testing.T) {
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	for _, ns := range []string{"kro-system", "shop"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cfg, sa := helmInstall(t, "kro", "kro-system", valueSets["kro-graph"])
	r := cfg.Resources[0]
	if r.Name() != "storefronts.v1alpha1.kro.run" || !r.InstallCRD {
		t.Fatalf("watched resource %s, installCRD %v", r.Name(), r.InstallCRD)
	}
	crd, err := graph.CRDOfFile(r.GraphPath())
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := graph.CRDManifest(crd)
	if err != nil {
		t.Fatal(err)
	}
	body, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		t.Fatal(err)
	}
	crds := dynamic.NewForConfigOrDie(sa).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	force := false
	apply := func() error {
		_, err := crds.Patch(ctx, crd.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "resyncd", Force: &force})
		return err
	}
	fixture.Eventually(t, "the ClusterRole in force", 30*time.Second, func() bool {
		_, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		return err == nil || apierrors.IsNotFound(err)
	})
	if err := apply(); err != nil {
		t.Fatalf("create the CRD as the ServiceAccount: %v", err)
	}
	if err := apply(); err != nil {
		t.Fatalf("apply the CRD again as the ServiceAccount: %v", err)
	}
	if _, err := crds.Get(ctx, "httpservices.resyncd.io", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("get another CRD: %v, want forbidden", err)
	}
	gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	fixture.Eventually(t, "storefronts served", 30*time.Second, func() bool {
		_, err := dynamic.NewForConfigOrDie(sa).Resource(gvr).Namespace("shop").List(ctx, metav1.ListOptions{})
		return err == nil
	})
}

// createNamespaces creates each namespace of names as the administrator.
func createNamespaces(t *testing.T, admin kubernetes.Interface, names ...string) {
	t.Helper()
	for _, ns := range names {
		if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// graphRegistry is the registry with the graph res names, mounted by the
// chart and typed as the ServiceAccount sa, as resyncd in the pod loads it.
func graphRegistry(t *testing.T, res config.Resource, sa *rest.Config) desired.Registry {
	t.Helper()
	g, err := graph.Load(res.GraphPath(), graph.Options{
		Schemas: &resolver.ClientDiscoveryResolver{Discovery: discovery.NewDiscoveryClientForConfigOrDie(sa)},
		Parent:  fixture.WebApps.GroupVersion().WithKind("WebApp")})
	if err != nil {
		t.Fatalf("the mounted graph, typed as the ServiceAccount: %v", err)
	}
	reg := desired.DefaultRegistry()
	reg[res.RendererKey()] = g
	return reg
}

// wantForbidden fails for each request of forbidden the API server did not
// refuse as Forbidden.
func wantForbidden(t *testing.T, forbidden map[string]error) {
	t.Helper()
	for what, err := range forbidden {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: got %v, want Forbidden", what, err)
		}
	}
}

// passAs runs one pass of cfg as the client sa (the release's
// ServiceAccount) with the renderers reg; the pass must not fail.
func passAs(t *testing.T, cfg *config.Config, sa *rest.Config, reg desired.Registry) engine.Report {
	t.Helper()
	eng, err := engine.New(engine.SettingsFrom(cfg), engine.Options{REST: sa, Renderers: reg})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eng.SyncOnce(t.Context())
	if err != nil {
		t.Fatalf("pass as the ServiceAccount: %v", err)
	}
	return rep
}

// createWebApp creates the WebApp ns/name with spec, as the cluster's admin.
func createWebApp(t *testing.T, ns, name string, spec map[string]any) {
	t.Helper()
	webapp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.resyncd.io/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}
	if _, err := dynamic.NewForConfigOrDie(env(t).Config).Resource(fixture.WebApps).Namespace(ns).Create(t.Context(), webapp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestChartRGDs installs the chart with config.resourceGraphDefinitions
// enabled and no resource of its own, then runs resyncd in-process as the
// release's ServiceAccount: with the RBAC the chart grants, and nothing
// more, it serves an RGD applied to the cluster (its CRD applied, its
// status and finalizer written), converges an instance's children of the
// kinds rbac.resourceGraphDefinitions.childKinds lists, and is forbidden
// every other kind.
func TestChartRGDs(t *testing.T) {
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(env(t).Config)
	adminDyn := dynamic.NewForConfigOrDie(env(t).Config)
	createNamespaces(t, admin, "rgd-system", "rgd-team")
	cfg, sa := helmInstall(t, "rgds", "rgd-system", rgdValues)
	if !cfg.ResourceGraphDefinitions.Enabled || len(cfg.Resources) != 0 {
		t.Fatalf("the chart's configuration: resourceGraphDefinitions %+v, %d resources", cfg.ResourceGraphDefinitions, len(cfg.Resources))
	}
	rgds := schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "resourcegraphdefinitions"}
	fixture.Eventually(t, "the ClusterRole in force", 30*time.Second, func() bool {
		_, err := dynamic.NewForConfigOrDie(sa).Resource(rgds).List(ctx, metav1.ListOptions{})
		return err == nil
	})
	// As the pod runs: through a kubeconfig that is the ServiceAccount.
	kc, err := clientcmd.Load(env(t).Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Impersonate, ai.ImpersonateGroups = sa.Impersonate.UserName, sa.Impersonate.Groups
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cfg.Metrics.Address, cfg.Health.Address = testenv.FreeAddr(t), testenv.FreeAddr(t)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(runCtx, cfg, daemon.Options{Log: zaptest.NewLogger(t), PassTimeout: time.Minute,
			Dialer: cluster.Dialer{Kubeconfig: kubeconfig, RequestTimeout: 5 * time.Second, UserAgent: "resyncd/test"}})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("resyncd run as the ServiceAccount: %v", err)
		}
	})

	rgd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: chart-site
spec:
  schema:
    apiVersion: v1alpha1
    kind: ChartSite
    spec:
      image: string | default="nginx"
  resources:
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-settings
        data:
          image: ${schema.spec.image}
    - id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.metadata.name}
        spec:
          selector:
            matchLabels: {app: "${schema.metadata.name}"}
          template:
            metadata:
              labels: {app: "${schema.metadata.name}"}
              annotations: {settings: "${settings.metadata.name}"}
            spec:
              containers:
                - name: web
                  image: ${schema.spec.image}
`), &rgd.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := adminDyn.Resource(rgds).Create(ctx, rgd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = adminDyn.Resource(rgds).Delete(context.Background(), "chart-site", metav1.DeleteOptions{}) })
	fixture.Eventually(t, "the RGD Active, with resyncd's finalizer", 60*time.Second, func() bool {
		u, err := adminDyn.Resource(rgds).Get(ctx, "chart-site", metav1.GetOptions{})
		if err != nil {
			return false
		}
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return state == "Active" && slices.Contains(u.GetFinalizers(), "kro.run/finalizer")
	})
	sites := schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "chartsites"}
	site := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kro.run/v1alpha1", "kind": "ChartSite",
		"metadata": map[string]any{"name": "shop", "namespace": "rgd-team"}, "spec": map[string]any{}}}
	if _, err := adminDyn.Resource(sites).Namespace("rgd-team").Create(ctx, site, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "the instance's ConfigMap and Deployment, kro's finalizer on it and InstanceManaged True", 60*time.Second, func() bool {
		_, err1 := admin.CoreV1().ConfigMaps("rgd-team").Get(ctx, "shop-settings", metav1.GetOptions{})
		_, err2 := admin.AppsV1().Deployments("rgd-team").Get(ctx, "shop", metav1.GetOptions{})
		u, err3 := adminDyn.Resource(sites).Namespace("rgd-team").Get(ctx, "shop", metav1.GetOptions{})
		return err1 == nil && err2 == nil && err3 == nil && slices.Contains(u.GetFinalizers(), "kro.run/finalizer") &&
			fixture.Condition(u, "InstanceManaged")["status"] == "True"
	})
	// Nothing beyond what the chart lists: a kind it does not grant.
	saCS := kubernetes.NewForConfigOrDie(sa)
	if _, err := saCS.CoreV1().Secrets("rgd-team").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list Secrets as the ServiceAccount: %v, want forbidden", err)
	}
}
