package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/resyncd/resyncd/internal/fixture"
)

// startDaemon writes a configuration of the clusters section clusters (a
// YAML list, indented by two spaces) and one resource, HttpServices in
// namespace, run every second, into dir, and runs `resyncd run` with it
// and args until the test ends.
func startDaemon(t *testing.T, dir, clusters, namespace string, args ...string) *fixture.Daemon {
	t.Helper()
	return fixture.StartDaemon(t, dir, clusters, namespace, func(ctx context.Context, cfg string, out io.Writer) error {
		return newRootCommand(out, out, append([]string{"run", "--config", cfg, "--request-timeout", "5s"}, args...)).ExecuteContext(ctx)
	})
}

// createNamespaceWithParent creates namespace ns and an HttpService web
// in it.
func createNamespaceWithParent(t *testing.T, ns string) kubernetes.Interface {
	t.Helper()
	return fixture.NamespaceWithParent(t, env(t).Config, ns)
}

// TestSameAPIServerRefused: two cluster entries that reach one API server,
// by the same address or by another (the same kube-system namespace),
// would write every child twice: the second is refused, naming both, and
// writes nothing; the first is synced.
func TestSameAPIServerRefused(t *testing.T) {
	t.Parallel()
	kc, err := clientcmd.Load(env(t).Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	byName := kc.DeepCopy()
	for _, c := range byName.Clusters {
		c.Server = strings.Replace(c.Server, "127.0.0.1", "localhost", 1)
	}
	other, err := clientcmd.Write(*byName)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, ns string
		file     []byte
		want     string
	}{
		{"the same address", "same-address", env(t).Kubeconfig(), "cluster mirror reaches the API server of cluster home (same address https://127.0.0.1:"},
		{"another address", "same-uid", other, "cluster mirror reaches the API server of cluster home (same kube-system namespace, UID "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := createNamespaceWithParent(t, tt.ns)
			flags := files(t, tt.ns)
			mirror := filepath.Join(t.TempDir(), "mirror.kubeconfig")
			if err := os.WriteFile(mirror, tt.file, 0o600); err != nil {
				t.Fatal(err)
			}
			body, err := os.ReadFile(flags[3])
			if err != nil {
				t.Fatal(err)
			}
			body = append(body, []byte("clusters:\n  - name: home\n  - {name: mirror, kubeconfig: "+mirror+"}\n")...)
			if err := os.WriteFile(flags[3], body, 0o600); err != nil {
				t.Fatal(err)
			}
			out, code := resyncd(t, append([]string{"once"}, flags...)...)
			if code != 1 || !strings.Contains(out, tt.want) || !strings.Contains(out, "every child would be written twice") {
				t.Errorf("once with two entries for one server: exit %d, output:\n%s\nwant exit 1 and %q", code, out, tt.want)
			}
			if !strings.Contains(out, "\nhome     httpservices.v1alpha1.resyncd.io  1") || !fixture.HasDeployment(t, cs, tt.ns) {
				t.Errorf("home was not synced:\n%s", out)
			}
			if strings.Contains(out, "\nmirror ") {
				t.Errorf("mirror ran a pass:\n%s", out)
			}
		})
	}
}
