package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

// kubeconfigYAML is a kubeconfig whose one user is user (YAML lines,
// indented by four spaces) and whose cluster has the extra lines cluster.
func kubeconfigYAML(user, cluster string) string {
	return `apiVersion: v1
kind: Config
clusters:
  - name: c
    cluster:
      server: https://east.example:6443
      certificate-authority-data: Q0E=
` + cluster + `contexts:
  - name: c
    context: {cluster: c, user: u}
current-context: c
users:
  - name: u
    user:
` + user
}

// TestClusterFromSecret: both formats are read into the server and the
// credentials; what would run a program or read a file of resyncd's is
// refused with the reason, and so is what cannot be read.
func TestClusterFromSecret(t *testing.T) {
	str := func(kv ...string) map[string][]byte {
		m := map[string][]byte{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = []byte(kv[i+1])
		}
		return m
	}
	tests := []struct {
		name   string
		secret string
		data   map[string][]byte
		want   SecretCluster
		err    string
	}{
		{
			name: "argo cd bearer token", secret: "cluster-east",
			data: str("name", "east", "server", "https://east.example:6443",
				"config", `{"bearerToken":"tok","tlsClientConfig":{"insecure":false,"caData":"Q0E=","serverName":"kubernetes"}}`),
			want: SecretCluster{Name: "east", Format: SecretArgoCD, REST: &rest.Config{Host: "https://east.example:6443", BearerToken: "tok",
				TLSClientConfig: rest.TLSClientConfig{ServerName: "kubernetes", CAData: []byte("CA")}}},
		},
		{
			name: "argo cd client certificate, no name", secret: "west",
			data: str("server", "https://west.example", "config", `{"tlsClientConfig":{"insecure":true,"certData":"Q0VSVA==","keyData":"S0VZ"}}`),
			want: SecretCluster{Name: "west", Format: SecretArgoCD, REST: &rest.Config{Host: "https://west.example",
				TLSClientConfig: rest.TLSClientConfig{Insecure: true, CertData: []byte("CERT"), KeyData: []byte("KEY")}}},
		},
		{
			name: "argo cd basic auth", secret: "north",
			data: str("name", "north.example.com", "server", "https://north.example", "config", `{"username":"admin","password":"pw"}`),
			want: SecretCluster{Name: "north.example.com", Format: SecretArgoCD, REST: &rest.Config{Host: "https://north.example", Username: "admin", Password: "pw"}},
		},
		{
			name: "argo cd exec provider", secret: "eks",
			data: str("name", "eks", "server", "https://eks.example", "config", `{"execProviderConfig":{"command":"argocd-k8s-auth","apiVersion":"client.authentication.k8s.io/v1beta1"}}`),
			want: SecretCluster{Name: "eks", Format: SecretArgoCD},
			err:  `config: execProviderConfig gets the credentials by running the command "argocd-k8s-auth": a cluster from a Secret may not make resyncd run a program`,
		},
		{
			name: "argo cd aws auth", secret: "eks",
			data: str("server", "https://eks.example", "config", `{"awsAuthConfig":{"clusterName":"prod"},"bearerToken":"tok"}`),
			want: SecretCluster{Name: "eks", Format: SecretArgoCD},
			err:  "config: awsAuthConfig gets the credentials by running aws-iam-authenticator: a cluster from a Secret may not make resyncd run a program",
		},
		{
			name: "argo cd no credentials", secret: "in-cluster",
			data: str("name", "in-cluster", "server", "https://kubernetes.default.svc", "config", `{"tlsClientConfig":{"insecure":false}}`),
			want: SecretCluster{Name: "in-cluster", Format: SecretArgoCD},
			err:  "config: no credentials: set bearerToken, tlsClientConfig.certData and keyData, or username and password",
		},
		{
			name: "argo cd certificate without key", secret: "c",
			data: str("server", "https://c.example", "config", `{"tlsClientConfig":{"certData":"Q0VSVA=="}}`),
			want: SecretCluster{Name: "c", Format: SecretArgoCD},
			err:  "config: tlsClientConfig has one of certData and keyData: set both, or neither",
		},
		{
			name: "argo cd bad name", secret: "c",
			data: str("name", "My Cluster", "server", "https://c.example", "config", `{"bearerToken":"tok"}`),
			want: SecretCluster{Name: "c", Format: SecretArgoCD},
			err:  `name "My Cluster" is not a cluster name (lower-case letters, digits, '-' and '.'): it is a label value of every metric`,
		},
		{
			name: "argo cd bad server", secret: "c",
			data: str("server", "east.example:6443", "config", `{"bearerToken":"tok"}`),
			want: SecretCluster{Name: "c", Format: SecretArgoCD},
			err:  `server "east.example:6443" is not the URL of an API server (https://host:port)`,
		},
		{
			name: "argo cd config not json", secret: "c",
			data: str("server", "https://c.example", "config", `bearerToken: tok`),
			want: SecretCluster{Name: "c", Format: SecretArgoCD},
			err:  "config: not the JSON of an Argo CD cluster config: invalid character 'b' looking for beginning of value",
		},
		{
			name: "argo cd proxy", secret: "c",
			data: str("server", "https://c.example", "config", `{"bearerToken":"tok","proxyUrl":"http://proxy:3128"}`),
			want: SecretCluster{Name: "c", Format: SecretArgoCD},
			err:  "config: proxyUrl is not supported; reach the API server directly",
		},
		{
			name: "cluster api kubeconfig", secret: "east-kubeconfig",
			data: str("value", kubeconfigYAML("      client-certificate-data: Q0VSVA==\n      client-key-data: S0VZ\n", "")),
			want: SecretCluster{Name: "east", Format: SecretKubeconfig, REST: &rest.Config{Host: "https://east.example:6443",
				TLSClientConfig: rest.TLSClientConfig{CAData: []byte("CA"), CertData: []byte("CERT"), KeyData: []byte("KEY")}}},
		},
		{
			name: "kubeconfig key", secret: "west",
			data: str("kubeconfig", kubeconfigYAML("      token: tok\n", "")),
			want: SecretCluster{Name: "west", Format: SecretKubeconfig, REST: &rest.Config{Host: "https://east.example:6443", BearerToken: "tok",
				TLSClientConfig: rest.TLSClientConfig{CAData: []byte("CA")}}},
		},
		{
			name: "kubeconfig exec", secret: "eks-kubeconfig",
			data: str("value", kubeconfigYAML("      exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, id]}\n", "")),
			want: SecretCluster{Name: "eks", Format: SecretKubeconfig},
			err:  `kubeconfig: user "u" gets its credentials by running the command "/bin/sh" (exec): a cluster from a Secret may not make resyncd run a program`,
		},
		{
			name: "kubeconfig auth provider", secret: "sso-kubeconfig",
			data: str("value", kubeconfigYAML("      auth-provider: {name: oidc}\n", "")),
			want: SecretCluster{Name: "sso", Format: SecretKubeconfig},
			err:  `kubeconfig: user "u" gets its credentials from the auth-provider "oidc": a cluster from a Secret may not make resyncd run a program`,
		},
		{
			name: "kubeconfig token file", secret: "steal-kubeconfig",
			data: str("value", kubeconfigYAML("      tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n", "")),
			want: SecretCluster{Name: "steal", Format: SecretKubeconfig},
			err: `kubeconfig: user "u" names the file /var/run/secrets/kubernetes.io/serviceaccount/token (tokenFile): ` +
				"a kubeconfig from a Secret holds its credentials inline (client-certificate-data, client-key-data, token)",
		},
		{
			name: "kubeconfig certificate authority file", secret: "ca-kubeconfig",
			data: str("value", kubeconfigYAML("      token: tok\n", "      certificate-authority: /etc/ssl/ca.pem\n")),
			want: SecretCluster{Name: "ca", Format: SecretKubeconfig},
			err:  `kubeconfig: cluster "c" names the file /etc/ssl/ca.pem (certificate-authority): a kubeconfig from a Secret holds it inline (certificate-authority-data)`,
		},
		{
			name: "kubeconfig no current context", secret: "x-kubeconfig",
			data: str("value", strings.Replace(kubeconfigYAML("      token: tok\n", ""), "current-context: c\n", "", 1)),
			want: SecretCluster{Name: "x", Format: SecretKubeconfig},
			err:  "kubeconfig: no current context",
		},
		{
			name: "kubeconfig with no name left", secret: "-kubeconfig",
			data: str("value", kubeconfigYAML("      token: tok\n", "")),
			want: SecretCluster{Name: "-kubeconfig", Format: SecretKubeconfig},
			err:  `the Secret's name without -kubeconfig, "", is not a cluster name (lower-case letters, digits, '-' and '.')`,
		},
		{
			name: "neither", secret: "other",
			data: str("password", "hunter2"),
			want: SecretCluster{Name: "other", Format: SecretKubeconfig},
			err:  "holds neither an Argo CD cluster (data keys server and config) nor a kubeconfig (data key value or kubeconfig)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClusterFromSecret(tt.secret, tt.data)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if msg != tt.err {
				t.Errorf("error %q, want %q", msg, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzClusterFromSecret: no Secret makes the parser panic, and one it
// accepts names a cluster, a server and no credential plugin.
func FuzzClusterFromSecret(f *testing.F) {
	f.Add("east", []byte("https://east.example"), []byte(`{"bearerToken":"t"}`), []byte(nil))
	f.Add("east-kubeconfig", []byte(nil), []byte(nil), []byte(kubeconfigYAML("      token: tok\n", "")))
	f.Add("eks-kubeconfig", []byte(nil), []byte(nil), []byte(kubeconfigYAML("      exec: {command: sh}\n", "")))
	f.Fuzz(func(t *testing.T, secret string, server, cfg, kubeconfig []byte) {
		data := map[string][]byte{}
		if server != nil {
			data["server"], data["config"] = server, cfg
		}
		if kubeconfig != nil {
			data["value"] = kubeconfig
		}
		sc, err := ClusterFromSecret(secret, data)
		if err != nil {
			if sc.REST != nil {
				t.Errorf("refused (%v), with a configuration", err)
			}
			return
		}
		if sc.REST == nil || sc.REST.Host == "" || sc.REST.ExecProvider != nil || sc.REST.AuthProvider != nil {
			t.Errorf("accepted %+v", sc.REST)
		}
		if sc.Name == "" {
			t.Error("accepted with no name")
		}
	})
}
