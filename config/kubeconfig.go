package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// CheckCredentials returns an error when the user that kc's context for c
// (c.Context, else the file's current one) authenticates with gets its
// credentials from a plugin: an exec command, which would run as resyncd
// on the first request, or an auth-provider, which talks to an identity
// provider of the file's choosing and writes back to the file. Whoever
// can write a cluster's kubeconfig Secret could otherwise run code in
// resyncd's process; c.AllowCredentialPlugins lets them.
func (c Cluster) CheckCredentials(kc *clientcmdapi.Config) error {
	if c.AllowCredentialPlugins || kc == nil {
		return nil
	}
	name := c.Context
	if name == "" {
		name = kc.CurrentContext
	}
	kctx, ok := kc.Contexts[name]
	if !ok {
		return nil // no such context: loading the client configuration says so
	}
	user, ok := kc.AuthInfos[kctx.AuthInfo]
	if !ok {
		return nil
	}
	how := ""
	switch {
	case user.Exec != nil:
		how = fmt.Sprintf("by running the command %q (exec)", user.Exec.Command)
	case user.AuthProvider != nil:
		how = fmt.Sprintf("from the auth-provider %q", user.AuthProvider.Name)
	default:
		return nil
	}
	return fmt.Errorf("%s: user %q gets its credentials %s; resyncd uses no credential plugin of a cluster's kubeconfig file "+
		"unless the cluster's entry sets allowCredentialPlugins: true (cluster %s)", c.Kubeconfig, kctx.AuthInfo, how, c.Name)
}

// ServerURL returns an API server's address in the form in which two
// clusters' addresses are compared: scheme and host in lower case, the
// port spelled out, no trailing slash. An address that does not parse is
// returned as it is.
func ServerURL(server string) string {
	u, err := url.Parse(strings.TrimSpace(server))
	if err != nil || u.Host == "" {
		return server
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = "443"
		if scheme == "http" {
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port) + strings.TrimRight(u.EscapedPath(), "/")
}
