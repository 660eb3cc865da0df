package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The controller-runtime contender: the reconciler a team would write by
// hand for HttpService, with kubebuilder-style typed API structs and the
// manager's default settings (one worker, shared informer caches of every
// HttpService, Deployment and Service in the cluster, no client-side rate
// limit). Only the metrics and health endpoints are switched off, so that
// contenders never compete for a port.

var groupVersion = schema.GroupVersion{Group: "resyncd.io", Version: "v1alpha1"}

// HTTPService is the typed HttpService, as controller-gen would emit it,
// with the fields the reconciler reads.
type HTTPService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HTTPServiceSpec   `json:"spec,omitempty"`
	Status            HTTPServiceStatus `json:"status,omitempty"`
}

// HTTPServiceSpec is HttpService's spec.
type HTTPServiceSpec struct {
	Image       string                       `json:"image"`
	Port        int32                        `json:"port"`
	Replicas    *int32                       `json:"replicas,omitempty"`
	Env         []corev1.EnvVar              `json:"env,omitempty"`
	Resources   *corev1.ResourceRequirements `json:"resources,omitempty"`
	HealthCheck *HealthCheck                 `json:"healthCheck,omitempty"`
	Service     *ServiceSpec                 `json:"service,omitempty"`
}

// HealthCheck is spec.healthCheck.
type HealthCheck struct {
	Path string `json:"path"`
}

// ServiceSpec is spec.service.
type ServiceSpec struct {
	Type string `json:"type,omitempty"`
	Port int32  `json:"port,omitempty"`
}

