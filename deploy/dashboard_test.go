package deploy_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/util/teststorage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// dashboardQueries returns the PromQL of every panel of the Grafana
// dashboard, by panel title, and checks its template variables.
func dashboardQueries(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("helm/resyncd/dashboards/resyncd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct {
				Name, Type, AllValue, Definition string
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = v.Type + " " + v.Definition + " " + v.AllValue
	}
	if vars["datasource"] != "datasource  " {
		t.Errorf("the dashboard has no datasource template variable: %q", vars["datasource"])
	}
	if vars["cluster"] != "query label_values(resyncd_cluster_up, cluster) .*" {
		t.Errorf("the cluster template variable is %q, want the clusters of resyncd_cluster_up, All = .*", vars["cluster"])
	}
	out := map[string][]string{}
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			out[p.Title] = append(out[p.Title], target.Expr)
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no panel with a query")
	}
	return out
}

// TestDashboard: the resyncd binary runs with three clusters: two that
// answer (the test API server through --kubeconfig, and a control plane of
// its own through a kubeconfig file, one with drift to repair) and one whose
// kubeconfig names a port nothing listens on. Its /metrics is scraped a few
// times, the samples go into Prometheus's query engine
// (in-memory storage), and every panel's query, with Grafana's variables
// substituted (cluster: All, and each cluster alone), returns at least one
// series; the cluster variable's own query finds the three clusters.
func TestDashboard(t *testing.T) {
	queries := dashboardQueries(t)
	bin := testenv.BuildResyncd(t)
	ctx := t.Context()
	// Two entries reaching one API server are refused: mirror is a
	// control plane of its own.
	second, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := second.Stop(); err != nil {
			t.Error(err)
		}
	})
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	planes := map[string]*testenv.Env{"dash-home": env(t), "dash-mirror": second}
	for ns, plane := range planes {
		c := kubernetes.NewForConfigOrDie(plane.Config)
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"web", "api"} {
			fixture.CreateParent(t, dynamic.NewForConfigOrDie(plane.Config), ns, name, map[string]any{"image": "nginx", "port": int64(80)})
		}
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env(t).Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	mirrorKC := filepath.Join(dir, "mirror.kubeconfig")
	if err := os.WriteFile(mirrorKC, second.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	down := filepath.Join(dir, "down.kubeconfig")
	downBody := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://` + testenv.FreeAddr(t) + `", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(down, []byte(downBody), 0o600); err != nil {
		t.Fatal(err)
	}
	metricsAddr := testenv.FreeAddr(t)
	cfg := filepath.Join(dir, "config.yaml")
	body := `metrics: {address: "` + metricsAddr + `"}
health: {address: "127.0.0.1:0"}
log: {level: error}
clusters:
  - name: home
  - {name: mirror, kubeconfig: ` + mirrorKC + `}
  - {name: down, kubeconfig: ` + down + `}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: 1s, namespaces: [dash-home], clusters: [home, down]}
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: 1s, namespaces: [dash-mirror], clusters: [mirror]}
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out testenv.SyncBuffer
	run := exec.CommandContext(ctx, bin, "run", "--config", cfg, "--kubeconfig", kc, "--request-timeout", "2s")
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// ctx ends, and kills resyncd if it still runs, before the cleanups.
	done, exited := make(chan error, 1), make(chan struct{})
	go func() { done <- run.Wait(); close(exited) }()
	t.Cleanup(func() {
		<-exited
		if t.Failed() {
			t.Logf("resyncd run:\n%s", out.String())
		}
	})
	stop := func() {
		if err := run.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("stop resyncd: %v", err)
		}
	}
	metricsURL := "http://" + metricsAddr + "/metrics"
	fixture.Eventually(t, "both answering clusters converged", time.Minute, func() bool {
		select {
		case err := <-done:
			t.Fatalf("run stopped: %v", err)
		default:
		}
		n := 0
		for ns, plane := range planes {
			deps, err := kubernetes.NewForConfigOrDie(plane.Config).AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			n += len(deps.Items)
		}
		return n == 4
	})
	force := true
	patch := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3}}`)
	if _, err := cs.AppsV1().Deployments("dash-home").Patch(ctx, "web", types.ApplyPatchType, patch, metav1.PatchOptions{FieldManager: "intruder", Force: &force}); err != nil {
		t.Fatal(err)
	}
	st := teststorage.New(t)
	var last time.Time
	for i := 0; i < 4; i++ {
		time.Sleep(1500 * time.Millisecond)
		last = time.Now()
		loadScrape(t, st, metricsURL, last)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}

	promEngine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	eval := func(qs string) promql.Vector {
		t.Helper()
		q, err := promEngine.NewInstantQuery(ctx, st, nil, qs, last)
		if err != nil {
			t.Fatalf("%s: %v", qs, err)
		}
		res := q.Exec(ctx)
		if res.Err != nil {
			t.Fatalf("%s: %v", qs, res.Err)
		}
		v, err := res.Vector()
		if err != nil {
			t.Fatalf("%s: %v", qs, err)
		}
		return v
	}
	// The cluster variable: label_values(resyncd_cluster_up, cluster).
	var clusters []string
	up := map[string]float64{}
	for _, s := range eval("resyncd_cluster_up") {
		c := s.Metric.Get("cluster")
		clusters = append(clusters, c)
		up[c] = s.F
	}
	if len(clusters) != 3 || up["home"] != 1 || up["mirror"] != 1 || up["down"] != 0 {
		t.Errorf("resyncd_cluster_up: %v; want home and mirror 1, down 0", up)
	}
	if v := eval(`sum(resyncd_drift_total{cluster="home",reason="changed"})`); len(v) != 1 || v[0].F < 1 {
		t.Errorf("the drift made in home was not counted: %v", v)
	}
	for _, value := range append([]string{".*"}, "home", "mirror") {
		macros := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "30s", "${datasource}", "prometheus", "$cluster", value)
		for title, exprs := range queries {
			for _, expr := range exprs {
				if v := eval(macros.Replace(expr)); len(v) == 0 {
					t.Errorf("panel %q, cluster %s: %s returns no series", title, value, expr)
				}
			}
		}
	}
}

// loadScrape scrapes url and appends every sample to st at time at, as a
// Prometheus scrape would: a histogram as its _bucket, _sum and _count
// series, a summary as its quantiles, _sum and _count.
func loadScrape(t *testing.T, st *teststorage.TestStorage, url string, at time.Time) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	app := st.Appender(t.Context())
	ts := at.UnixMilli()
	add := func(name string, m *dto.Metric, v float64, extra ...string) {
		b := labels.NewScratchBuilder(len(m.GetLabel()) + 2)
		b.Add(model.MetricNameLabel, name)
		for _, l := range m.GetLabel() {
			b.Add(l.GetName(), l.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Add(extra[i], extra[i+1])
		}
		b.Sort()
		if _, err := app.Append(0, b.Labels(), ts, v); err != nil {
			t.Fatalf("append %s: %v", name, err)
		}
	}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", m, float64(b.GetCumulativeCount()), "le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64))
				}
				add(name+"_bucket", m, float64(h.GetSampleCount()), "le", "+Inf")
				add(name+"_sum", m, h.GetSampleSum())
				add(name+"_count", m, float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, m, q.GetValue(), "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64))
				}
				add(name+"_sum", m, s.GetSampleSum())
				add(name+"_count", m, float64(s.GetSampleCount()))
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}
