package main

import (
	"strings"
	"testing"

	"github.com/resyncd/resyncd/internal/fixture"
)

// TestValidateExternalRef: against the API server, an external
// reference is typed with its kind's schema as a child is, a namespace on
// a cluster-scoped kind is refused, and a kind the server does not serve
// is named; offline none of it can be told.
func TestValidateExternalRef(t *testing.T) {
	t.Parallel()
	fixture.InstallWebApps(t, env(t).Config)
	graph := func(ref, value string) string {
		return `apiVersion: resyncd.io/v1alpha1
kind: Graph
metadata: {name: webapp}
spec:
  resources:
    - id: platform
      externalRef: ` + ref + `
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}-config"}
        data: {region: "` + value + `"}
`
	}
	tests := []struct {
		name, ref, value, want string
	}{
		{"valid", `{apiVersion: v1, kind: ConfigMap, metadata: {name: platform, namespace: ops}}`, "${platform.data.?region.orValue('')}", ""},
		{"typed", `{apiVersion: v1, kind: ConfigMap, metadata: {name: platform}}`, "${platform.spec.region}",
			"webapp.yaml:13: resources[config].template.data.region: ${platform.spec.region}: at 1:9: undefined field 'spec'"},
		{"cluster-scoped", `{apiVersion: v1, kind: Namespace, metadata: {name: ops, namespace: ops}}`, "${platform.metadata.name}",
			"webapp.yaml:7: resources[platform].externalRef.metadata.namespace: v1 Namespace is cluster-scoped: remove the namespace"},
		{"not served", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}`, "x",
			"webapp.yaml:6: resources[platform].externalRef: example.com/v1 Widget: no schema from the API server (is the kind served?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, kc := graphFiles(t, graph(tt.ref, tt.value), "")
			if out, code := resyncd(t, "validate", "--config", cfg); code != 0 {
				t.Errorf("offline: exit %d, output:\n%s", code, out)
			}
			out, code := resyncd(t, "validate", "--config", cfg, "--kubeconfig", kc)
			switch {
			case tt.want == "" && code != 0:
				t.Errorf("exit %d, output:\n%s", code, out)
			case tt.want != "" && (code != 1 || !strings.Contains(out, tt.want)):
				t.Errorf("exit %d, output:\n%s\nwant: %s", code, out, tt.want)
			}
		})
	}
}
