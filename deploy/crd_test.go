package deploy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/internal/fixture"
)

var httpServices = fixture.HTTPServices

func httpService(name string, spec map[string]any) *unstructured.Unstructured {
	return fixture.HTTPService("default", name, spec)
}

func dynamicClient(t *testing.T) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(env(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCRDDefaults(t *testing.T) {
	c := dynamicClient(t).Resource(httpServices).Namespace("default")
	created, err := c.Create(t.Context(), httpService("defaults", map[string]any{
		"image":       "ghcr.io/acme/web:1.4.2",
		"port":        int64(8080),
		"service":     map[string]any{},
		"resources":   map[string]any{"requests": map[string]any{"cpu": "100m"}},
		"autoscaling": map[string]any{"maxReplicas": int64(5)},
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(t.Context(), "defaults", metav1.DeleteOptions{}) })

	// Read back what etcd holds, not the create response.
	got, err := c.Get(t.Context(), created.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	want := map[string]any{
		"image":       "ghcr.io/acme/web:1.4.2",
		"port":        int64(8080),
		"replicas":    int64(1),
		"priority":    int64(0),
		"paused":      false,
		"service":     map[string]any{"type": "ClusterIP"},
		"resources":   map[string]any{"requests": map[string]any{"cpu": "100m"}},
		"autoscaling": map[string]any{"maxReplicas": int64(5), "minReplicas": int64(1), "targetCPUUtilizationPercentage": int64(80)},
	}
	if diff := cmp.Diff(want, got.Object["spec"]); diff != "" {
		t.Errorf("spec after defaulting (-want +got):\n%s", diff)
	}
}

func TestCRDRejectsInvalid(t *testing.T) {
	valid := func() map[string]any {
		return map[string]any{"image": "ghcr.io/acme/web:1.4.2", "port": int64(8080)}
	}
	tests := []struct {
		name  string
		edit  func(spec map[string]any)
		field string // the API server's message must name it
	}{
		{"replicas -1", func(s map[string]any) { s["replicas"] = int64(-1) }, "spec.replicas"},
		{"port 0", func(s map[string]any) { s["port"] = int64(0) }, "spec.port"},
		{"port 70000", func(s map[string]any) { s["port"] = int64(70000) }, "spec.port"},
		{"missing image", func(s map[string]any) { delete(s, "image") }, "spec.image"},
		{"empty image", func(s map[string]any) { s["image"] = "" }, "spec.image"},
		{"missing port", func(s map[string]any) { delete(s, "port") }, "spec.port"},
		{"priority 1001", func(s map[string]any) { s["priority"] = int64(1001) }, "spec.priority"},
		{"priority -1001", func(s map[string]any) { s["priority"] = int64(-1001) }, "spec.priority"},
		{"service type", func(s map[string]any) { s["service"] = map[string]any{"type": "ExternalName"} }, "spec.service.type"},
		{"service port", func(s map[string]any) { s["service"] = map[string]any{"port": int64(65536)} }, "spec.service.port"},
		{"health check path", func(s map[string]any) { s["healthCheck"] = map[string]any{"path": "healthz"} }, "spec.healthCheck.path"},
		{"env without name", func(s map[string]any) { s["env"] = []any{map[string]any{"value": "x"}} }, "spec.env[0].name"},
		{"cpu target 0", func(s map[string]any) {
			s["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m"}}
			s["autoscaling"] = map[string]any{"maxReplicas": int64(3), "targetCPUUtilizationPercentage": int64(0)}
		}, "spec.autoscaling.targetCPUUtilizationPercentage"},
		{"min above max", func(s map[string]any) {
			s["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m"}}
			s["autoscaling"] = map[string]any{"minReplicas": int64(4), "maxReplicas": int64(3)}
		}, "spec.autoscaling.minReplicas"},
		{"autoscaling without a CPU request", func(s map[string]any) {
			s["resources"] = map[string]any{"requests": map[string]any{"memory": "64Mi"}}
			s["autoscaling"] = map[string]any{"maxReplicas": int64(3)}
		}, "spec.resources: Invalid value: autoscaling needs resources.requests.cpu"},
		{"bad quantity", func(s map[string]any) {
			s["resources"] = map[string]any{"limits": map[string]any{"memory": "lots"}}
		}, "spec.resources.limits.memory"},
	}
	c := dynamicClient(t).Resource(httpServices).Namespace("default")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := valid()
			tt.edit(spec)
			_, err := c.Create(t.Context(), httpService(fmt.Sprintf("invalid-%d", i), spec), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: got %v, want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error does not name %s: %v", tt.field, err)
			}
		})
	}
}

// TestCRDPrinterColumns reads the table the API server gives kubectl get.
func TestCRDPrinterColumns(t *testing.T) {
	c := dynamicClient(t).Resource(httpServices).Namespace("default")
	hs := httpService("columns", map[string]any{"image": "ghcr.io/acme/web:1.4.2", "port": int64(8080), "replicas": int64(3)})
	if _, err := c.Create(t.Context(), hs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(t.Context(), "columns", metav1.DeleteOptions{}) })

	hc, err := rest.HTTPClientFor(env(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		strings.TrimSuffix(env(t).Config.Host, "/")+"/apis/resyncd.io/v1alpha1/namespaces/default/httpservices/columns", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("get table: %v", err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatalf("decode table from %s (HTTP %d): %v", req.URL, resp.StatusCode, err)
	}
	var names []string
	for _, col := range table.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if diff := cmp.Diff([]string{"Name", "Image", "Desired", "Ready", "Status", "Age"}, names); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(table.Rows))
	}
	if diff := cmp.Diff([]any{"columns", "ghcr.io/acme/web:1.4.2", float64(3)}, table.Rows[0].Cells[:3]); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
}

// TestCRDDescriptions keeps `kubectl explain httpservice.spec` useful: every
// field of the schema says what it is.
func TestCRDDescriptions(t *testing.T) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdFile(t), &crd); err != nil {
		t.Fatalf("decode CRD: %v", err)
	}
	var missing []string
	var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
		if s.Description == "" && path != ".metadata" {
			missing = append(missing, path)
		}
		for name, p := range s.Properties {
			walk(path+"."+name, &p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(path+"[]", s.Items.Schema)
		}
	}
	for _, v := range crd.Spec.Versions {
		for name, p := range v.Schema.OpenAPIV3Schema.Properties {
			walk("."+name, &p)
		}
	}
	if len(missing) > 0 {
		t.Errorf("fields without a description: %v", missing)
	}
}

// crdFile is the HttpService CRD the repository ships, deploy/crds.
func crdFile(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("crds", "resyncd.io_httpservices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
