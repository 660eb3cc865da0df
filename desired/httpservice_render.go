package desired

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	autoscalingv2ac "k8s.io/client-go/applyconfigurations/autoscaling/v2"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

const (
	containerName = "app"
	portName      = "http"
)

// Render implements Renderer: the Deployment, then the Service, then the
// HorizontalPodAutoscaler while spec.autoscaling is set.
func (HTTPService) Render(parent *unstructured.Unstructured, _ []Child) (Graph, error) {
	spec, err := parseHTTPService(parent)
	if err != nil {
		return Graph{}, err
	}
	children := []any{deployment(parent, spec), service(parent, spec)}
	var g Graph
	if spec.Autoscaling != nil {
		// The HorizontalPodAutoscaler scales the Deployment of its name.
		children = append(children, hpa(parent, spec))
		g.Refs = [][]int{nil, nil, {0}}
	}
	for _, c := range children {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
		if err != nil {
			return Graph{}, fmt.Errorf("%s/%s: render: %w", parent.GetNamespace(), parent.GetName(), err)
		}
		g.Children = append(g.Children, &unstructured.Unstructured{Object: obj})
	}
	return g, nil
}

func objectMeta(parent *unstructured.Unstructured) *metav1ac.ObjectMetaApplyConfiguration {
	return metav1ac.ObjectMeta().
		WithName(parent.GetName()).
		WithNamespace(parent.GetNamespace()).
		WithLabels(map[string]string{LabelName: parent.GetName()})
}

func selector(parent *unstructured.Unstructured) map[string]string {
	return map[string]string{LabelParent: parent.GetName()}
}

func deployment(parent *unstructured.Unstructured, spec *httpServiceSpec) *appsv1ac.DeploymentApplyConfiguration {
	d := appsv1ac.Deployment(parent.GetName(), parent.GetNamespace())
	d.ObjectMetaApplyConfiguration = objectMeta(parent)
	ds := appsv1ac.DeploymentSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector(parent))).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(childLabels(parent.GetName())).
			WithSpec(corev1ac.PodSpec().WithContainers(container(spec))))
	// While autoscaling is set the HorizontalPodAutoscaler owns the count:
	// leaving the field out of the apply gives it up.
	if spec.Autoscaling == nil {
		replicas := int32(1)
		if spec.Replicas != nil {
			replicas = *spec.Replicas
		}
		ds.WithReplicas(replicas)
	}
	return d.WithSpec(ds)
}

func container(spec *httpServiceSpec) *corev1ac.ContainerApplyConfiguration {
	c := corev1ac.Container().
		WithName(containerName).
		WithImage(spec.Image).
		// The protocol is a key of the ports list: spelled out, so that the
		// fields resyncd owns equal what it applies.
		WithPorts(corev1ac.ContainerPort().WithName(portName).WithContainerPort(spec.Port).WithProtocol(corev1.ProtocolTCP))
	for _, e := range spec.Env {
		// An empty value is left out, as the API server stores it.
		ev := corev1ac.EnvVar().WithName(e.Name)
		if e.Value != "" {
			ev.WithValue(e.Value)
		}
		c.WithEnv(ev)
	}
	if r := spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		rr := corev1ac.ResourceRequirements()
		if len(r.Requests) > 0 {
			rr.WithRequests(resourceList(r.Requests))
		}
		if len(r.Limits) > 0 {
			rr.WithLimits(resourceList(r.Limits))
		}
		c.WithResources(rr)
	}
	if spec.HealthCheck != nil {
		c.WithReadinessProbe(httpProbe(spec.HealthCheck.Path)).WithLivenessProbe(httpProbe(spec.HealthCheck.Path))
	}
	return c
}

func httpProbe(path string) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().
		WithPath(path).WithPort(intstr.FromString(portName)).WithScheme(corev1.URISchemeHTTP))
}

// resourceList copies quantities in a fixed order; their JSON form is the
// canonical one the API server stores, so "0.1" cpu compares equal to "100m".
func resourceList(in map[string]resource.Quantity) corev1.ResourceList {
	names := make([]string, 0, len(in))
	for n := range in {
		names = append(names, n)
	}
	sort.Strings(names)
	out := corev1.ResourceList{}
	for _, n := range names {
		out[corev1.ResourceName(n)] = in[n]
	}
	return out
}

func service(parent *unstructured.Unstructured, spec *httpServiceSpec) *corev1ac.ServiceApplyConfiguration {
	s := corev1ac.Service(parent.GetName(), parent.GetNamespace())
	s.ObjectMetaApplyConfiguration = objectMeta(parent)
	return s.WithSpec(corev1ac.ServiceSpec().
		WithType(corev1.ServiceType(serviceTypeOf(spec))).
		WithSelector(selector(parent)).
		WithPorts(corev1ac.ServicePort().
			WithName(portName).
			WithProtocol(corev1.ProtocolTCP).
			WithPort(servicePort(spec)).
			WithTargetPort(intstr.FromString(portName))))
}

func hpa(parent *unstructured.Unstructured, spec *httpServiceSpec) *autoscalingv2ac.HorizontalPodAutoscalerApplyConfiguration {
	a := spec.Autoscaling
	h := autoscalingv2ac.HorizontalPodAutoscaler(parent.GetName(), parent.GetNamespace())
	h.ObjectMetaApplyConfiguration = objectMeta(parent)
	minReplicas, target := int32(1), int32(80) // the CRD's defaults
	if a.MinReplicas != nil {
		minReplicas = *a.MinReplicas
	}
	if a.TargetCPUUtilizationPercentage != nil {
		target = *a.TargetCPUUtilizationPercentage
	}
	return h.WithSpec(autoscalingv2ac.HorizontalPodAutoscalerSpec().
		WithScaleTargetRef(autoscalingv2ac.CrossVersionObjectReference().
			WithAPIVersion("apps/v1").WithKind("Deployment").WithName(parent.GetName())).
		WithMinReplicas(minReplicas).
		WithMaxReplicas(a.MaxReplicas).
		WithMetrics(autoscalingv2ac.MetricSpec().
			WithType("Resource").
			WithResource(autoscalingv2ac.ResourceMetricSource().
				WithName(corev1.ResourceCPU).
				WithTarget(autoscalingv2ac.MetricTarget().WithType("Utilization").WithAverageUtilization(target)))))
}
