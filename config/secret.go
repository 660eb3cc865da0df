package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// SecretFormat is how a Secret holds a cluster.
type SecretFormat string

const (
	// SecretArgoCD is Argo CD's cluster Secret: data keys name, server and
	// config (JSON: bearerToken, or tlsClientConfig with client
	// certificate data).
	SecretArgoCD SecretFormat = "argocd"
	// SecretKubeconfig is a Secret holding a kubeconfig under the data key
	// value (as Cluster API writes <cluster>-kubeconfig) or kubeconfig.
	SecretKubeconfig SecretFormat = "kubeconfig"
)

// kubeconfigSuffix ends the name of the kubeconfig Secret Cluster API
// writes for a cluster; the cluster's name is the rest.
const kubeconfigSuffix = "-kubeconfig"

// SecretCluster is a cluster as a Secret holds it.
type SecretCluster struct {
	// Name names the cluster: Argo CD's name, else the Secret's name
	// without -kubeconfig. Set even when the Secret is refused, as far as
	// it can be read.
	Name string
	// Format is the format the Secret was read in.
	Format SecretFormat
	// REST is the server and the credentials; nil when the Secret is
	// refused.
	REST *rest.Config
}

// argoConfig is the config key of an Argo CD cluster Secret: the fields
// of Argo CD's ClusterConfig that resyncd reads or refuses. The []byte
// fields are base64 in the JSON, as Argo CD writes them.
type argoConfig struct {
	Username        string `json:"username"`
	Password        string `json:"password"`
	BearerToken     string `json:"bearerToken"`
	TLSClientConfig struct {
		Insecure   bool   `json:"insecure"`
		ServerName string `json:"serverName"`
		CAData     []byte `json:"caData"`
		CertData   []byte `json:"certData"`
		KeyData    []byte `json:"keyData"`
	} `json:"tlsClientConfig"`
	ExecProviderConfig *struct {
		Command string `json:"command"`
	} `json:"execProviderConfig"`
	AWSAuthConfig *struct {
		ClusterName string `json:"clusterName"`
	} `json:"awsAuthConfig"`
	ProxyURL string `json:"proxyUrl"`
}

// errRunsProgram ends the reason a Secret that asks to run a program is
// refused.
var errRunsProgram = errors.New("a cluster from a Secret may not make resyncd run a program")

// ClusterFromSecret reads the cluster that the Secret named secret, whose
// data is data, holds: Argo CD's format when it has the key server, else
// a kubeconfig. It refuses, with the reason, what it cannot read, and
// what would make resyncd run a program (an exec plugin, an
// auth-provider, Argo CD's execProviderConfig or awsAuthConfig) or read a
// file of its own (a kubeconfig naming a certificate, key or token file):
// whoever may write the Secret must not get either. Nothing is written
// to disk.
func ClusterFromSecret(secret string, data map[string][]byte) (SecretCluster, error) {
	if _, ok := data["server"]; ok {
		return argoCluster(secret, data)
	}
	sc := SecretCluster{Name: strings.TrimSuffix(secret, kubeconfigSuffix), Format: SecretKubeconfig}
	if len(validation.IsDNS1123Subdomain(sc.Name)) > 0 {
		sc.Name = secret
		return sc, fmt.Errorf("the Secret's name without %s, %q, is not a cluster name (lower-case letters, digits, '-' and '.')", kubeconfigSuffix, strings.TrimSuffix(secret, kubeconfigSuffix))
	}
	kc, ok := data["value"]
	if !ok {
		kc, ok = data["kubeconfig"]
	}
	if !ok {
		return sc, errors.New("holds neither an Argo CD cluster (data keys server and config) nor a kubeconfig (data key value or kubeconfig)")
	}
	rc, err := kubeconfigREST(kc)
	if err != nil {
		return sc, fmt.Errorf("kubeconfig: %w", err)
	}
	sc.REST = rc
	return sc, nil
}

