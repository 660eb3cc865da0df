package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var (
	parentGVR = schema.GroupVersionResource{Group: "resyncd.io", Version: "v1alpha1", Resource: "httpservices"}
	childGVRs = map[string]schema.GroupVersionResource{
		"Deployment":              {Group: "apps", Version: "v1", Resource: "deployments"},
		"Service":                 {Version: "v1", Resource: "services"},
		"HorizontalPodAutoscaler": {Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
	}
)

const (
	benchLabel     = "bench.resyncd.io/load"
	parentsPerNS   = 100
	loadWorkers    = 16
	parentReplicas = 2
	driftReplicas  = 5
	driftTarget    = 9090
	// webAppTargetPort is the targetPort of the WebApp graphs' Service.
	webAppTargetPort = 8080
)

// cluster is the orchestrator's side: load, reset, drift and check, with
// an unthrottled admin client.
type cluster struct {
	dyn dynamic.Interface
	cs  kubernetes.Interface
}

func namespaceName(i int) string { return fmt.Sprintf("bench-%03d", i) }

// parallel runs f for 0..n-1 on loadWorkers goroutines and returns the first error.
func parallel(n int, f func(i int) error) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for range loadWorkers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// reset leaves exactly n HttpServices, new, with no status and no child,
// spread over ⌈n/100⌉ namespaces.
func (c *cluster) reset(ctx context.Context, n int) error {
	names := make([]string, (n+parentsPerNS-1)/parentsPerNS)
	for i := range names {
		names[i] = namespaceName(i)
	}
	return c.resetIn(ctx, n, names)
}

// resetIn leaves exactly n HttpServices, new, with no status and no
// child, spread round-robin over namespaces.
func (c *cluster) resetIn(ctx context.Context, n int, namespaces []string) error {
	nss, err := c.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: benchLabel})
	if err != nil {
		return err
	}
	err = parallel(len(nss.Items), func(i int) error { return c.empty(ctx, nss.Items[i].Name) })
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	if err := c.ensureNamespaces(ctx, len(namespaces), func(i int) string { return namespaces[i] }, benchLabel); err != nil {
		return err
	}
	err = parallel(n, func(i int) error {
		_, err := c.dyn.Resource(parentGVR).Namespace(namespaces[i%len(namespaces)]).Create(ctx, parent(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// empty deletes every HttpService and child in ns.
func (c *cluster) empty(ctx context.Context, ns string) error {
	all := metav1.ListOptions{}
	if err := c.dyn.Resource(parentGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		return err
	}
	if err := c.cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		return err
	}
	if err := c.cs.AutoscalingV2().HorizontalPodAutoscalers(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		return err
	}
	return c.deleteServices(ctx, ns)
}

// deleteServices deletes every Service in ns, one by one, loadWorkers at
// a time: Services have no DELETECOLLECTION, and a namespace may hold
// thousands.
func (c *cluster) deleteServices(ctx context.Context, ns string) error {
	svcs, err := c.cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	return parallel(len(svcs.Items), func(i int) error {
		err := c.cs.CoreV1().Services(ns).Delete(ctx, svcs.Items[i].Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// ensureNamespaces creates namespaces name(0) to name(n-1), labelled
// label, those not there yet.
func (c *cluster) ensureNamespaces(ctx context.Context, n int, name func(int) string, label string) error {
	for i := range n {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name(i), Labels: map[string]string{label: "true"}}}
		if _, err := c.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// parent is the i-th HttpService: a typical web service with probes,
// resources and environment, two replicas, no autoscaling (the
// controller-runtime contender manages a Deployment and a Service).
func parent(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": parentGVR.GroupVersion().String(),
		"kind":       "HttpService",
		"metadata":   map[string]any{"name": fmt.Sprintf("svc-%05d", i)},
		"spec": map[string]any{
			"image":    fmt.Sprintf("registry.example/team-%d/app:1.%d.0", i%20, i%7),
			"port":     int64(8080),
			"replicas": int64(parentReplicas),
			"env": []any{
				map[string]any{"name": "MODE", "value": "production"},
				map[string]any{"name": "INSTANCE", "value": fmt.Sprint(i)},
			},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "64Mi"},
				"limits":   map[string]any{"cpu": "500m", "memory": "256Mi"},
			},
			"healthCheck": map[string]any{"path": "/healthz"},
		},
	}}
}

// childKey names one child for drift.
type childKey struct {
	Kind, Namespace, Name string
}

// children lists the children carrying managedBy.
func (c *cluster) children(ctx context.Context, managedBy string) ([]appsv1.Deployment, []corev1.Service, error) {
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=" + managedBy}
	deps, err := c.cs.AppsV1().Deployments("").List(ctx, sel)
	if err != nil {
		return nil, nil, err
	}
	svcs, err := c.cs.CoreV1().Services("").List(ctx, sel)
	if err != nil {
		return nil, nil, err
	}
	return deps.Items, svcs.Items, nil
}

// converged says what is missing for n parents to count as converged: a
// Deployment and a Service each, holding what the parent asks for in the
// fields drift changes, and a status for the current generation.
func (c *cluster) converged(ctx context.Context, n int, managedBy string) error {
	deps, svcs, err := c.children(ctx, managedBy)
	if err != nil {
		return err
	}
	parents, err := c.dyn.Resource(parentGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	withStatus := 0
	for _, p := range parents.Items {
		g, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
		if g == p.GetGeneration() {
			withStatus++
		}
	}
	if len(parents.Items) != n || len(deps) != n || len(svcs) != n || withStatus != n {
		return fmt.Errorf("not converged: %d Deployments, %d Services, %d statuses for %d parents, want %d", len(deps), len(svcs), withStatus, len(parents.Items), n)
	}
	drifted := 0
	for i := range deps {
		if !deploymentInSync(&deps[i]) {
			drifted++
		}
	}
	for i := range svcs {
		if !serviceInSync(&svcs[i]) {
			drifted++
		}
	}
	if drifted > 0 {
		return fmt.Errorf("not converged: %d children drifted", drifted)
	}
	return nil
}

// drift changes fraction of the children, chosen at random, as another
// writer would: a Deployment scaled, a Service's targetPort changed.
func (c *cluster) drift(ctx context.Context, managedBy string, fraction float64, rng *rand.Rand) ([]childKey, error) {
	deps, svcs, err := c.children(ctx, managedBy)
	if err != nil {
		return nil, err
	}
	var all []childKey
	for _, d := range deps {
		all = append(all, childKey{"Deployment", d.Namespace, d.Name})
	}
	for _, s := range svcs {
		all = append(all, childKey{"Service", s.Namespace, s.Name})
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	picked := all[:int(float64(len(all))*fraction+0.5)]
	err = parallel(len(picked), func(i int) error { return c.driftOne(ctx, picked[i]) })
	return picked, err
}

// driftOne changes one child as another writer would: a Deployment
// scaled, a Service's targetPort changed.
func (c *cluster) driftOne(ctx context.Context, k childKey) error {
	opts := metav1.PatchOptions{FieldManager: "bench-drift"}
	var err error
	if k.Kind == "Deployment" {
		patch, _ := json.Marshal([]any{map[string]any{"op": "replace", "path": "/spec/replicas", "value": driftReplicas}})
		_, err = c.cs.AppsV1().Deployments(k.Namespace).Patch(ctx, k.Name, types.JSONPatchType, patch, opts)
	} else {
		patch, _ := json.Marshal([]any{map[string]any{"op": "replace", "path": "/spec/ports/0/targetPort", "value": driftTarget}})
		_, err = c.cs.CoreV1().Services(k.Namespace).Patch(ctx, k.Name, types.JSONPatchType, patch, opts)
	}
	return err
}

// deploymentInSync and serviceInSync say whether a child holds what its
// parent asks for in the fields drift changes.
func deploymentInSync(d *appsv1.Deployment) bool {
	return d.Spec.Replicas != nil && *d.Spec.Replicas == parentReplicas
}

func serviceInSync(s *corev1.Service) bool {
	if len(s.Spec.Ports) != 1 {
		return false
	}
	// HttpService's Service targets its port by name, the WebApp graphs'
	// by number.
	tp := s.Spec.Ports[0].TargetPort
	return tp.StrVal == "http" || (tp.Type == intstr.Int && tp.IntVal == webAppTargetPort)
}

// stillDrifted counts the drifted children that are not back as desired.
func (c *cluster) stillDrifted(ctx context.Context, managedBy string, drifted []childKey) (int, error) {
	deps, svcs, err := c.children(ctx, managedBy)
	if err != nil {
		return 0, err
	}
	ok := map[childKey]bool{}
	for _, d := range deps {
		ok[childKey{"Deployment", d.Namespace, d.Name}] = deploymentInSync(&d)
	}
	for _, s := range svcs {
		ok[childKey{"Service", s.Namespace, s.Name}] = serviceInSync(&s)
	}
	n := 0
	for _, k := range drifted {
		if !ok[k] {
			n++
		}
	}
	return n, nil
}
