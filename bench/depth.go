package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/internal/testenv"
)

// The graph-depth measurement: N WebApps converged from nothing by
// `resyncd once`, run again until a pass writes nothing, under a graph
// one deep and under a graph four deep of the same four children.

var (
	webAppGVR = schema.GroupVersionResource{Group: "example.resyncd.io", Version: "v1alpha1", Resource: "webapps"}
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

const (
	// depthName is the measurement's name for -only.
	depthName = "graph-depth"
	// depthLabel marks the namespaces of the WebApps, which no other
	// measurement empties.
	depthLabel = "bench.resyncd.io/depth"
	// maxDepthPasses bounds one convergence: a graph whose passes still
	// write after this many does not converge, a finding.
	maxDepthPasses = 8
)

// depthGraph is one graph of the measurement, a file of testdata/graphs.
type depthGraph struct {
	name  string
	depth int
	// chained: its address ConfigMap holds the Service's clusterIP, which
	// only the API server's answer to the Service's write knows.
	chained bool
}

var depthGraphs = []depthGraph{{name: "flat", depth: 1}, {name: "chain", depth: 4, chained: true}}

// GraphDepth is how many passes, and how long, N parents take to converge
// under a graph four deep against a graph one deep of the same children.
type GraphDepth struct {
	N    int         `json:"n"`
	Runs []*DepthRun `json:"runs"`
}

// DepthRun is one convergence of the N parents from nothing under one graph.
type DepthRun struct {
	Graph string `json:"graph"`
	Depth int    `json:"depth"`
	Rep   int    `json:"rep"`
	// Passes are the `resyncd once` runs in order; of a run that
	// converged, the last is the one that wrote nothing.
	Passes []DepthPass `json:"passes"`
	// Error says why the run did not converge: a pass failed, passes
	// still wrote after maxDepthPasses, or the API server does not hold
	// what the graph declares once a pass wrote nothing.
	Error string `json:"error,omitempty"`
}

// DepthPass is one `resyncd once`.
type DepthPass struct {
	// Writes is what its summary counts: children created, updated,
	// deleted, taken and released, and statuses.
	Writes int `json:"writes"`
	// Seconds is the wall time from exec to exit; PassSeconds the pass's
	// duration as resyncd timed it.
	Seconds     float64 `json:"seconds"`
	PassSeconds float64 `json:"passSeconds"`
}

// converging is what the passes that wrote took: how many, their wall
// seconds and resyncd's pass seconds.
func (r *DepthRun) converging() (passes int, seconds, passSeconds float64) {
	for _, p := range r.Passes {
		if p.Writes > 0 {
			passes++
			seconds += p.Seconds
			passSeconds += p.PassSeconds
		}
	}
	return passes, seconds, passSeconds
}

// measureDepth measures the graphs at n, -reps times (once above
// -cold-reps-up-to), each round starting with the other graph, and leaves
// no WebApp behind for what runs after.
func (b *bench) measureDepth(ctx context.Context, res *Results, n, reps int) error {
	progress("N=%d graph depth: installing WebApp", n)
	b.clean = false
	if err := b.cl.installWebApps(ctx); err != nil {
		return fmt.Errorf("graph depth: %w", err)
	}
	configs, err := b.depthConfigs()
	if err != nil {
		return err
	}
	// Unmeasured: the first pass after WebApp is installed, and the first
	// writes of each kind in new namespaces, pay the server's start-up
	// costs, which would count against whichever graph went first.
	progress("N=%d graph depth: warming up, unmeasured", n)
	for _, g := range depthGraphs {
		if _, err := b.converge(ctx, g, configs[g.name], min(n, parentsPerNS), 0); err != nil {
			return fmt.Errorf("graph depth %d: %w", g.depth, err)
		}
	}
	gd := &GraphDepth{N: n}
	res.GraphDepth = gd
	if n > b.coldMax {
		reps = 1
	}
	for rep := 1; rep <= reps; rep++ {
		for i := range depthGraphs {
			g := depthGraphs[(i+rep-1)%len(depthGraphs)]
			progress("N=%d graph depth %d (%s.yaml): %d/%d", n, g.depth, g.name, rep, reps)
			r, err := b.converge(ctx, g, configs[g.name], n, rep)
			gd.Runs = append(gd.Runs, r)
			if err != nil {
				return fmt.Errorf("graph depth %d: %w", g.depth, err)
			}
		}
	}
	return b.cl.resetWebApps(ctx, 0)
}

// configHead is resyncd's bench configuration (driftCheck local) up to
// its resources, for a configuration of other resources.
func configHead() (string, error) {
	head, _, ok := strings.Cut(fmt.Sprintf(resyncdConfig, "local"), "resources:\n")
	if !ok {
		return "", errors.New("resyncd's bench configuration has no resources")
	}
	return head, nil
}

// depthConfigs writes resyncd's configuration for each graph: the bench's,
// limits lifted, watching WebApps with that graph.
func (b *bench) depthConfigs() (map[string]string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	head, err := configHead()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range depthGraphs {
		body := head + fmt.Sprintf("resources:\n  - group: %s\n    version: %s\n    resource: %s\n    graph: %s\n    interval: 24h\n",
			webAppGVR.Group, webAppGVR.Version, webAppGVR.Resource, filepath.Join(root, "testdata", "graphs", g.name+".yaml"))
		out[g.name] = filepath.Join(b.work, "resyncd-depth-"+g.name+".yaml")
		if err := os.WriteFile(out[g.name], []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// converge resets the cluster to n new WebApps and runs `resyncd once`
// until a pass writes nothing, then checks what the API server holds. A
// run that does not converge says why in its Error; the error returned is
// the bench's own.
func (b *bench) converge(ctx context.Context, g depthGraph, config string, n, rep int) (*DepthRun, error) {
	r := &DepthRun{Graph: g.name, Depth: g.depth, Rep: rep}
	if err := b.cl.resetWebApps(ctx, n); err != nil {
		return r, err
	}
	for range maxDepthPasses + 1 {
		p, err := b.oncePass(ctx, config)
		if err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			r.Error = fmt.Sprintf("pass %d: %v", len(r.Passes)+1, err)
			return r, nil
		}
		r.Passes = append(r.Passes, p)
		if p.Writes == 0 {
			missing, err := b.cl.depthConverged(ctx, n, g, webAppGVR, depthLabel)
			if err != nil {
				return r, err
			}
			if missing != "" {
				r.Error = "after a pass that wrote nothing, " + missing
			}
			return r, nil
		}
	}
	r.Error = fmt.Sprintf("still writing after %d passes", maxDepthPasses)
	return r, nil
}

// oncePass runs one `resyncd once` with config and reads its summary.
func (b *bench) oncePass(ctx context.Context, config string) (DepthPass, error) {
	ctx, cancel := context.WithTimeout(ctx, minRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.resyncd, "once", "--config", config, "--kubeconfig", b.kubeconfig)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	p := DepthPass{Seconds: time.Since(start).Seconds()}
	if err != nil {
		return p, fmt.Errorf("resyncd once: %w\n%s%s", err, stdout.String(), tail(stderr.String(), 2000))
	}
	p.Writes, p.PassSeconds, err = parseOnceSummary(stdout.String())
	return p, err
}

// columnGap separates the columns of `resyncd once`'s summary: two
// spaces at least, where a header holds one.
var columnGap = regexp.MustCompile(`\s{2,}`)

// onceWrites are the columns of `resyncd once`'s summary that count writes.
var onceWrites = []string{"TAKEN", "CREATED", "UPDATED", "DELETED", "RELEASED", "STATUSES"}

// parseOnceSummary reads the writes and the pass's duration from the
// summary `resyncd once` prints, summed over its lines (the slowest
// duration).
func parseOnceSummary(out string) (writes int, seconds float64, err error) {
	var cols []string
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case cols == nil && (strings.HasPrefix(line, "RESOURCE ") || strings.HasPrefix(line, "CLUSTER ")):
			cols = columnGap.Split(line, -1)
		case cols != nil:
			f := strings.Fields(line)
			if len(f) != len(cols) {
				return 0, 0, fmt.Errorf("resyncd once: summary line %q has %d columns, its header %d", line, len(f), len(cols))
			}
			for i, c := range cols {
				switch {
				case slices.Contains(onceWrites, c):
					v, err := strconv.Atoi(f[i])
					if err != nil {
						return 0, 0, fmt.Errorf("resyncd once: %s %q: %w", c, f[i], err)
					}
					writes += v
				case c == "DURATION":
					d, err := time.ParseDuration(f[i])
					if err != nil {
						return 0, 0, fmt.Errorf("resyncd once: DURATION %q: %w", f[i], err)
					}
					seconds = max(seconds, d.Seconds())
				}
			}
			rows++
		}
	}
	if rows == 0 {
		return 0, 0, fmt.Errorf("resyncd once printed no summary:\n%s", out)
	}
	return writes, seconds, nil
}

func depthNamespace(i int) string { return fmt.Sprintf("depth-%03d", i) }

// installWebApps installs WebApp's CustomResourceDefinition from testdata
// and waits until it is served and its OpenAPI schema, which graphs are
// type-checked against, is published.
func (c *cluster) installWebApps(ctx context.Context) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(root, "testdata", "crds", "example.resyncd.io_webapps.yaml"))
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
		return fmt.Errorf("WebApp's CustomResourceDefinition: %w", err)
	}
	if _, err := c.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.dyn.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		established := slices.ContainsFunc(conds, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == "Established" && m["status"] == "True"
		})
		if !established {
			return false, nil
		}
		paths, err := c.cs.Discovery().OpenAPIV3().Paths()
		_, ok := paths["apis/"+webAppGVR.Group+"/"+webAppGVR.Version]
		return err == nil && ok, nil
	})
}

