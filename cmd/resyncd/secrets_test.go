package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/resyncd/resyncd/internal/fixture"
)

// secretStatus is what /statusz says of one cluster, with the Secret it
// comes from.
type secretStatus struct {
	Name, Server, Secret, Error string
	Up                          bool
}

// statusOf returns what /statusz lists, by Secret (or name, for a
// cluster of no Secret); nil while /statusz does not answer.
func statusOf(d *fixture.Daemon) map[string]secretStatus {
	resp, err := http.Get("http://" + d.Health + "/statusz")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var s struct{ Clusters []secretStatus }
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil
	}
	out := map[string]secretStatus{}
	for _, c := range s.Clusters {
		key := c.Secret
		if key == "" {
			key = c.Name
		}
		out[key] = c
	}
	return out
}

// metricsMention reports whether /metrics has a series of the cluster
// named cluster.
func metricsMention(d *fixture.Daemon, cluster string) bool {
	resp, err := http.Get("http://" + d.Metrics + "/metrics")
	if err != nil {
		return true
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return err != nil || strings.Contains(string(body), `cluster="`+cluster+`"`)
}

// TestClusterSecrets: clusters come and go as Secrets, with no restart.
// A cluster of an Argo CD cluster Secret converges; its token rotated in
// the Secret (the old one revoked) is used from the next pass; the Secret
// deleted, its passes stop, its series leave /metrics and its entry
// /statusz. A cluster of a kubeconfig Secret as Cluster API writes it
// converges. A kubeconfig Secret whose user runs a command is refused,
// and the command never runs, and so is a Secret whose cluster's name
// another has; each is named in /statusz and logged once. once syncs the
// clusters of the Secrets too, and fails for those refused.
func TestClusterSecrets(t *testing.T) {
	t.Parallel()
	const ns, secrets = "secret-clusters", "cluster-secrets"
	cs := createNamespaceWithParent(t, ns)
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secrets}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home.kubeconfig")
	if err := os.WriteFile(home, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, "  []\nclusterSecrets:\n  - {namespace: "+secrets+", labelSelector: resyncd.io/test=cluster}", ns, "--kubeconfig", home)
	// Set up: client-go's process-wide logger and metrics are set by the
	// daemon before it serves, and not while this test's clients use them.
	fixture.Eventually(t, "/statusz served", 30*time.Second, func() bool { return statusOf(d) != nil })
	put := func(name string, data map[string][]byte) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: secrets, Labels: map[string]string{"resyncd.io/test": "cluster"}}, Data: data}
		_, err := cs.CoreV1().Secrets(secrets).Update(ctx, s, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cs.CoreV1().Secrets(secrets).Create(ctx, s, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	argo := func(token string) map[string][]byte {
		t.Helper()
		cfg, err := json.Marshal(map[string]any{"bearerToken": token, "tlsClientConfig": map[string]any{"caData": env(t).Config.CAData}})
		if err != nil {
			t.Fatal(err)
		}
		return map[string][]byte{"name": []byte("east"), "server": []byte(env(t).Config.Host), "config": cfg}
	}
	deleteDeployment := func() {
		t.Helper()
		if err := cs.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const east = secrets + "/east"

	oldToken := fixture.ServiceAccountToken(t, cs, ns, "argo-old", "cluster-admin", "secrets")
	put("east", argo(oldToken))
	fixture.Eventually(t, "east from its Argo CD Secret synced", time.Minute, func() bool {
		s := statusOf(d)[east]
		return s.Up && s.Name == "east" && s.Server == env(t).Config.Host && fixture.HasDeployment(t, cs, ns)
	})

	// Rotated: the old token unknown to the server, the new one in the Secret.
	newToken := fixture.ServiceAccountToken(t, cs, ns, "argo-new", "cluster-admin", "secrets")
	if err := cs.CoreV1().ServiceAccounts(ns).Delete(ctx, "argo-old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	oldOnly := kubernetes.NewForConfigOrDie(&rest.Config{Host: env(t).Config.Host, BearerToken: oldToken, TLSClientConfig: rest.TLSClientConfig{CAData: env(t).Config.CAData}})
	fixture.Eventually(t, "the old token unknown", 30*time.Second, func() bool {
		_, err := oldOnly.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsUnauthorized(err)
	})
	deleteDeployment()
	fixture.Eventually(t, "east down with the old token", 30*time.Second, func() bool { return !statusOf(d)[east].Up })
	put("east", argo(newToken))
	fixture.Eventually(t, "the Deployment repaired with the new token", time.Minute, func() bool {
		return statusOf(d)[east].Up && fixture.HasDeployment(t, cs, ns)
	})

	// Deleted: east's passes stop, its series and its entry go.
	if err := cs.CoreV1().Secrets(secrets).Delete(ctx, "east", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "east gone from /statusz and /metrics", 30*time.Second, func() bool {
		s := statusOf(d)
		_, listed := s[east]
		return s != nil && !listed && !metricsMention(d, "east")
	})
	if !d.Logged("Cluster removed", "east") {
		t.Error("no log line says east was removed")
	}
	removed := strings.LastIndex(d.Log.String(), `"msg":"Cluster removed","cluster":"east"`)

	// A kubeconfig Secret, Cluster API's <cluster>-kubeconfig, with a
	// client certificate.
	kc, err := env(t).AddUserKubeconfig("secret-west", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	deleteDeployment()
	put("west-kubeconfig", map[string][]byte{"value": kc})
	fixture.Eventually(t, "west from its kubeconfig Secret synced", time.Minute, func() bool {
		s := statusOf(d)[secrets+"/west-kubeconfig"]
		return s.Up && s.Name == "west" && fixture.HasDeployment(t, cs, ns)
	})
	if strings.Contains(d.Log.String()[removed:], `"msg":"Pass finished","cluster":"east"`) {
		t.Error("east ran a pass after its Secret was deleted")
	}

	// Refused: a kubeconfig that runs a command, and a name taken.
	execKC, marker := execKubeconfig(t, t.TempDir(), newToken)
	data, err := os.ReadFile(execKC)
	if err != nil {
		t.Fatal(err)
	}
	put("evil-kubeconfig", map[string][]byte{"kubeconfig": data})
	taken := argo(newToken)
	taken["name"] = []byte("west")
	put("west-again", taken)
	fixture.Eventually(t, "both refused in /statusz", 30*time.Second, func() bool {
		s := statusOf(d)
		evil, again := s[secrets+"/evil-kubeconfig"], s[secrets+"/west-again"]
		return evil.Name == "evil" && !evil.Up && strings.Contains(evil.Error, `gets its credentials by running the command "`) &&
			strings.Contains(evil.Error, "may not make resyncd run a program") &&
			again.Name == "west" && !again.Up && strings.Contains(again.Error, `the cluster name "west" is taken by the Secret `+secrets+`/west-kubeconfig`)
	})
	// A few reconciles later: still logged once, and west still synced.
	passes := strings.Count(d.Log.String(), `"msg":"Pass finished","cluster":"west"`)
	fixture.Eventually(t, "three more passes of west", 30*time.Second, func() bool {
		return strings.Count(d.Log.String(), `"msg":"Pass finished","cluster":"west"`) >= passes+3
	})
	if n := strings.Count(d.Log.String(), `"msg":"Cluster Secret refused","secret":"`+secrets+`/evil-kubeconfig"`); n != 1 {
		t.Errorf("the exec kubeconfig's refusal logged %d times, want once", n)
	}
	if !statusOf(d)[secrets+"/west-kubeconfig"].Up {
		t.Error("west is not up beside the Secret that takes its name")
	}

	// once reads the Secrets too: west synced, each refused one an error.
	out, code := resyncd(t, "once", "--config", filepath.Join(dir, "config.yaml"), "--kubeconfig", home)
	if code != 1 || !strings.Contains(out, "\nwest     httpservices.v1alpha1.resyncd.io  1") ||
		!strings.Contains(out, "cluster evil (Secret "+secrets+"/evil-kubeconfig): refused: kubeconfig: user ") ||
		!strings.Contains(out, "cluster west (Secret "+secrets+"/west-again): refused: the cluster name \"west\" is taken by the Secret "+secrets+"/west-kubeconfig") {
		t.Errorf("once with cluster Secrets: exit %d, output:\n%s", code, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the exec plugin of a Secret ran")
	}
}
