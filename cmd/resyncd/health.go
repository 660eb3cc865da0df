package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/engine"
)

func metaName(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// health answers /healthz and /readyz. A process is ready when it follows
// (it has nothing to do), or when it leads and the last pass over every
// watched resource succeeded.
type health struct {
	mu      sync.Mutex
	names   []string
	last    []error
	done    []bool
	active  []bool
	leading bool
}

func newHealth(cfg *config.Config) *health {
	h := &health{}
	for _, r := range cfg.Resources {
		h.names = append(h.names, r.Name())
		h.active = append(h.active, r.Mode != config.ModeOff)
	}
	h.last = make([]error, len(h.names))
	h.done = make([]bool, len(h.names))
	return h
}

// record keeps how the last pass over resource i went: an error, or
// writes that failed for a passing reason (the API server unreachable or
// overloaded), make the process unready; a parent stalled for good does not.
func (h *health) record(i int, rep engine.ResourceReport, err error) {
	if err == nil && rep.Transient > 0 {
		err = fmt.Errorf("%d writes failed for a passing reason (API server unreachable or overloaded?)", rep.Transient)
	}
	h.mu.Lock()
	h.last[i], h.done[i] = err, true
	h.mu.Unlock()
}

func (h *health) setLeading(leading bool) {
	h.mu.Lock()
	h.leading = leading
	h.mu.Unlock()
}

// notReady lists why the process is not ready; empty when it is.
func (h *health) notReady() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.leading {
		return nil
	}
	var why []string
	for i, name := range h.names {
		switch {
		case !h.active[i]:
		case !h.done[i]:
			why = append(why, name+": no pass finished yet")
		case h.last[i] != nil:
			why = append(why, fmt.Sprintf("%s: last pass failed: %v", name, h.last[i]))
		}
	}
	return why
}

func (h *health) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if why := h.notReady(); len(why) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(strings.Join(why, "\n") + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
