package drills

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/engine"
	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// shared is the drills' living cluster (controllers, a scheduler, kwok's
// nodes), started by the first drill that needs it; bulk is a control
// plane alone for the drills that load hundreds of parents and need no
// rollout, so that their Deployments do not queue up behind the living
// cluster's controllers while the drills beside them wait for rollouts.
var shared, bulk testenv.Shared

// env is the drills' living cluster; the drill fails if it cannot start.
func env(t testing.TB) *testenv.Env { t.Helper(); return shared.Env(t) }

// bulkEnv is the control plane of the drills of many parents.
func bulkEnv(t testing.TB) *testenv.Env { t.Helper(); return bulk.Env(t) }

// auditLog and bulkAuditLog are the API servers' records of every child
// and status write, by user, for the drills that must prove from the
// server's side who wrote.
var auditLog, bulkAuditLog string

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete]
    resources:
      - {group: apps, resources: [deployments]}
      - {group: "", resources: [services]}
      - {group: autoscaling, resources: [horizontalpodautoscalers]}
      - {group: resyncd.io, resources: [httpservices/status]}
  - level: None
`

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "resyncd-drills-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	auditLog, bulkAuditLog = filepath.Join(dir, "audit.log"), filepath.Join(dir, "bulk-audit.log")
	// The audit logs' directory goes with the second plane to stop.
	var planes atomic.Int32
	planes.Store(2)
	stopped := func() {
		if planes.Add(-1) == 0 {
			_ = os.RemoveAll(dir)
		}
	}
	testenv.MainShared(m, map[*testenv.Shared]testenv.Options{
		&shared: {
			Cluster: true, Nodes: 3,
			APIServerArgs: map[string]string{"audit-policy-file": policy, "audit-log-path": auditLog},
			AfterStop:     stopped,
		},
		&bulk: {
			APIServerArgs: map[string]string{"audit-policy-file": policy, "audit-log-path": bulkAuditLog},
			AfterStop:     stopped,
		},
	})
}

var httpServices = fixture.HTTPServices

// drill is resyncd's engine on the cluster, watching one namespace, with
// its warnings and errors captured.
type drill struct {
	t      *testing.T
	env    *testenv.Env
	ns     string
	engine *engine.Engine
	dyn    dynamic.Interface
	cs     kubernetes.Interface
	logs   *observer.ObservedLogs
	reg    *prometheus.Registry
}

func newDrill(t *testing.T, ns string) *drill {
	t.Helper()
	return newDrillWith(t, ns, func(*config.Config) {})
}

// newDrillWith is newDrill with the configuration edited by edit.
func newDrillWith(t *testing.T, ns string, edit func(*config.Config)) *drill {
	t.Helper()
	return newDrillOn(t, env(t), ns, edit)
}

// newBulkDrill is newDrillWith on the bulk control plane.
func newBulkDrill(t *testing.T, ns string, edit func(*config.Config)) *drill {
	t.Helper()
	return newDrillOn(t, bulkEnv(t), ns, edit)
}

// newDrillOn is newDrillWith on another control plane than the shared one.
func newDrillOn(t *testing.T, cp *testenv.Env, ns string, edit func(*config.Config)) *drill {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	r := config.DefaultResource()
	r.Group, r.Version, r.Resource, r.Renderer = "resyncd.io", "v1alpha1", "httpservices", desired.HTTPServiceRendererName
	r.Namespaces = []string{ns}
	cfg.Resources = []config.Resource{r}
	edit(&cfg)
	core, logs := observer.New(zapcore.WarnLevel)
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	b.StartRecordingToSink(t.Context().Done())
	reg := prometheus.NewRegistry()
	eng, err := engine.New(engine.SettingsFrom(&cfg), engine.Options{REST: cp.Config, Renderers: desired.DefaultRegistry(),
		Metrics: engine.NewMetrics(reg), Log: zap.New(core), Events: b.NewRecorder(scheme.Scheme, "resyncd")})
	if err != nil {
		t.Fatal(err)
	}
	return &drill{t: t, env: cp, ns: ns, engine: eng, dyn: dynamic.NewForConfigOrDie(cp.Config), cs: cs, logs: logs, reg: reg}
}

func (d *drill) pass() engine.ResourceReport {
	d.t.Helper()
	rep, err := d.engine.SyncOnce(d.t.Context())
	if err != nil {
		d.t.Fatalf("pass: %v", err)
	}
	return rep.Resources[0]
}

func (d *drill) createParent(name string, spec map[string]any) {
	d.t.Helper()
	fixture.CreateParent(d.t, d.dyn, d.ns, name, spec)
}

func (d *drill) parent(name string) *unstructured.Unstructured {
	d.t.Helper()
	u, err := d.dyn.Resource(httpServices).Namespace(d.ns).Get(d.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		d.t.Fatal(err)
	}
	return u
}

// until runs passes every interval until cond holds or timeout ends.
func (d *drill) until(what string, interval, timeout time.Duration, cond func() bool) {
	d.t.Helper()
	err := wait.PollUntilContextTimeout(d.t.Context(), interval, timeout, true, func(context.Context) (bool, error) {
		d.pass()
		return cond(), nil
	})
	if err != nil {
		d.t.Fatalf("%s: not within %s: %v", what, timeout, err)
	}
}

// warnings returns what resyncd logged at Warn or above.
func (d *drill) warnings() []string {
	var out []string
	for _, e := range d.logs.All() {
		out = append(out, fmt.Sprintf("%s %s %v", e.Level, e.Message, e.ContextMap()))
	}
	return out
}

func conditionOf(u *unstructured.Unstructured, typ string) string {
	return fixture.StatusReason(u, typ)
}