// resetWebApps leaves exactly n WebApps, new, with no status and no
// child, spread over ⌈n/100⌉ namespaces of their own.
func (c *cluster) resetWebApps(ctx context.Context, n int) error {
	nss, err := c.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: depthLabel})
	if err != nil {
		return err
	}
	err = parallel(len(nss.Items), func(i int) error { return c.emptyWebApps(ctx, nss.Items[i].Name) })
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	namespaces := (n + parentsPerNS - 1) / parentsPerNS
	if err := c.ensureNamespaces(ctx, namespaces, depthNamespace, depthLabel); err != nil {
		return err
	}
	err = parallel(n, func(i int) error {
		_, err := c.dyn.Resource(webAppGVR).Namespace(depthNamespace(i%namespaces)).Create(ctx, webApp(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// emptyWebApps deletes every WebApp, ConfigMap, Deployment and Service in ns.
func (c *cluster) emptyWebApps(ctx context.Context, ns string) error {
	all := metav1.ListOptions{}
	if err := c.dyn.Resource(webAppGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		return err
	}
	if err := c.cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		return err
	}
	if err := c.cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		return err
	}
	return c.deleteServices(ctx, ns)
}

// webApp is the i-th WebApp: an image and two replicas.
func webApp(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": webAppGVR.GroupVersion().String(),
		"kind":       "WebApp",
		"metadata":   map[string]any{"name": fmt.Sprintf("app-%05d", i)},
		"spec": map[string]any{
			"image":    fmt.Sprintf("registry.example/team-%d/app:1.%d.0", i%20, i%7),
			"replicas": int64(parentReplicas),
		},
	}}
}

