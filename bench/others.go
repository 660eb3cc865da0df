package main

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// othersLabel marks the namespaces of the unrelated objects.
const othersLabel = "bench.resyncd.io/others"

// othersPartOf is the app.kubernetes.io/part-of label of the unrelated
// objects: another team's.
const othersPartOf = "another-team"

func othersNamespace(i int) string { return fmt.Sprintf("others-%03d", i) }

// loadOthers creates u Deployments and, with services, u Services that no
// contender manages, 100 of each per namespace, as another team's would
// be: the same shape as the contenders' children, other labels, another
// field manager.
func (c *cluster) loadOthers(ctx context.Context, u int, services bool) error {
	namespaces := (u + parentsPerNS - 1) / parentsPerNS
	if err := c.ensureNamespaces(ctx, namespaces, othersNamespace, othersLabel); err != nil {
		return err
	}
	opts := metav1.CreateOptions{FieldManager: "bench-others"}
	err := parallel(u, func(i int) error {
		ns, name := othersNamespace(i%namespaces), fmt.Sprintf("other-%05d", i)
		labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": othersPartOf}
		replicas := int32(2)
		probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name:  "app",
						Image: fmt.Sprintf("registry.example/other-%d/app:2.%d.0", i%20, i%7),
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						Env:   []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "INSTANCE", Value: fmt.Sprint(i)}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						ReadinessProbe: probe,
						LivenessProbe:  probe,
					}}},
				},
			},
		}
		if _, err := c.cs.AppsV1().Deployments(ns).Create(ctx, dep, opts); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if !services {
			return nil
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app.kubernetes.io/name": name},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
			},
		}
		if _, err := c.cs.CoreV1().Services(ns).Create(ctx, svc, opts); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load unrelated objects: %w", err)
	}
	return nil
}

// deleteOthers deletes what loadOthers made but the namespaces, which
// would stay Terminating with no controller to empty them.
func (c *cluster) deleteOthers(ctx context.Context) error {
	nss, err := c.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: othersLabel})
	if err != nil {
		return err
	}
	err = parallel(len(nss.Items), func(i int) error {
		ns := nss.Items[i].Name
		if err := c.cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return err
		}
		return c.deleteServices(ctx, ns)
	})
	if err != nil {
		return fmt.Errorf("delete unrelated objects: %w", err)
	}
	return nil
}

// others loads u unrelated Deployments and u Services into the main
// plane and measures every contender keeping the cluster in sync among
// them, converged by the contender first unless it is in sync already:
// resyncd's steady passes (and the raw LIST beside them),
// controller-runtime's restarts. The unrelated objects are deleted after.
func (b *bench) others(ctx context.Context, cs []contender, n, reps, u int) (out []*Sample, err error) {
	progress("N=%d trade-off: %d unrelated Deployments and Services", n, u)
	if err := b.cl.loadOthers(ctx, u, true); err != nil {
		return nil, err
	}
	defer func() {
		err = errors.Join(err, b.cl.deleteOthers(context.WithoutCancel(ctx)))
	}()
	for _, c := range cs {
		if c.Name != resyncdName && c.Name != crName && c.Name != cr8Name {
			continue
		}
		// The cluster the contender before left may be in sync as this
		// one keeps it: resyncd's after its own passes, controller-runtime
		// with 8 workers' after the one worker's, the same reconciler.
		// Converging it again would cost a reset and a cold run among the
		// unrelated objects and measure nothing.
		if b.cl.converged(ctx, n, c.ManagedBy) != nil {
			if _, err := b.cold(ctx, c, n, 0, reps); err != nil {
				return out, err
			}
		}
		samples, err := b.othersRounds(ctx, c, n, reps)
		for _, s := range samples {
			s.Others = u
		}
		out = append(out, samples...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func (b *bench) othersRounds(ctx context.Context, c contender, n, reps int) ([]*Sample, error) {
	progress("N=%d %s: in sync among unrelated objects", n, c.Name)
	if c.Config == "" {
		var out []*Sample
		for rep := 1; rep <= reps; rep++ {
			s, err := b.run(ctx, c, n, rep, "others")
			out = append(out, s)
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	r, err := b.startPasses(c, n)
	if err != nil {
		return nil, err
	}
	var lists []*Sample
	err = func() error {
		if _, err := r.pass(ctx, 0, "others-first", false); err != nil {
			return err
		}
		for rep := 1; rep <= reps; rep++ {
			if _, err := r.pass(ctx, rep, "others", true); err != nil {
				return err
			}
			s, err := b.run(ctx, listContender(), n, rep, "others")
			lists = append(lists, s)
			if err != nil {
				return err
			}
		}
		return nil
	}()
	return append(r.stop(), lists...), err
}
