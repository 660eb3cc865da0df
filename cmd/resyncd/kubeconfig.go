package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// reloadEvery is how often a kubeconfig file is looked at for a change.
const reloadEvery = time.Second

// reloader is the transport of the clients when their credentials come from
// kubeconfig files: when a file changes (a mounted Secret rotated by an
// atomic symlink swap, a token renewed), the next request uses what it
// holds now, with no restart. A file that does not load keeps the last
// good transport; credentials the server refuses fail requests, and
// passes, as they would have anyway.
type reloader struct {
	files []string
	load  func() (*rest.Config, error)

	mu      sync.Mutex
	checked time.Time
	sum     [sha256.Size]byte
	rt      http.RoundTripper
}

// newReloader returns the transport of the kubeconfig that load reads from
// files, as it is now.
func newReloader(files []string, load func() (*rest.Config, error)) (*reloader, error) {
	r := &reloader{files: files, load: load}
	sum, err := r.digest()
	if err != nil {
		return nil, err
	}
	if err := r.reload(sum); err != nil {
		return nil, err
	}
	return r, nil
}

// RoundTrip implements http.RoundTripper.
func (r *reloader) RoundTrip(req *http.Request) (*http.Response, error) {
	return r.transport().RoundTrip(req)
}

func (r *reloader) transport() http.RoundTripper {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= reloadEvery {
		r.checked = time.Now()
		if sum, err := r.digest(); err == nil && !bytes.Equal(sum[:], r.sum[:]) {
			_ = r.reload(sum) // a file half-written loads next time
		}
	}
	return r.rt
}

// digest hashes the files' content.
func (r *reloader) digest() ([sha256.Size]byte, error) {
	h := sha256.New()
	for _, f := range r.files {
		data, err := os.ReadFile(f)
		if err != nil {
			return [sha256.Size]byte{}, err
		}
		h.Write(data)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

func (r *reloader) reload(sum [sha256.Size]byte) error {
	rc, err := r.load()
	if err != nil {
		return err
	}
	rt, err := rest.TransportFor(rc)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	r.rt, r.sum = rt, sum
	return nil
}

// kubeconfigFiles are the files rules reads that exist; none when the
// configuration is in-cluster (whose token file client-go re-reads).
func kubeconfigFiles(rules *clientcmd.ClientConfigLoadingRules) []string {
	var out []string
	for _, f := range rules.GetLoadingPrecedence() {
		if _, err := os.Stat(f); err == nil {
			out = append(out, f)
		}
	}
	return out
}
