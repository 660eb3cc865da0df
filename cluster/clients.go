package cluster

import (
	"fmt"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/resyncd/resyncd/config"
)

// Clients are the connections to one API server.
type Clients struct {
	// REST is the configuration the clients were made from; its Host is
	// the server they reach.
	REST *rest.Config
	// Kube is the typed client of the server.
	Kube kubernetes.Interface
	// moved is closed when the kubeconfig files the clients were made from
	// name another server; nil when they come from no file.
	moved <-chan struct{}
}

// Moved is closed when the kubeconfig files the clients were made from
// name another server than the one they reach; nil when the clients come
// from no file (a Secret, the in-cluster configuration).
func (c *Clients) Moved() <-chan struct{} { return c.moved }

// MovedAway reports whether the clients' kubeconfig files name another
// server than the one the clients were made for.
func (c *Clients) MovedAway() bool {
	select {
	case <-c.moved:
		return true
	default:
		return false
	}
}

// Dialer makes the clients of clusters, tuned as every cluster's are.
type Dialer struct {
	// Kubeconfig is the file of resyncd's own connection (--kubeconfig);
	// empty: $KUBECONFIG, ~/.kube/config, then the in-cluster service
	// account.
	Kubeconfig string
	// Context is the kubeconfig context of resyncd's own connection
	// (--context).
	Context string
	// RequestTimeout bounds every request to an API server.
	RequestTimeout time.Duration
	// UserAgent is sent with every request.
	UserAgent string
}

// Clients builds the clients of cluster c: through its kubeconfig file
// when it names one, else through resyncd's own connection (Kubeconfig,
// Context). Nothing is asked of the server yet. The credentials of a file
// are re-read when it changes, and sent only to the server it named at
// first; a cluster of a file refuses a credential plugin its entry does
// not allow.
func (d Dialer) Clients(log *zap.Logger, c config.Cluster) (*Clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = d.Kubeconfig
	context := d.Context
	if c.Kubeconfig != "" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: c.KubeconfigPath()}
	}
	if c.Context != "" {
		context = c.Context
	}
	load := func() (*rest.Config, error) {
		if c.Home() {
			return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
				&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
		}
		// Checked and used from one read of the file: a credential plugin
		// refused is never started.
		raw, err := rules.Load()
		if err != nil {
			return nil, err
		}
		if err := c.CheckCredentials(raw); err != nil {
			return nil, err
		}
		return clientcmd.NewNonInteractiveClientConfig(*raw, context, &clientcmd.ConfigOverrides{}, rules).ClientConfig()
	}
	var rc *rest.Config
	var moved <-chan struct{}
	if files := kubeconfigFiles(rules); len(files) > 0 {
		r, loaded, err := newReloader(log, files, load, !c.Home())
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig: %w", err)
		}
		rc, moved = &rest.Config{Host: loaded.Host, APIPath: loaded.APIPath, Transport: r}, r.moved
	} else {
		var err error
		if rc, err = load(); err != nil {
			return nil, fmt.Errorf("load kubeconfig: %w", err)
		}
	}
	return d.newClients(rc, c, moved)
}

// newClients makes the clients of cluster c from rc; moved is closed when
// rc's files name another server.
func (d Dialer) newClients(rc *rest.Config, c config.Cluster, moved <-chan struct{}) (*Clients, error) {
	rc.UserAgent = d.UserAgent
	// A server that accepts connections and never answers (hung, or a
	// black-holing proxy) must fail the request, not hold it forever.
	rc.Timeout = d.RequestTimeout
	// resyncd paces its writes itself (apply.qps); client-go's own limiter
	// must not throttle the LISTs of a pass below that.
	rc.QPS = max(float32(c.Apply.QPS)*2, 50)
	rc.Burst = max(c.Apply.Burst*2, 100)
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &Clients{REST: rc, Kube: kc, moved: moved}, nil
}
