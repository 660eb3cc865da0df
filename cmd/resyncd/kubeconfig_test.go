package main

import (
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/internal/fixture"
)

// TestKubeconfigRotation: the clients re-read their kubeconfig when it
// changes. Credentials revoked on the server fail requests (no crash); a
// new token written to the file, swapped in by a rename as a mounted
// Secret is, is used from then on, with the same clients.
func TestKubeconfigRotation(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	const ns = "rotate"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "rotate-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(name string) string {
		t.Helper()
		return fixture.ServiceAccountToken(t, cs, ns, name, reader.Name, "rotate")
	}
	old, next := token("old"), token("next")

	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	write := func(tok string) {
		t.Helper()
		fixture.WriteTokenKubeconfig(t, env.Kubeconfig(), tok, path)
	}
	write(old)
	cfg := config.Default()
	g := &globals{kubeconfig: path, requestTimeout: 10 * time.Second}
	cl, err := g.connect(config.Cluster{Apply: cfg.Apply})
	if err != nil {
		t.Fatal(err)
	}
	get := func(c kubernetes.Interface) error {
		_, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err
	}
	// The authorizer learns of new bindings from its cache, a moment later.
	fixture.Eventually(t, "the first token allowed", 30*time.Second, func() bool { return get(cl.kube) == nil })

	// Revoked: the old identity may no longer read.
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, "rotate-old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	oldOnly := kubernetes.NewForConfigOrDie(&rest.Config{Host: env.Config.Host, BearerToken: old, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}})
	fixture.Eventually(t, "the old token refused", 30*time.Second, func() bool { return apierrors.IsForbidden(get(oldOnly)) })
	if err := get(cl.kube); !apierrors.IsForbidden(err) {
		t.Fatalf("with the revoked token: %v, want Forbidden", err)
	}

	write(next)
	fixture.Eventually(t, "the rotated token used", 10*time.Second, func() bool { return get(cl.kube) == nil })
}
