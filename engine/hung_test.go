package engine

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/resyncd/resyncd/desired"
)

// freezer is a TCP proxy to the API server that can stop passing bytes:
// frozen, it accepts connections and reads requests but answers nothing,
// as a hung API server or a black-holing proxy does.
type freezer struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	thawed chan struct{} // closed while bytes flow
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, thawed: make(chan struct{})}
	close(f.thawed)
	t.Cleanup(func() { _ = ln.Close(); f.thaw() })
	go f.accept()
	return f
}

func (f *freezer) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.serve(c)
	}
}

func (f *freezer) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { f.copy(up, c); done <- struct{}{} }()
	go func() { f.copy(c, up); done <- struct{}{} }()
	<-done
}

// copy passes bytes from src to dst, holding each read while frozen.
func (f *freezer) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f.mu.Lock()
			thawed := f.thawed
			f.mu.Unlock()
			<-thawed
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	f.thawed = make(chan struct{})
	f.mu.Unlock()
}

func (f *freezer) thaw() {
	f.mu.Lock()
	select {
	case <-f.thawed:
	default:
		close(f.thawed)
	}
	f.mu.Unlock()
}

// TestHungServer: while the API server answers nothing, every pass gives
// up at its bound (PassTimeout; no request bound is set here), each failed
// pass is one log line, and passes go on starting; once it answers again,
// the next pass succeeds.
func TestHungServer(t *testing.T) {
	t.Parallel()
	ns := "hung"
	h := newHarness(t, testConfig(ns))
	h.namespace(ns)
	h.createParent(ns, "web", map[string]any{"image": "nginx", "port": int64(8080)})

	u, err := url.Parse(env(t).Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	f := newFreezer(t, u.Host)
	rc := rest.CopyConfig(env(t).Config)
	rc.Host = "https://" + f.ln.Addr().String()
	rc.Timeout = 0 // no request bound: the pass's bound alone must end a hung pass
	core, logs := observer.New(zapcore.InfoLevel)
	cfg := testConfig(ns)
	cfg.Resources[0].Interval = 500 * time.Millisecond
	e, err := New(SettingsFrom(cfg), Options{REST: rc, Renderers: desired.DefaultRegistry(), Log: zap.New(core), PassTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var results []error
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() {
		e.Run(ctx, func(_ int, _ ResourceReport, err error) {
			mu.Lock()
			results = append(results, err)
			mu.Unlock()
		})
		close(stopped)
	}()
	count := func(failed bool) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, r := range results {
			if (r != nil) == failed {
				n++
			}
		}
		return n
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return cond(), nil
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	until("a pass succeeds", func() bool {
		mu.Lock()
		if len(results) > 0 && results[len(results)-1] != nil {
			t.Logf("pass failed: %v", results[len(results)-1])
		}
		mu.Unlock()
		return count(false) > 0
	})
	f.freeze()
	until("three passes fail while the server hangs", func() bool { return count(true) >= 3 })
	failedLines := logs.FilterMessage("Pass failed").Len()
	if warn := logs.FilterLevelExact(zapcore.WarnLevel).Len(); failedLines == 0 || warn > failedLines*(1+maxLoggedErrors) {
		t.Errorf("%d warnings for %d failed passes", warn, failedLines)
	}
	f.thaw()
	ok := count(false)
	until("a pass succeeds once the server answers", func() bool { return count(false) > ok })
	cancel()
	<-stopped
	if _, err := h.get(deployments, ns, "web"); err != nil {
		t.Errorf("Deployment web: %v", err)
	}
}
