package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/internal/testenv"
)

// TestSecureMetrics: with metrics.secure, /metrics is served over TLS to a
// bearer token the API server authenticates and lets get /metrics: no
// token 401, a ServiceAccount's token without the permission 403, with it
// 200.
func TestSecureMetrics(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	const ns = "metrics-auth"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(name string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	denied, allowed := token("scraper-denied"), token("scraper")
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-auth-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-auth-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	flags := files(t, ns)
	addr := testenv.FreeAddr(t)
	body, err := os.ReadFile(flags[3])
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(body), `metrics: {address: "127.0.0.1:0"}`, fmt.Sprintf("metrics: {address: %q, secure: true}", addr), 1)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, cfgPath, flags[1], 30*time.Second)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("resyncd run: %v", err)
		}
	}()

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The endpoint starts, and the authorizer learns of the new binding
	// from its cache, a moment later; the pass counter is there once the
	// first pass ended.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, body := scrape(allowed)
		return code == http.StatusOK && strings.Contains(body, "resyncd_passes_total"), nil
	}); err != nil {
		code, body := scrape(allowed)
		t.Fatalf("the allowed token never got the metrics over TLS: %v (last: %d %s)", err, code, body)
	}
	for _, tt := range []struct {
		who   string
		token string
		want  int
	}{{"no token", "", 401}, {"a token that is no token", "not-a-token", 401}, {"a token without the permission", denied, 403}, {"a token allowed to get /metrics", allowed, 200}} {
		code, body := scrape(tt.token)
		if code != tt.want {
			t.Errorf("%s: %d, want %d (%s)", tt.who, code, tt.want, body)
		}
		if tt.want == 200 && !strings.Contains(body, "resyncd_passes_total") {
			t.Errorf("%s: no resyncd metrics in the answer", tt.who)
		}
	}
}
