package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// TestRunThroughLostPermissionsAndCRD: `resyncd run` keeps running while
// its permissions are taken away and given back, and while the CRD of
// what it watches is removed and installed again: the passes fail, /readyz
// says why, and the first pass after each repair converges.
func TestRunThroughLostPermissionsAndCRD(t *testing.T) {
	ns := "faults"
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	dyn := dynamic.NewForConfigOrDie(env(t).Config)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const user = "resyncd-faults"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: fixture.Rules()}
	if _, err := cs.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}}
	bind := func() {
		t.Helper()
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind()
	kc, err := env(t).AddUserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	health := testenv.FreeAddr(t)
	cfgPath, kcPath := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`metrics: {address: "127.0.0.1:0"}
health: {address: %q}
log: {level: error}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: 1s, namespaces: [%s]}
`, health, ns)
	for path, body := range map[string][]byte{cfgPath: []byte(cfg), kcPath: kc} {
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	createParent := func(name string) {
		t.Helper()
		fixture.CreateParent(t, dyn, ns, name, map[string]any{"image": "nginx", "port": int64(8080)})
	}
	createParent("web")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfgPath, kcPath, 30*time.Second)
	}()
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			select {
			case err := <-done:
				t.Fatalf("resyncd run ended while waiting for %s: %v", what, err)
			default:
			}
			return cond(), nil
		})
		if err != nil {
			c, body := readyz()
			t.Fatalf("%s: %v (/readyz %d: %s)", what, err, c, body)
		}
	}
	deployment := func(name string) bool {
		_, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		return err == nil
	}
	readyWith := func(code int, text string) func() bool {
		return func() bool { c, body := readyz(); return c == code && strings.Contains(body, text) }
	}
	until("first pass", func() bool { return deployment("web") && func() bool { c, _ := readyz(); return c == 200 }() })

	if err := cs.RbacV1().ClusterRoleBindings().Delete(t.Context(), user, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until("/readyz says forbidden", readyWith(503, "forbidden"))
	bind()
	createParent("after-rbac")
	until("converged after the permissions are back", func() bool { return deployment("after-rbac") && func() bool { c, _ := readyz(); return c == 200 }() })

	crds := envtest.CRDInstallOptions{Paths: []string{filepath.Join(repoRoot(t), "deploy", "crds")}}
	if err := envtest.UninstallCRDs(env(t).Config, crds); err != nil {
		t.Fatal(err)
	}
	until("/readyz says the resource is not served", readyWith(503, "not served"))
	if _, err := envtest.InstallCRDs(env(t).Config, crds); err != nil {
		t.Fatal(err)
	}
	until("parents can be created again", func() bool {
		_, err := dyn.Resource(fixture.HTTPServices).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		return err == nil
	})
	createParent("after-crd")
	until("converged after the CRD is back", func() bool { return deployment("after-crd") && func() bool { c, _ := readyz(); return c == 200 }() })

	cancel()
	if err := <-done; err != nil {
		t.Errorf("resyncd run after SIGTERM: %v", err)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
