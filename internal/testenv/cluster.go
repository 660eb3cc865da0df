package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// clusterReadyTimeout bounds the wait for the nodes and the controllers.
const clusterReadyTimeout = 90 * time.Second

// FakeNodeAnnotation marks the Nodes kwok manages.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// component is a control-plane process started beside envtest's two.
type component struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // how it exited, once done is closed
}

// startCluster starts kube-controller-manager, kube-scheduler and kwok
// against the running API server and adds nodes fake Nodes, then waits for
// the Nodes to be Ready and the controllers to work.
func (e *Env) startCluster(binDir string, nodes int, out *os.File) error {
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return fmt.Errorf("%s not found in %s: run `make bins`: %w", name, binDir, err)
		}
	}
	dir, err := os.MkdirTemp("", "resyncd-cluster-")
	if err != nil {
		return err
	}
	e.clusterDir = dir
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, e.env.KubeConfig, 0o600); err != nil {
		return err
	}
	stages, err := filepath.Glob(filepath.Join(binDir, "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("no kwok Stages in %s/kwok-stages: run `make bins`", binDir)
	}
	auth := []string{"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--leader-elect=false", "--secure-port=0"}
	kwokArgs := []string{"--kubeconfig=" + kc, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=fake", "--node-lease-duration-seconds=40"}
	for _, s := range stages {
		kwokArgs = append(kwokArgs, "--config="+s)
	}
	specs := []struct {
		name string
		args []string
	}{
		// nodeipam needs a cluster CIDR this control plane does not have.
		{"kube-controller-manager", append(auth, "--controllers=*,-nodeipam")},
		{"kube-scheduler", auth},
		{"kwok", kwokArgs},
	}
	for _, s := range specs {
		c, err := startComponent(filepath.Join(binDir, s.name), s.args, out)
		if err != nil {
			return fmt.Errorf("start %s: %w", s.name, err)
		}
		e.components = append(e.components, c)
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	for i := range nodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(fmt.Sprintf("kwok-node-%d", i)), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create fake node: %w", err)
		}
	}
	return e.waitForCluster(ctx, cs, nodes)
}

func startComponent(path string, args []string, out *os.File) (*component, error) {
	cmd := exec.Command(path, args...)
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	// A group of its own, as envtest does; killed with this process if it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &component{name: filepath.Base(path), cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// waitForCluster waits until every fake Node is Ready and untainted and
// the controller-manager has created the default ServiceAccount.
func (e *Env) waitForCluster(ctx context.Context, cs kubernetes.Interface, nodes int) error {
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, c := range e.components {
			select {
			case <-c.done:
				return false, fmt.Errorf("%s exited: %w", c.name, c.err)
			default:
			}
		}
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range list.Items {
			if isReady(n) && len(n.Spec.Taints) == 0 {
				ready++
			}
		}
		if ready < nodes {
			return false, nil
		}
		_, err = cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %d Ready nodes and the controller-manager (see the control plane's log): %w", nodes, err)
	}
	return nil
}

func isReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func fakeNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{FakeNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "type": "kwok"},
		},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"),
				corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"),
				corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
}

// stopCluster stops kwok, the scheduler and the controller-manager, in
// that order, each with SIGTERM and then, after 10 s, SIGKILL.
func (e *Env) stopCluster() error {
	var errs []error
	for i := len(e.components) - 1; i >= 0; i-- {
		c := e.components[i]
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
			errs = append(errs, fmt.Errorf("%s did not stop on SIGTERM within 10s; killed", c.name))
		}
	}
	e.components = nil
	if e.clusterDir != "" {
		errs = append(errs, os.RemoveAll(e.clusterDir))
		e.clusterDir = ""
	}
	return errors.Join(errs...)
}
