package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

func TestValidateExitCodes(t *testing.T) {
	t.Parallel()
	out, code := resyncd(t, "validate", "--config", "../../testdata/config/good.yaml")
	if code != 0 || !strings.Contains(out, "valid, 2 watched resources") {
		t.Errorf("valid config: exit %d, output %q", code, out)
	}
	out, code = resyncd(t, "validate", "--config", "../../testdata/config/invalid-duration.yaml")
	if code != 1 || !strings.Contains(out, `invalid-duration.yaml:6: resources[0].interval: "soon" is not a duration`) {
		t.Errorf("invalid config: exit %d, output %q", code, out)
	}
	out, code = resyncd(t, "validate", "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != 1 || !strings.Contains(out, "no such file") {
		t.Errorf("missing config: exit %d, output %q", code, out)
	}
}

func TestDiffAndOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cli"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.CreateParent(t, dynamic.NewForConfigOrDie(env(t).Config), "cli", "web", map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	flags := files(t, "cli")

	out, code := resyncd(t, append([]string{"diff"}, flags...)...)
	if code != 1 || !strings.Contains(out, "+++ resyncd/Deployment/cli/web") || !strings.Contains(out, "\n+      - image: nginx:1.27\n") {
		t.Errorf("diff before any pass: exit %d, output:\n%s", code, out)
	}
	deps, _ := cs.AppsV1().Deployments("cli").List(ctx, metav1.ListOptions{})
	if len(deps.Items) != 0 {
		t.Fatalf("diff wrote: %d Deployments exist", len(deps.Items))
	}

	out, code = resyncd(t, append([]string{"once"}, flags...)...)
	if code != 0 || !strings.Contains(out, "httpservices.v1alpha1.resyncd.io") {
		t.Errorf("once: exit %d, output:\n%s", code, out)
	}
	out, code = resyncd(t, append([]string{"diff"}, flags...)...)
	if code != 0 || out != "" {
		t.Errorf("diff in sync: exit %d, output:\n%s", code, out)
	}

	force := true
	patch := `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:evil"}]}}}}`
	if _, err := cs.AppsV1().Deployments("cli").Patch(ctx, "web", types.ApplyPatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "intruder", Force: &force}); err != nil {
		t.Fatal(err)
	}
	out, code = resyncd(t, append([]string{"diff"}, flags...)...)
	if code != 1 || !strings.Contains(out, "--- live/Deployment/cli/web") ||
		!strings.Contains(out, "\n-      - image: nginx:evil\n+      - image: nginx:1.27\n") {
		t.Errorf("diff after drift: exit %d, output:\n%s", code, out)
	}

	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: \"https://127.0.0.1:1\"}}]\n"+
		"contexts: [{name: x, context: {cluster: x}}]\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, code = resyncd(t, "diff", "--kubeconfig", bad, "--config", flags[3])
	if code != 2 {
		t.Errorf("diff against no API server: exit %d, want 2", code)
	}
}

func TestUnservedResource(t *testing.T) {
	t.Parallel()
	flags := files(t, "nowhere")
	cfgPath := flags[3]
	body, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	body = []byte(strings.Replace(string(body), "resource: httpservices", "resource: grpcservices", 1))
	if err := os.WriteFile(cfgPath, body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := resyncd(t, append([]string{"once"}, flags...)...)
	if code != 1 || !strings.Contains(out, cfgPath+":5: resources[0]: grpcservices.resyncd.io/v1alpha1 is not served by the API server") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

// TestOnceWritesItsEvents: when once returns, the Events of its pass are
// on the API server, not still queued in the broadcaster.
func TestOnceWritesItsEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "once-events"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.CreateParent(t, dynamic.NewForConfigOrDie(env(t).Config), "once-events", "bad.name", map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	if _, code := resyncd(t, append([]string{"once"}, files(t, "once-events")...)...); code != 1 {
		t.Errorf("once with a stalled parent: exit %d, want 1", code)
	}
	l, err := cs.EventsV1().Events("once-events").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Reason != "InvalidSpec" {
		t.Errorf("Events right after once returned: %d, want the InvalidSpec one", len(l.Items))
	}
}

// TestMissingLeaseNamespace: run with leader election in a namespace that
// does not exist stops at once with one error naming it, not a stream of
// client-go retries.
func TestMissingLeaseNamespace(t *testing.T) {
	t.Parallel()
	flags := files(t, "default")
	body, err := os.ReadFile(flags[3])
	if err != nil {
		t.Fatal(err)
	}
	body = append(body, []byte("leaderElection: {enabled: true, namespace: no-such-namespace}\n")...)
	if err := os.WriteFile(flags[3], body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := resyncd(t, append([]string{"run"}, flags...)...)
	if code != 1 || !strings.Contains(out, `leaderElection.namespace: namespace "no-such-namespace" does not exist`) ||
		!strings.Contains(out, flags[3]+":") {
		t.Errorf("run with a missing Lease namespace: exit %d, output %q", code, out)
	}
}

// TestOnceManyClusters: once runs a pass in every cluster; one that
// refuses connections fails alone, named in the error and the exit code,
// while the other's pass writes its children.
func TestOnceManyClusters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cli-clusters"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.CreateParent(t, dynamic.NewForConfigOrDie(env(t).Config), "cli-clusters", "web", map[string]any{"image": "nginx:1.27", "port": int64(8080)})
	flags := files(t, "cli-clusters")
	down := kubeconfigFor(t, "https://"+testenv.FreeAddr(t))[1]
	body, err := os.ReadFile(flags[3])
	if err != nil {
		t.Fatal(err)
	}
	body = append(body, []byte("clusters:\n  - name: home\n  - {name: down, kubeconfig: "+down+"}\n")...)
	if err := os.WriteFile(flags[3], body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := resyncd(t, append([]string{"once"}, flags...)...)
	if code != 1 || !strings.Contains(out, "CLUSTER  RESOURCE") || !strings.Contains(out, "\nhome     httpservices.v1alpha1.resyncd.io  1") ||
		!strings.Contains(out, "cluster down ("+down+"): ") || !strings.Contains(out, "connection refused") {
		t.Errorf("once with a cluster down: exit %d, output:\n%s", code, out)
	}
	deps, err := cs.AppsV1().Deployments("cli-clusters").List(ctx, metav1.ListOptions{})
	if err != nil || len(deps.Items) != 1 {
		t.Errorf("home: %d Deployments (%v), want 1", len(deps.Items), err)
	}
	out, code = resyncd(t, append([]string{"diff"}, flags...)...)
	if code != 2 || !strings.Contains(out, "cluster down (") {
		t.Errorf("diff with a cluster down: exit %d, output:\n%s", code, out)
	}
}