// argoCluster reads an Argo CD cluster Secret.
func argoCluster(secret string, data map[string][]byte) (SecretCluster, error) {
	sc := SecretCluster{Name: secret, Format: SecretArgoCD}
	if name := string(data["name"]); name != "" || len(validation.IsDNS1123Subdomain(secret)) > 0 {
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			return sc, fmt.Errorf("name %q is not a cluster name (lower-case letters, digits, '-' and '.'): it is a label value of every metric", name)
		}
		sc.Name = name
	}
	server := strings.TrimSpace(string(data["server"]))
	if u, err := url.Parse(server); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return sc, fmt.Errorf("server %q is not the URL of an API server (https://host:port)", server)
	}
	var ac argoConfig
	if err := json.Unmarshal(data["config"], &ac); err != nil {
		return sc, fmt.Errorf("config: not the JSON of an Argo CD cluster config: %w", err)
	}
	switch {
	case ac.ExecProviderConfig != nil:
		return sc, fmt.Errorf("config: execProviderConfig gets the credentials by running the command %q: %w", ac.ExecProviderConfig.Command, errRunsProgram)
	case ac.AWSAuthConfig != nil:
		return sc, fmt.Errorf("config: awsAuthConfig gets the credentials by running aws-iam-authenticator: %w", errRunsProgram)
	case ac.ProxyURL != "":
		return sc, errors.New("config: proxyUrl is not supported; reach the API server directly")
	}
	tc := ac.TLSClientConfig
	hasCert, hasKey := len(tc.CertData) > 0, len(tc.KeyData) > 0
	switch {
	case hasCert != hasKey:
		return sc, errors.New("config: tlsClientConfig has one of certData and keyData: set both, or neither")
	case ac.BearerToken == "" && !hasCert && (ac.Username == "" || ac.Password == ""):
		return sc, errors.New("config: no credentials: set bearerToken, tlsClientConfig.certData and keyData, or username and password")
	}
	sc.REST = &rest.Config{
		Host: server, BearerToken: ac.BearerToken, Username: ac.Username, Password: ac.Password,
		TLSClientConfig: rest.TLSClientConfig{Insecure: tc.Insecure, ServerName: tc.ServerName,
			CAData: tc.CAData, CertData: tc.CertData, KeyData: tc.KeyData},
	}
	return sc, nil
}

// kubeconfigREST reads a kubeconfig held in a Secret, in its current
// context, refusing credential plugins and files.
func kubeconfigREST(data []byte) (*rest.Config, error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	if err := checkInline(kc); err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*kc, "", &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, errors.New("no current context")
	case err != nil:
		return nil, err
	}
	return rc, nil
}

// checkInline refuses a kubeconfig any of whose users gets its
// credentials from a plugin, or that names a file: a file on resyncd's
// disk (its own ServiceAccount token, say) must not be sent to a server
// the Secret chooses.
func checkInline(kc *clientcmdapi.Config) error {
	for _, name := range slices.Sorted(maps.Keys(kc.AuthInfos)) {
		u := kc.AuthInfos[name]
		if u == nil {
			continue
		}
		switch {
		case u.Exec != nil:
			return fmt.Errorf("user %q gets its credentials by running the command %q (exec): %w", name, u.Exec.Command, errRunsProgram)
		case u.AuthProvider != nil:
			return fmt.Errorf("user %q gets its credentials from the auth-provider %q: %w", name, u.AuthProvider.Name, errRunsProgram)
		}
		for _, f := range []struct{ key, file string }{{"client-certificate", u.ClientCertificate}, {"client-key", u.ClientKey}, {"tokenFile", u.TokenFile}} {
			if f.file != "" {
				return fmt.Errorf("user %q names the file %s (%s): a kubeconfig from a Secret holds its credentials inline "+
					"(client-certificate-data, client-key-data, token)", name, f.file, f.key)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(kc.Clusters)) {
		if c := kc.Clusters[name]; c != nil && c.CertificateAuthority != "" {
			return fmt.Errorf("cluster %q names the file %s (certificate-authority): a kubeconfig from a Secret holds it inline (certificate-authority-data)", name, c.CertificateAuthority)
		}
	}
	return nil
}
