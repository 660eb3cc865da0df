package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/engine"
	"github.com/resyncd/resyncd/internal/fixture"
)

// exportedAfterAPass runs one pass with the registry /metrics serves and
// returns the metric families it then exports.
func exportedAfterAPass(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metrics"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.CreateParent(t, dynamic.NewForConfigOrDie(env.Config), "metrics", "web", map[string]any{"image": "nginx", "port": int64(80)})
	cfg, err := config.Load(files(t, "metrics")[3], config.Options{Renderers: desired.DefaultRegistry().Names()})
	if err != nil {
		t.Fatal(err)
	}
	reg, metrics := newRegistry()
	metrics.SetLeader(true)
	eng, err := engine.New(engine.SettingsFrom(cfg), engine.Options{REST: env.Config, Renderers: desired.DefaultRegistry(), Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("/metrics lint: %s: %s", p.Metric, p.Text)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// TestDashboard: every PromQL expression of the Grafana dashboard parses,
// and every metric it uses is one resyncd exports after a pass.
func TestDashboard(t *testing.T) {
	exported := exportedAfterAPass(t)
	data, err := os.ReadFile("../../deploy/helm/resyncd/dashboards/resyncd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct{ Name, Type string } `json:"list"`
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
	hasDatasource := false
	for _, v := range dash.Templating.List {
		hasDatasource = hasDatasource || (v.Name == "datasource" && v.Type == "datasource")
	}
	if !hasDatasource {
		t.Error("the dashboard has no datasource template variable")
	}
	// Grafana's macros, as Grafana would expand them.
	macros := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "30s", "${datasource}", "prometheus")
	promql := parser.NewParser(parser.Options{})
	used := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			expr, err := promql.ParseExpr(macros.Replace(target.Expr))
			if err != nil {
				t.Errorf("panel %q: %q does not parse: %v", p.Title, target.Expr, err)
				continue
			}
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				vs, ok := node.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				used++
				if !isExported(exported, vs.Name) {
					t.Errorf("panel %q uses %s, which resyncd does not export", p.Title, vs.Name)
				}
				return nil
			})
		}
	}
	if used == 0 {
		t.Error("the dashboard uses no metric")
	}
}

// isExported says whether name is a metric family, or a series of a
// histogram or summary family (_bucket, _sum, _count), in exported.
func isExported(exported map[string]*dto.MetricFamily, name string) bool {
	if _, ok := exported[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if mf, ok := exported[base]; ok && (mf.GetType() == dto.MetricType_HISTOGRAM || mf.GetType() == dto.MetricType_SUMMARY) {
				return true
			}
		}
	}
	return false
}
