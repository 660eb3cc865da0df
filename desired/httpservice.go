package desired

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// HTTPServiceRendererName is the name configurations use for HTTPService.
const HTTPServiceRendererName = "httpservice"

// HTTPService renders an HttpService (resyncd.io/v1alpha1) into a
// Deployment, a Service and, while spec.autoscaling is set, a
// HorizontalPodAutoscaler, all named after it.
type HTTPService struct{}

// The child types of HTTPService, in apply order.
var (
	deploymentType = ChildType{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment"}
	serviceType    = ChildType{GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service"}
	hpaType        = ChildType{GVR: schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}, Kind: "HorizontalPodAutoscaler"}
)

// ChildTypes implements Renderer.
func (HTTPService) ChildTypes() []ChildType {
	return []ChildType{deploymentType, serviceType, hpaType}
}

// Policy implements Renderer: spec.priority and spec.paused (SpecPolicy).
// A spec that does not parse has the zero policy; Render reports what is
// wrong.
func (HTTPService) Policy(parent *unstructured.Unstructured) Policy { return SpecPolicy(parent) }

// httpServiceSpec is HttpService's spec; deploy/crds holds its schema, with
// the defaults the API server fills in.
type httpServiceSpec struct {
	Image       string                `json:"image"`
	Port        int32                 `json:"port"`
	Replicas    *int32                `json:"replicas,omitempty"`
	Priority    int32                 `json:"priority,omitempty"`
	Paused      bool                  `json:"paused,omitempty"`
	Env         []envVar              `json:"env,omitempty"`
	Resources   *resourceRequirements `json:"resources,omitempty"`
	HealthCheck *healthCheck          `json:"healthCheck,omitempty"`
	Service     *serviceSpec          `json:"service,omitempty"`
	Autoscaling *autoscalingSpec      `json:"autoscaling,omitempty"`
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

type resourceRequirements struct {
	Requests map[string]resource.Quantity `json:"requests,omitempty"`
	Limits   map[string]resource.Quantity `json:"limits,omitempty"`
}

type healthCheck struct {
	Path string `json:"path"`
}

type serviceSpec struct {
	Type string `json:"type,omitempty"`
	Port int32  `json:"port,omitempty"`
}

type autoscalingSpec struct {
	MinReplicas                    *int32 `json:"minReplicas,omitempty"`
	MaxReplicas                    int32  `json:"maxReplicas"`
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// parseHTTPService decodes and checks what the CRD's schema cannot: that
// the name can name every child, and that the spec makes sense as a whole.
func parseHTTPService(parent *unstructured.Unstructured) (*httpServiceSpec, error) {
	raw, ok := parent.Object["spec"].(map[string]any)
	if !ok {
		return nil, &InvalidError{Field: "spec", Message: "is missing"}
	}
	// Through JSON rather than the unstructured converter: its errors name
	// the field and the types ("cannot unmarshal string into … port of type int32").
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, &InvalidError{Field: "spec", Message: err.Error()}
	}
	var spec httpServiceSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, &InvalidError{Field: "spec", Message: err.Error()}
	}
	if errs := validation.IsDNS1035Label(parent.GetName()); len(errs) > 0 {
		// Deployments accept more, but the Service and the label value do not.
		return nil, &InvalidError{Field: "metadata.name", Message: fmt.Sprintf(
			"%q cannot name the Service: %s; rename the HttpService", parent.GetName(), strings.Join(errs, "; "))}
	}
	switch {
	case spec.Image == "":
		return nil, &InvalidError{Field: "spec.image", Message: "must not be empty"}
	case strings.ContainsAny(spec.Image, " \t\n"):
		return nil, &InvalidError{Field: "spec.image", Message: fmt.Sprintf("%q is not an image reference: it contains white space", spec.Image)}
	case spec.Port < 1 || spec.Port > 65535:
		return nil, &InvalidError{Field: "spec.port", Message: fmt.Sprintf("%d is not a port (1 to 65535)", spec.Port)}
	}
	if a := spec.Autoscaling; a != nil {
		if a.MinReplicas != nil && *a.MinReplicas > a.MaxReplicas {
			return nil, &InvalidError{Field: "spec.autoscaling.minReplicas", Message: fmt.Sprintf(
				"%d is above maxReplicas (%d)", *a.MinReplicas, a.MaxReplicas)}
		}
		if cpu := spec.cpuRequest(); cpu.IsZero() {
			return nil, &InvalidError{Field: "spec.autoscaling", Message: "scales on CPU use relative to the request, " +
				"so spec.resources.requests.cpu must be set"}
		}
	}
	return &spec, nil
}

// serviceURL is the in-cluster URL of the Service.
func serviceURL(parent *unstructured.Unstructured, spec *httpServiceSpec) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", parent.GetName(), parent.GetNamespace(), servicePort(spec))
}

func servicePort(spec *httpServiceSpec) int32 {
	if spec.Service != nil && spec.Service.Port != 0 {
		return spec.Service.Port
	}
	return spec.Port
}

func serviceTypeOf(spec *httpServiceSpec) string {
	if spec.Service != nil && spec.Service.Type != "" {
		return spec.Service.Type
	}
	return "ClusterIP"
}

func (s *httpServiceSpec) cpuRequest() resource.Quantity {
	if s.Resources == nil {
		return resource.Quantity{}
	}
	return s.Resources.Requests["cpu"]
}