// HTTPServiceStatus is HttpService's status.
type HTTPServiceStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Replicas           int32              `json:"replicas,omitempty"`
	ReadyReplicas      int32              `json:"readyReplicas,omitempty"`
	URL                string             `json:"url,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// HTTPServiceList is a list of HTTPService.
type HTTPServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HTTPService `json:"items"`
}

// DeepCopyInto copies s into out.
func (s *HTTPService) DeepCopyInto(out *HTTPService) {
	*out = *s
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	sp := &out.Spec
	if s.Spec.Replicas != nil {
		r := *s.Spec.Replicas
		sp.Replicas = &r
	}
	if s.Spec.Env != nil {
		sp.Env = make([]corev1.EnvVar, len(s.Spec.Env))
		for i := range s.Spec.Env {
			s.Spec.Env[i].DeepCopyInto(&sp.Env[i])
		}
	}
	if s.Spec.Resources != nil {
		sp.Resources = s.Spec.Resources.DeepCopy()
	}
	if s.Spec.HealthCheck != nil {
		h := *s.Spec.HealthCheck
		sp.HealthCheck = &h
	}
	if s.Spec.Service != nil {
		v := *s.Spec.Service
		sp.Service = &v
	}
	if s.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(s.Status.Conditions))
		for i := range s.Status.Conditions {
			s.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
}

// DeepCopyObject implements runtime.Object.
func (s *HTTPService) DeepCopyObject() runtime.Object {
	out := &HTTPService{}
	s.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *HTTPServiceList) DeepCopyObject() runtime.Object {
	out := &HTTPServiceList{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]HTTPService, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// crMain runs the controller-runtime contender until SIGTERM. It prints
// "converged <seconds>" once every one of -expect parents has been
// reconciled without error since the start.
func crMain(args []string) error {
	fs := flag.NewFlagSet("cr", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file")
	expect := fs.Int("expect", 0, "number of HttpServices; print converged once all are reconciled")
	workers := fs.Int("workers", 1, "MaxConcurrentReconciles; 1 is controller-runtime's default")
	if err := fs.Parse(args); err != nil {
		return err
	}
	start := time.Now()
	log.SetLogger(logr.Discard())
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = -1 // what ctrl.GetConfig does: no client-side limit, the server's fairness rules
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	scheme.AddKnownTypeWithName(groupVersion.WithKind("HttpService"), &HTTPService{})
	scheme.AddKnownTypeWithName(groupVersion.WithKind("HttpServiceList"), &HTTPServiceList{})
	metav1.AddToGroupVersion(scheme, groupVersion)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	r := &reconciler{Client: mgr.GetClient(), scheme: scheme, expect: *expect, start: start, done: map[types.NamespacedName]bool{}}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&HTTPService{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: *workers}).
		Complete(r)
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

type reconciler struct {
	client.Client
	scheme *runtime.Scheme
	expect int
	start  time.Time
	mu     sync.Mutex
	done   map[types.NamespacedName]bool
}

const crManagedBy = "httpservice-controller"

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var hs HTTPService
	if err := r.Get(ctx, req.NamespacedName, &hs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !hs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: hs.Name, Namespace: hs.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		mutateDeployment(dep, &hs)
		return controllerutil.SetControllerReference(&hs, dep, r.scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: hs.Name, Namespace: hs.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		mutateService(svc, &hs)
		return controllerutil.SetControllerReference(&hs, svc, r.scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}
	st := desiredStatus(&hs, dep)
	if !equality.Semantic.DeepEqual(hs.Status, st) {
		hs.Status = st
		if err := r.Status().Update(ctx, &hs); err != nil {
			return ctrl.Result{}, err
		}
	}
	r.converged(req.NamespacedName)
	return ctrl.Result{}, nil
}

// converged counts a parent as done and says so once all are.
func (r *reconciler) converged(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done[key] {
		return
	}
	r.done[key] = true
	if len(r.done) == r.expect {
		fmt.Fprintf(os.Stdout, "converged %.3f\n", time.Since(r.start).Seconds())
	}
}

func crLabels(name string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": crManagedBy}
}

// mutateDeployment sets the fields the controller owns, field by field, so
// that the defaults the API server filled in compare equal and an object in
// sync is not updated.
func mutateDeployment(dep *appsv1.Deployment, hs *HTTPService) {
	if dep.Labels == nil {
		dep.Labels = map[string]string{}
	}
	for k, v := range crLabels(hs.Name) {
		dep.Labels[k] = v
	}
	replicas := int32(1)
	if hs.Spec.Replicas != nil {
		replicas = *hs.Spec.Replicas
	}
	dep.Spec.Replicas = &replicas
	if dep.CreationTimestamp.IsZero() { // the selector is immutable
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": hs.Name}}
	}
	tpl := &dep.Spec.Template
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	for k, v := range crLabels(hs.Name) {
		tpl.Labels[k] = v
	}
	var c *corev1.Container
	for i := range tpl.Spec.Containers {
		if tpl.Spec.Containers[i].Name == "app" {
			c = &tpl.Spec.Containers[i]
		}
	}
	if c == nil {
		tpl.Spec.Containers = append(tpl.Spec.Containers, corev1.Container{Name: "app"})
		c = &tpl.Spec.Containers[len(tpl.Spec.Containers)-1]
	}
	c.Image = hs.Spec.Image
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: hs.Spec.Port, Protocol: corev1.ProtocolTCP}}
	c.Env = hs.Spec.Env
	if hs.Spec.Resources != nil {
		c.Resources.Requests = hs.Spec.Resources.Requests
		c.Resources.Limits = hs.Spec.Resources.Limits
	}
	if hs.Spec.HealthCheck != nil {
		c.ReadinessProbe = probe(c.ReadinessProbe, hs.Spec.HealthCheck.Path)
		c.LivenessProbe = probe(c.LivenessProbe, hs.Spec.HealthCheck.Path)
	}
}

func probe(p *corev1.Probe, path string) *corev1.Probe {
	if p == nil {
		p = &corev1.Probe{}
	}
	if p.HTTPGet == nil {
		p.HTTPGet = &corev1.HTTPGetAction{}
	}
	p.HTTPGet.Path = path
	p.HTTPGet.Port = intstr.FromString("http")
	p.HTTPGet.Scheme = corev1.URISchemeHTTP
	return p
}

func mutateService(svc *corev1.Service, hs *HTTPService) {
	if svc.Labels == nil {
		svc.Labels = map[string]string{}
	}
	for k, v := range crLabels(hs.Name) {
		svc.Labels[k] = v
	}
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	port := hs.Spec.Port
	if hs.Spec.Service != nil {
		if hs.Spec.Service.Type != "" {
			svc.Spec.Type = corev1.ServiceType(hs.Spec.Service.Type)
		}
		if hs.Spec.Service.Port != 0 {
			port = hs.Spec.Service.Port
		}
	}
	svc.Spec.Selector = map[string]string{"app.kubernetes.io/name": hs.Name}
	svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}
}

// desiredStatus is the status the controller writes: the Deployment's
// replica counts and kstatus-style conditions.
func desiredStatus(hs *HTTPService, dep *appsv1.Deployment) HTTPServiceStatus {
	st := HTTPServiceStatus{
		ObservedGeneration: hs.Generation,
		Replicas:           dep.Status.Replicas,
		ReadyReplicas:      dep.Status.ReadyReplicas,
		URL:                fmt.Sprintf("http://%s.%s.svc:%d", hs.Name, hs.Namespace, hs.Spec.Port),
	}
	for _, c := range hs.Status.Conditions {
		st.Conditions = append(st.Conditions, *c.DeepCopy())
	}
	want := int32(1)
	if hs.Spec.Replicas != nil {
		want = *hs.Spec.Replicas
	}
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Available", Message: "replicas ready"}
	reconciling := metav1.Condition{Type: "Reconciling", Status: metav1.ConditionFalse, Reason: "Reconciled", Message: "every child is applied"}
	if dep.Status.ObservedGeneration < dep.Generation || dep.Status.AvailableReplicas < want {
		ready = metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RollingOut", Message: "the Deployment is rolling out"}
		reconciling = metav1.Condition{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "RollingOut", Message: "the Deployment is rolling out"}
	}
	stalled := metav1.Condition{Type: "Stalled", Status: metav1.ConditionFalse, Reason: "NoError", Message: "no permanent error"}
	for _, c := range []metav1.Condition{ready, reconciling, stalled} {
		c.ObservedGeneration = hs.Generation
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}
