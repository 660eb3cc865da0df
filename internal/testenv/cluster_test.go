package testenv

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestCluster: with the controller-manager, the scheduler and kwok, a
// Deployment becomes Available on fake nodes, and deleting it lets the
// garbage collector remove its ReplicaSet and pods; Stop leaves no process.
func TestCluster(t *testing.T) {
	env, err := Start(Options{Cluster: true, Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		for _, c := range env.components {
			t.Errorf("%s still tracked after Stop", c.name)
		}
	}()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	replicas := int32(2)
	labels := map[string]string{"app": "probe"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll := func(what string, f func(ctx context.Context) bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			return f(ctx), nil
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("Deployment available", func(ctx context.Context) bool {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "probe", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 2 && d.Status.ObservedGeneration == d.Generation
	})
	policy := metav1.DeletePropagationBackground
	if err := cs.AppsV1().Deployments("default").Delete(ctx, "probe", metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	poll("ReplicaSets and pods garbage-collected", func(ctx context.Context) bool {
		rs, err1 := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		pods, err2 := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil && len(rs.Items) == 0 && len(pods.Items) == 0
	})
}
