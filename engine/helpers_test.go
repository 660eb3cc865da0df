package engine

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/internal/fixture"
)

var (
	httpServices = fixture.HTTPServices
	deployments  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	services     = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	hpas         = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
)

// requestLog records the requests that reach the API server.
type requestLog struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []string // "METHOD path?query"
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	l.mu.Unlock()
	return l.next.RoundTrip(r)
}

func (l *requestLog) reset() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.reqs
	l.reqs = nil
	return out
}

// testConfig watches HttpServices in namespaces with small pages.
func testConfig(namespaces ...string) *config.Config {
	cfg := config.Default()
	cfg.PageSize = 7
	cfg.FieldManager = "resyncd"
	r := config.DefaultResource()
	r.Group, r.Version, r.Resource, r.Renderer = "resyncd.io", "v1alpha1", "httpservices", desired.HTTPServiceRendererName
	r.Namespaces = namespaces
	cfg.Resources = []config.Resource{r}
	return &cfg
}

type harness struct {
	t      *testing.T
	engine *Engine
	log    *requestLog
	reg    *prometheus.Registry
	dyn    dynamic.Interface // unlogged, for the test's own reads and writes
	cs     kubernetes.Interface
}

func newHarness(t *testing.T, cfg *config.Config) *harness {
	t.Helper()
	return newHarnessWith(t, cfg, desired.DefaultRegistry())
}

// newHarnessWith is newHarness with the renderers of renderers.
func newHarnessWith(t *testing.T, cfg *config.Config, renderers desired.Registry) *harness {
	t.Helper()
	log := &requestLog{}
	rc := rest.CopyConfig(env(t).Config)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log })
	reg := prometheus.NewRegistry()
	e, err := New(SettingsFrom(cfg), Options{REST: rc, Renderers: renderers, Metrics: NewMetrics(reg), Log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, engine: e, log: log, reg: reg,
		dyn: dynamic.NewForConfigOrDie(env(t).Config), cs: kubernetes.NewForConfigOrDie(env(t).Config)}
}

func (h *harness) namespace(name string) {
	h.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := h.cs.CoreV1().Namespaces().Create(h.t.Context(), ns, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) createParent(ns, name string, spec map[string]any) *unstructured.Unstructured {
	h.t.Helper()
	return fixture.CreateParent(h.t, h.dyn, ns, name, spec)
}

func (h *harness) deleteParent(ns, name string) {
	h.t.Helper()
	if err := h.dyn.Resource(httpServices).Namespace(ns).Delete(h.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatalf("delete %s/%s: %v", ns, name, err)
	}
}

func (h *harness) get(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return h.dyn.Resource(gvr).Namespace(ns).Get(h.t.Context(), name, metav1.GetOptions{})
}

func (h *harness) mustGet(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	h.t.Helper()
	u, err := h.get(gvr, ns, name)
	if err != nil {
		h.t.Fatalf("get %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return u
}

func (h *harness) list(gvr schema.GroupVersionResource, ns string) []unstructured.Unstructured {
	h.t.Helper()
	l, err := h.dyn.Resource(gvr).Namespace(ns).List(h.t.Context(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// sync runs one pass and fails the test on error.
func (h *harness) sync() ResourceReport {
	h.t.Helper()
	rep, err := h.engine.SyncOnce(h.t.Context())
	if err != nil {
		h.t.Fatalf("SyncOnce: %v", err)
	}
	return rep.Resources[0]
}

// writes returns the requests in reqs that change something: not reads,
// not dry-runs.
func writes(reqs []string) []string {
	var out []string
	for _, r := range reqs {
		if !strings.HasPrefix(r, "GET ") && !strings.Contains(r, "dryRun=All") {
			out = append(out, r)
		}
	}
	return out
}

// deleted returns, in order, the objects reqs deleted, as
// resource/name.
func deleted(reqs []string) []string {
	var out []string
	for _, w := range writes(reqs) {
		if strings.HasPrefix(w, "DELETE ") {
			path, _, _ := strings.Cut(strings.TrimPrefix(w, "DELETE "), "?")
			out = append(out, path[strings.LastIndex(path[:strings.LastIndex(path, "/")], "/")+1:])
		}
	}
	return out
}

// childWrites returns the writes in reqs that are not to the parents.
func childWrites(reqs []string) []string {
	var out []string
	for _, w := range writes(reqs) {
		if !strings.Contains(w, "/httpservices/") {
			out = append(out, w)
		}
	}
	return out
}

func condition(t *testing.T, u *unstructured.Unstructured, typ string) map[string]any {
	t.Helper()
	c := fixture.Condition(u, typ)
	if c == nil {
		t.Fatalf("%s/%s has no %s condition: %v", u.GetNamespace(), u.GetName(), typ, u.Object["status"])
	}
	return c
}

func pages(n, size int) int { return max(1, (n+size-1)/size) }
