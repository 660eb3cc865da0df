package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// RestartAPIServer kills kube-apiserver with SIGKILL, as a crash or an
// OOM kill would, waits downtime, and starts it again with the same
// flags, certificates and port on the same etcd; it returns once the API
// server is ready again. The new process is stopped with the others.
func (e *Env) RestartAPIServer(downtime time.Duration) error {
	pid, args, err := e.apiServer()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill kube-apiserver: %w", err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(downtime)
	c, err := startComponent(args[0], args[1:], e.output)
	if err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	// Stopped last among the components: after kwok and the controllers,
	// before etcd.
	e.components = append([]*component{c}, e.components...)
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && strings.TrimSpace(string(body)) == "ok", nil
	})
}

// SignalAPIServer sends sig to kube-apiserver: SIGSTOP freezes it (it
// keeps its connections and port, and answers nothing: the worst case of
// a hung server), SIGCONT lets it go on. Stop thaws it first, else its
// shutdown would wait forever.
func (e *Env) SignalAPIServer(sig syscall.Signal) error {
	pid, _, err := e.apiServer()
	if err != nil {
		return err
	}
	e.frozen = sig == syscall.SIGSTOP
	if sig == syscall.SIGSTOP {
		e.frozenPID = pid
	}
	return syscall.Kill(pid, sig)
}

// apiServer finds the process of this control plane's kube-apiserver and
// its command line.
func (e *Env) apiServer() (int, []string, error) {
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		return 0, nil, err
	}
	return findAPIServer(u.Port())
}

// ServerPIDs returns the process ids of this control plane's
// kube-apiserver and etcd, for what only /proc tells (CPU time).
func (e *Env) ServerPIDs() (apiServer, etcd int, err error) {
	apiServer, args, err := e.apiServer()
	if err != nil {
		return 0, 0, err
	}
	var servers string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
			servers = strings.Split(v, ",")[0]
		}
	}
	if servers == "" {
		return 0, 0, fmt.Errorf("kube-apiserver %d has no --etcd-servers", apiServer)
	}
	etcd, _, err = findProcess("etcd", func(arg string) bool { return arg == "--listen-client-urls="+servers })
	return apiServer, etcd, err
}

// findAPIServer finds the kube-apiserver serving on port and its command line.
func findAPIServer(port string) (int, []string, error) {
	return findProcess("kube-apiserver", func(arg string) bool { return arg == "--secure-port="+port })
}

// findProcess finds the process of the named binary with an argument
// that matches, and its command line.
func findProcess(name string, match func(arg string) bool) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		if filepath.Base(args[0]) != name {
			continue
		}
		for _, a := range args[1:] {
			if match(a) {
				return pid, args, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("no %s process with the argument sought", name)
}
