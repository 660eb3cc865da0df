package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/resyncd/resyncd/internal/fixture"
)

// execKubeconfig writes, in dir, a script that creates the file marker and
// prints an ExecCredential holding token, and a kubeconfig for the test API
// server whose user gets its credentials by running it.
func execKubeconfig(t *testing.T, dir, token string) (kubeconfig, marker string) {
	t.Helper()
	marker = filepath.Join(dir, "plugin-ran")
	script := filepath.Join(dir, "plugin.sh")
	body := "#!/bin/sh\ntouch " + marker + "\nprintf '%s' '" +
		`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"` + token + `"}}` + "'\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	kubeconfig = filepath.Join(dir, "exec.kubeconfig")
	kc, err := clientcmd.Load(env(t).Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	for name := range kc.AuthInfos {
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1", Command: script, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
	}
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, marker
}

// TestKubeconfigExecRefused: a cluster's kubeconfig whose user runs a
// command for its credentials is refused, and the command never runs:
// validate reports it, once fails that cluster, and a file rotated to one
// while resyncd runs makes the cluster down. With allowCredentialPlugins
// the command runs.
func TestKubeconfigExecRefused(t *testing.T) {
	t.Parallel()
	const ns = "exec-plugin"
	cs := createNamespaceWithParent(t, ns)
	token := fixture.ServiceAccountToken(t, cs, ns, "plugin", "cluster-admin", "exec")
	dir := t.TempDir()
	kubeconfig, marker := execKubeconfig(t, dir, token)
	config := func(name, entry string) string {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		body := "log: {level: error}\nclusters:\n  - " + entry + "\nresources:\n" +
			"  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, namespaces: [" + ns + "]}\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ran := func() bool {
		_, err := os.Stat(marker)
		return err == nil
	}
	refused := config("refused", "{name: plugin, kubeconfig: "+kubeconfig+"}")
	for _, cmd := range []string{"validate", "once"} {
		out, code := resyncd(t, cmd, "--config", refused)
		if code != 1 || !strings.Contains(out, `gets its credentials by running the command "`+filepath.Join(dir, "plugin.sh")+`" (exec)`) ||
			!strings.Contains(out, "allowCredentialPlugins: true") {
			t.Errorf("resyncd %s with an exec plugin: exit %d, output:\n%s", cmd, code, out)
		}
		if ran() {
			t.Fatalf("resyncd %s ran the exec plugin", cmd)
		}
	}

	// Rotated to one while running.
	path := filepath.Join(dir, "east.kubeconfig")
	fixture.WriteKubeconfig(t, path, env(t).Config.Host, &clientcmdapi.AuthInfo{Token: token})
	d := startDaemon(t, dir, "  - {name: east, kubeconfig: east.kubeconfig}", ns)
	fixture.Eventually(t, "east synced", time.Minute, func() bool {
		_, up, _ := d.Cluster("east")
		return up && fixture.HasDeployment(t, cs, ns)
	})
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, "east down, naming the plugin", 30*time.Second, func() bool {
		_, up, errs := d.Cluster("east")
		return !up && strings.Contains(errs, "allowCredentialPlugins") && d.Metric(`resyncd_cluster_up{cluster="east"} 0`)
	})
	if ran() {
		t.Fatal("the exec plugin of a file rotated in ran")
	}

	allowed := config("allowed", "{name: plugin, kubeconfig: "+kubeconfig+", allowCredentialPlugins: true}")
	if out, code := resyncd(t, "once", "--config", allowed); code != 0 || !ran() {
		t.Errorf("once with the plugin allowed: exit %d, plugin ran %v, output:\n%s", code, ran(), out)
	}
}
