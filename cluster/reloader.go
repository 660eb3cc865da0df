package cluster

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// reloadEvery is how often a kubeconfig file is looked at for a change.
const reloadEvery = time.Second

// reloader is the transport of the clients when their credentials come from
// kubeconfig files: when a file changes (a mounted Secret rotated by an
// atomic symlink swap, a token renewed), the requests that follow use what
// it holds now, with no restart.
//
// The clients were made for one API server, the one the files named at
// first, and the reloader sends credentials to no other: files that now
// name another server fail every request (serverMovedError) and close
// moved, so that the cluster's passes restart with new clients; files that
// do not load (deleted, broken, refused) fail every request with the
// reason until they load again.
//
// A request does not wait for the files: it takes the transport in use
// with one atomic load, and the files are read and a transport built on a
// goroutine of their own, one at a time. Only a request the server
// answers 401 looks at the files itself (once, with the looks of others)
// and is sent again if they hold other credentials now: a token rotated
// and the old one revoked costs no failed request. A transport replaced
// has its idle connections closed.
type reloader struct {
	files []string
	load  func() (*rest.Config, error)
	build func(*rest.Config) (http.RoundTripper, error)
	// server is the address the clients were made for.
	server string
	// follow: the cluster's passes restart when the files name another
	// server; else only a restart of resyncd connects to it.
	follow bool
	log    *zap.Logger
	now    func() time.Time

	cur atomic.Pointer[snapshot]
	// due is when, in Unix nanoseconds, the files are looked at next.
	due     atomic.Int64
	looking atomic.Bool
	// lookMu makes the looks at the files one at a time.
	lookMu    sync.Mutex
	moved     chan struct{}
	movedOnce sync.Once
}

// snapshot is what the files held when they were last looked at: the
// transport of their credentials, or why there is none.
type snapshot struct {
	sum [sha256.Size]byte
	rt  http.RoundTripper
	err error
}

// serverMovedError fails the requests of clients whose kubeconfig files
// now name another API server than the one the clients were made for.
type serverMovedError struct {
	files    []string
	from, to string
	follow   bool
}

func (e *serverMovedError) Error() string {
	msg := fmt.Sprintf("kubeconfig %s now names the API server %s, not %s: its credentials are not sent to %s",
		strings.Join(e.files, ", "), e.to, e.from, e.from)
	if !e.follow {
		msg += "; restart resyncd to connect to the new server"
	}
	return msg
}

// newReloader loads the kubeconfig that load reads from files, as it is
// now, and returns the transport of its credentials and the configuration
// it loaded, whose server the transport is bound to.
func newReloader(log *zap.Logger, files []string, load func() (*rest.Config, error), follow bool) (*reloader, *rest.Config, error) {
	r := &reloader{files: files, load: load, build: rest.TransportFor, follow: follow, log: log, now: time.Now}
	rc, err := r.start()
	if err != nil {
		return nil, nil, err
	}
	return r, rc, nil
}

// start loads the files for the first time and binds r to their server.
func (r *reloader) start() (*rest.Config, error) {
	r.moved = make(chan struct{})
	sum, err := r.digest()
	if err != nil {
		return nil, err
	}
	rc, err := r.load()
	if err != nil {
		return nil, err
	}
	rt, err := r.build(rc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	r.server = rc.Host
	r.cur.Store(&snapshot{sum: sum, rt: rt})
	r.due.Store(r.now().Add(reloadEvery).UnixNano())
	return rc, nil
}

// RoundTrip implements http.RoundTripper.
func (r *reloader) RoundTrip(req *http.Request) (*http.Response, error) {
	r.lookSoon()
	s := r.cur.Load()
	if s.err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, s.err
	}
	resp, err := s.rt.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (req.Body != nil && req.GetBody == nil) {
		return resp, err
	}
	next := r.lookNow(s)
	if next == s || next.err != nil {
		return resp, nil
	}
	// Other credentials since the request was sent: send it with them.
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return resp, nil
		}
	}
	_ = resp.Body.Close()
	return next.rt.RoundTrip(again)
}

// lookNow looks at the files now, unless a look since s was made found
// them changed already, and returns the snapshot in use after it.
func (r *reloader) lookNow(s *snapshot) *snapshot {
	r.lookMu.Lock()
	defer r.lookMu.Unlock()
	if cur := r.cur.Load(); cur != s {
		return cur
	}
	r.look()
	return r.cur.Load()
}

// lookSoon starts a look at the files, off the request path, when
// reloadEvery has passed since the last one started and none is running.
func (r *reloader) lookSoon() {
	now := r.now().UnixNano()
	if now < r.due.Load() || !r.looking.CompareAndSwap(false, true) {
		return
	}
	r.due.Store(now + int64(reloadEvery))
	go func() {
		defer r.looking.Store(false)
		r.lookMu.Lock()
		defer r.lookMu.Unlock()
		r.look()
	}()
}

// look reads the files and, when their content changed, makes what they
// hold now the snapshot in use.
func (r *reloader) look() {
	cur := r.cur.Load()
	// Files that cannot be read hash to zero, which no content does: they
	// are reported once, not at every look.
	sum, err := r.digest()
	if sum == cur.sum {
		return
	}
	next := &snapshot{sum: sum}
	if err != nil {
		next.err = fmt.Errorf("kubeconfig: %w", err)
	} else {
		next.rt, next.err = r.transport()
	}
	r.cur.Store(next)
	if cur.rt != nil {
		// Requests in flight keep their connections; idle ones would
		// otherwise stay open, with the old credentials, until they time out.
		utilnet.CloseIdleConnectionsFor(cur.rt)
	}
	r.report(cur, next)
}

// transport builds the transport of the files' credentials, if they name
// the server the clients were made for.
func (r *reloader) transport() (http.RoundTripper, error) {
	rc, err := r.load()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	if rc.Host != r.server {
		return nil, &serverMovedError{files: r.files, from: r.server, to: rc.Host, follow: r.follow}
	}
	rt, err := r.build(rc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return rt, nil
}

// report logs the change from cur to next, and closes moved when next
// names another server.
func (r *reloader) report(cur, next *snapshot) {
	log := r.log.With(zap.Strings("files", r.files))
	var moved *serverMovedError
	switch {
	case errors.As(next.err, &moved):
		r.movedOnce.Do(func() { close(r.moved) })
		log.Warn("Kubeconfig names another server", zap.String("server", moved.from), zap.String("newServer", moved.to), zap.Bool("follow", r.follow))
	case next.err != nil:
		if cur.err == nil || cur.err.Error() != next.err.Error() {
			log.Warn("Kubeconfig not loaded", zap.Error(next.err))
		}
	case cur.err != nil:
		log.Info("Kubeconfig loaded again", zap.String("server", r.server))
	default:
		log.Info("Kubeconfig reloaded", zap.String("server", r.server))
	}
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
