package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// ServiceCIDR is the API server's Service IP range. envtest's default /24
// runs out after about 250 Services; a /16 leaves room for benchmarks.
const ServiceCIDR = "10.96.0.0/16"

// Options says how to start a control plane. The zero value is usable.
type Options struct {
	// BinDir holds kube-apiserver and etcd. Empty: $KUBEBUILDER_ASSETS if set,
	// else bin/ at the repository root, where `make bins` links them.
	BinDir string
	// CRDDirs are installed, and waited for, once the API server is up.
	// Empty: deploy/crds of the repository.
	CRDDirs []string
	// Output receives the control plane's own logs; nil discards them.
	Output *os.File
	// APIServerArgs are extra kube-apiserver flags, name without dashes to value.
	APIServerArgs map[string]string
	// Cluster also starts kube-controller-manager, kube-scheduler and kwok
	// with Nodes fake nodes, so that Deployments roll out and the garbage
	// collector works.
	Cluster bool
	// Nodes is the number of fake nodes of a Cluster; 0 means 3.
	Nodes int
	// AfterStop, when set, runs once the control plane is stopped, for
	// what the caller made for it (an audit policy, say).
	AfterStop func()
}

// ShardedListGate is the kube-apiserver feature gate of sharded LISTs
// (ListOptions.shardSelector), on in every control plane Start makes.
const ShardedListGate = "ShardedListAndWatch"

// Env is a running control plane.
type Env struct {
	// Config authenticates as a member of system:masters.
	Config     *rest.Config
	env        *envtest.Environment
	components []*component
	clusterDir string
	afterStop  func()
	output     *os.File
	// frozen is set while SignalAPIServer has stopped kube-apiserver
	// (frozenPID) with SIGSTOP.
	frozen    bool
	frozenPID int
}

// Start builds nothing: it starts etcd and kube-apiserver from the binaries
// in opts.BinDir, with RBAC authorization, and installs the CRDs. On error
// everything it started is stopped again.
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir := opts.BinDir
	if binDir == "" {
		binDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if binDir == "" {
		binDir = filepath.Join(root, "bin")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make bins` (or `make test`, which builds it) first: %w", name, binDir, err)
		}
	}
	crdDirs := opts.CRDDirs
	if len(crdDirs) == 0 {
		crdDirs = []string{filepath.Join(root, "deploy", "crds")}
	}

	// envtest logs through controller-runtime's logger, which otherwise
	// prints a warning and a stack trace half a minute later.
	ctrllog.SetLogger(logr.Discard())
	te := &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		CRDDirectoryPaths:        crdDirs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	apiServer := te.ControlPlane.GetAPIServer()
	args := apiServer.Configure()
	args.Set("service-cluster-ip-range", ServiceCIDR)
	// Sharded LISTs (alpha in 1.36 and 1.37), which replicas that share
	// the work ask for; APIServerArgs["feature-gates"] replaces it.
	args.Set("feature-gates", ShardedListGate+"=true")
	for k, v := range opts.APIServerArgs {
		args.Set(k, v)
	}
	if opts.Output != nil {
		te.ControlPlane.Etcd = &envtest.Etcd{Out: opts.Output, Err: opts.Output}
		apiServer.Out, apiServer.Err = opts.Output, opts.Output
	}

	cfg, err := te.Start()
	if err != nil {
		// envtest leaves the processes running when a step after their start
		// fails (the CRD install, say).
		return nil, errors.Join(fmt.Errorf("start control plane: %w", err), te.Stop())
	}
	e := &Env{Config: cfg, env: te, afterStop: opts.AfterStop, output: opts.Output}
	if opts.Cluster {
		nodes := opts.Nodes
		if nodes == 0 {
			nodes = 3
		}
		if err := e.startCluster(binDir, nodes, opts.Output); err != nil {
			return nil, errors.Join(err, e.Stop())
		}
	}
	return e, nil
}

// Stop stops kwok, the scheduler and the controller-manager if they run,
// then kube-apiserver, then etcd (the other order hangs the API server's
// shutdown), and removes their data.
func (e *Env) Stop() error {
	if e == nil || e.env == nil {
		return nil
	}
	if e.frozen {
		_ = syscall.Kill(e.frozenPID, syscall.SIGCONT)
		e.frozen = false
	}
	err := errors.Join(e.stopCluster(), e.env.Stop())
	if e.afterStop != nil {
		e.afterStop()
		e.afterStop = nil
	}
	return err
}

// Kubeconfig returns a kubeconfig for Config, with the client certificate
// inlined, for kubectl and for resyncd's --kubeconfig.
func (e *Env) Kubeconfig() []byte {
	return e.env.KubeConfig
}

// AddUserKubeconfig returns a kubeconfig that authenticates as name in
// groups, for tests of what RBAC lets an identity do.
func (e *Env) AddUserKubeconfig(name string, groups ...string) ([]byte, error) {
	// Tests side by side add users at once; envtest does not say its
	// authenticator may be called so.
	addUserMu.Lock()
	defer addUserMu.Unlock()
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, rest.CopyConfig(e.Config))
	if err != nil {
		return nil, fmt.Errorf("add user %s: %w", name, err)
	}
	return u.KubeConfig()
}

var addUserMu sync.Mutex

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory that holds deploy/crds.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "deploy", "crds")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no deploy/crds above the working directory")
		}
		dir = parent
	}
}