// depthChecks are what each WebApp must have, in the order each needs
// the one before: its settings ConfigMap, the Deployment naming it, the
// Service with its clusterIP, the address ConfigMap (of the chain,
// holding that clusterIP) and a status URL of that clusterIP.
func depthChecks(g depthGraph) []string {
	address := "address ConfigMap"
	if g.chained {
		address += " holding the clusterIP"
	}
	return []string{"settings ConfigMap", "Deployment naming it", "Service with a clusterIP", address, "status.url of the clusterIP"}
}

// depthConverged says, when the API server does not hold what g declares
// for each of n WebApps (of gvr, in the namespaces labelled label), how
// many lack what (the first of depthChecks each lacks); "" when all are
// there.
func (c *cluster) depthConverged(ctx context.Context, n int, g depthGraph, gvr schema.GroupVersionResource, label string) (string, error) {
	nss, err := c.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: label})
	if err != nil {
		return "", err
	}
	checks := depthChecks(g)
	lacking := make([]int, len(checks))
	parents := 0
	for _, ns := range nss.Items {
		found, err := c.depthLacking(ctx, ns.Name, g, gvr, lacking)
		if err != nil {
			return "", err
		}
		parents += found
	}
	var parts []string
	for i, c := range checks {
		if lacking[i] > 0 {
			parts = append(parts, fmt.Sprintf("%d without the %s", lacking[i], c))
		}
	}
	if parents == n && len(parts) == 0 {
		return "", nil
	}
	return fmt.Sprintf("not converged: %d WebApps for %d; %s", parents, n, strings.Join(parts, ", ")), nil
}

// depthLacking counts, for each of the WebApps in ns, the first of
// depthChecks it lacks into lacking, and returns how many WebApps it found.
func (c *cluster) depthLacking(ctx context.Context, ns string, g depthGraph, gvr schema.GroupVersionResource, lacking []int) (int, error) {
	apps, err := c.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	cms, err := c.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	deps, err := c.cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	svcs, err := c.cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	data := map[string]map[string]string{}
	for _, m := range cms.Items {
		data[m.Name] = m.Data
	}
	namesSettings := map[string]bool{}
	for _, d := range deps.Items {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			for _, from := range ctr.EnvFrom {
				namesSettings[d.Name] = namesSettings[d.Name] || (from.ConfigMapRef != nil && from.ConfigMapRef.Name == d.Name+"-settings")
			}
		}
	}
	ip := map[string]string{}
	for _, s := range svcs.Items {
		ip[s.Name] = s.Spec.ClusterIP
	}
	for _, app := range apps.Items {
		name := app.GetName()
		url, _, _ := unstructured.NestedString(app.Object, "status", "url")
		addr, hasAddr := data[name+"-address"]
		_, hasSettings := data[name+"-settings"]
		for i, ok := range []bool{
			hasSettings,
			namesSettings[name],
			ip[name] != "",
			hasAddr && (!g.chained || addr["clusterIP"] == ip[name]),
			url == "http://"+ip[name],
		} {
			if !ok {
				lacking[i]++
				break
			}
		}
	}
	return len(apps.Items), nil
}
