package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/internal/testenv"
)

// The kro figure: the WebApp graph as a kro ResourceGraphDefinition
// (testdata/graphs/flat-rgd.yaml; the four-deep chain-rgd.yaml for the
// chain's convergence) applied to the cluster, its N instances kept by
// kro's own controller and by resyncd serving the same RGD, each on a
// control plane of its own: cold convergence one at a time, then side by
// side the quiet window, drift latency and the churn of unrelated
// Deployments.

const (
	// kroFigure is the figure's name for -only.
	kroFigure = "kro"
	// The figure's contenders: kro with the flags its Helm chart sets by
	// default, kro with the settings its controller-tuning page shows for
	// more throughput, resyncd serving the RGD at the trade-off's two
	// intervals (the first and the last of -intervals).
	kroName      = "kro"
	kroTunedName = "kro-tuned"
	// kroResyncdPrefix and the interval name resyncd's contenders.
	kroResyncdPrefix = "resyncd-rgd-"
	// kroManagedBy is the managed-by label kro puts on every child;
	// resyncd, serving the RGD, puts its own.
	kroManagedBy = "kro"
	// kroLabel marks the namespaces of the figure's instances.
	kroLabel = "bench.resyncd.io/kro"
)

var rgdGVR = schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "resourcegraphdefinitions"}

// kroFlags are the flags of each kro contender beyond its addresses and
// kubeconfig. The Helm chart of kro v0.9.4 runs the controller with an
// info-level console log (the binary's own default is a development log
// at debug level), one instance worker, client QPS 100 and burst 150; its
// controller-tuning page shows 10 workers and QPS 200, burst 300 "for
// larger clusters". (The client limits have no effect in this version:
// controller-runtime has lifted them before kro sets them.)
var kroFlags = map[string][]string{
	kroName: {"--zap-log-level", "info", "--zap-encoder", "console", "--dynamic-controller-concurrent-reconciles", "1",
		"--client-qps", "100", "--client-burst", "150"},
	kroTunedName: {"--zap-log-level", "info", "--zap-encoder", "console", "--dynamic-controller-concurrent-reconciles", "10",
		"--client-qps", "200", "--client-burst", "300"},
}

// kroGraph is one RGD of the figure.
type kroGraph struct {
	depthGraph
	kind string
	gvr  schema.GroupVersionResource
}

var (
	kroFlat  = kroGraph{depthGraph: depthGraphs[0], kind: "WebAppFlat", gvr: schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "webappflats"}}
	kroChain = kroGraph{depthGraph: depthGraphs[1], kind: "WebAppChain", gvr: schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "webappchains"}}
)

// KroRun is the kro figure at each N of -kro-n.
type KroRun struct {
	// Version is kro's module version, from the binary's build
	// information; Flags each kro contender's flags.
	Version string              `json:"version"`
	Flags   map[string][]string `json:"flags"`
	// Intervals are resyncd's contenders' intervals, by name, in seconds.
	Intervals map[string]float64 `json:"intervals"`
	At        []*KroAt           `json:"at"`
}

// KroAt is the kro figure at one N.
type KroAt struct {
	N int `json:"n"`
	// Cold is each contender's cold convergence, under the flat graph and
	// (kro and resyncd once each) the chain.
	Cold []*KroCold `json:"cold"`
	// Quiet is every flat plane over the same window with everything in
	// sync: the servers' CPU and traffic, the contender's CPU and RSS.
	Quiet []*ChurnSample `json:"quiet"`
	// Latency is drift injected under kro, tuned kro and resyncd at its
	// shorter interval, side by side.
	Latency []*LatencySample `json:"latency"`
	// Churn is the same under unrelated Deployments changing.
	Churn *Churn `json:"churn,omitempty"`
}

// KroCold is one contender's convergence of N new instances.
type KroCold struct {
	Sample
	Graph string `json:"graph"`
	// Passes are resyncd's passes that wrote before everything was in
	// place; kro has none.
	Passes int `json:"passes,omitempty"`
	// Short is what the API server lacked after each of resyncd's passes
	// that did not leave everything in place.
	Short []string `json:"short,omitempty"`
	// BusyAfter is, for kro, how long its process went on using CPU after
	// its metrics counted every instance ACTIVE, until it was idle (under
	// kroIdleCPU over kroIdleSample); -1: still busy after kroSettleMax.
	BusyAfter float64 `json:"busyAfterSeconds,omitempty"`
}

const (
	// kroIdleSample and kroIdleCPU say when kro's process is idle: under
	// 1% of a core over 2 s (converged, it uses 0.1%).
	kroIdleSample = 2 * time.Second
	kroIdleCPU    = 0.02
	// kroSettleMax bounds the wait for kro to go idle: at 1,000 instances
	// it was idle 26-103 s after its cold run, at 5,000 still busy after 4
	// minutes.
	kroSettleMax = 15 * time.Minute
)

// kroTail is a kro plane whose process may still be working after its
// cold run: when it converged, and its cold sample.
type kroTail struct {
	p         *windowPlane
	cold      *KroCold
	converged time.Time
}

// settleKro waits until kro's process on each plane of tails is idle, up
// to kroSettleMax, and records in each cold sample how long it was busy
// after converging; the settled are taken off tails. It runs before
// every measurement that shares the machine with those processes.
func settleKro(ctx context.Context, tails *[]kroTail) error {
	deadline := time.Now().Add(kroSettleMax)
	for len(*tails) > 0 {
		before := make([]float64, len(*tails))
		for i, t := range *tails {
			before[i], _ = cpuSeconds(t.p.pid())
		}
		if err := sleep(ctx, kroIdleSample); err != nil {
			return err
		}
		var busy []kroTail
		for i, t := range *tails {
			after, err := cpuSeconds(t.p.pid())
			switch {
			case err != nil || after-before[i] < kroIdleCPU:
				t.cold.BusyAfter = time.Since(t.converged).Round(time.Second).Seconds()
			case time.Now().After(deadline):
				t.cold.BusyAfter = -1
			default:
				busy = append(busy, t)
			}
		}
		*tails = busy
	}
	return nil
}

// kroBinary is bin/kro and its CRDs, built by make kro.
func kroBinary() (bin, crds string, err error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", "", err
	}
	bin, crds = filepath.Join(root, "bin", "kro"), filepath.Join(root, "bin", "kro-crds")
	for _, p := range []string{bin, crds} {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("kro figure: %w (make kro builds kro's controller and links its CRDs)", err)
		}
	}
	return bin, crds, nil
}

// kroVersion is the version of kro's module bin was built from.
func kroVersion(bin string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return ""
	}
	if bi.Main.Path == "github.com/kubernetes-sigs/kro" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/kubernetes-sigs/kro" {
			return d.Version
		}
	}
	return ""
}

// measureKro measures the kro figure at n: at -kro-chain-n the chain's
// cold convergence under resyncd (and kro, with -kro-chain-kro); with
// flatToo, each contender's cold convergence of the flat graph alone on
// a new control plane, then the flat planes side by side over the quiet
// window, under drift and under churn. It stops every plane it started.
func (b *bench) measureKro(ctx context.Context, kr *KroRun, n int, flatToo bool) error {
	bin, crds, err := kroBinary()
	if err != nil {
		return err
	}
	fast, slow := b.kroResyncd()
	at := &KroAt{N: n}
	kr.At = append(kr.At, at)
	var planes []*windowPlane
	defer func() {
		for _, p := range planes {
			p.stop()
		}
	}()
	// The chain first and stopped after: only its cold convergence is
	// measured. Each plane is new: both controllers put a finalizer on
	// every instance, and no garbage collector runs to empty a plane.
	type run struct {
		name string
		g    kroGraph
		keep bool
	}
	// resyncd's runs go first: kro goes on working for a minute or two
	// after its metrics count every instance ACTIVE (its process and its
	// API server keep using CPU), which would slow a run after it on the
	// same machine; resyncd's planes, once converged, make a pass an
	// interval.
	var runs []run
	if n == b.kroChainN {
		runs = append(runs, run{fast, kroChain, false})
		if b.kroChainKro {
			runs = append(runs, run{kroName, kroChain, false})
		}
	}
	if flatToo {
		runs = append(runs, run{fast, kroFlat, true}, run{slow, kroFlat, true}, run{kroName, kroFlat, true}, run{kroTunedName, kroFlat, true})
	}
	// kro planes still working after their cold run: each next cold run
	// and the quiet window wait for them to go idle.
	var tails []kroTail
	settle := func(ctx context.Context) error { return settleKro(ctx, &tails) }
	for _, c := range runs {
		p, cold, err := b.kroCold(ctx, kr, bin, crds, c.name, c.g, n, settle)
		if p != nil {
			planes = append(planes, p)
		}
		if cold != nil {
			at.Cold = append(at.Cold, cold)
		}
		if err != nil {
			return err
		}
		if !c.keep {
			p.stop()
		} else if p.interval == 0 {
			tails = append(tails, kroTail{p, cold, time.Now()})
		}
	}
	if !flatToo {
		return nil
	}
	var flat []*windowPlane
	for _, p := range planes {
		if !p.stopped {
			flat = append(flat, p)
		}
	}
	o := b.tradeOffOpts
	if err := settle(ctx); err != nil {
		return err
	}
	progress("N=%d kro: a quiet window of %s on %d control planes", n, o.window, len(flat))
	// A moment for resyncd's pass in flight.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	at.Quiet = measureChurn(ctx, flat, make([]atomic.Int64, len(flat)), o.window)
	progress("N=%d kro: %d changes over %s under 3 contenders", n, o.latencyChanges, o.latencySpan)
	at.Latency = b.latencyOn(ctx, planesNamed(flat, kroName, kroTunedName, fast), n)
	if o.churnWindow == 0 {
		return nil
	}
	// The churn: kro (its informers see every Deployment) and resyncd at
	// both intervals; tuned kro's informers are kro's.
	var churned []*windowPlane
	for _, p := range flat {
		if p.name == kroTunedName {
			p.stop()
			continue
		}
		churned = append(churned, p)
	}
	at.Churn = &Churn{N: n, Objects: o.others * n, PeriodSeconds: churnPeriod(n).Seconds(), DeploymentsOnly: true}
	progress("N=%d kro churn: %d control planes with %d unrelated Deployments each", n, len(churned), at.Churn.Objects)
	errs := make([]error, len(churned))
	var wg sync.WaitGroup
	for i, p := range churned {
		wg.Go(func() { errs[i] = p.cl.loadOthers(ctx, at.Churn.Objects, false) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	at.Churn.Windows, at.Churn.Latency, err = b.churnWindow(ctx, churned, planesNamed(churned, kroName, fast), n)
	return err
}

// kroResyncd names resyncd's contenders of the kro figure, at the first
// and the last of -intervals.
func (b *bench) kroResyncd() (fast, slow string) {
	ivs := b.tradeOffOpts.intervals
	return kroResyncdPrefix + shortDuration(ivs[0]), kroResyncdPrefix + shortDuration(ivs[len(ivs)-1])
}

// kroIntervals are the intervals of resyncd's contenders, by name.
func (b *bench) kroIntervals() map[string]float64 {
	ivs := b.tradeOffOpts.intervals
	fast, slow := b.kroResyncd()
	return map[string]float64{fast: ivs[0].Seconds(), slow: ivs[len(ivs)-1].Seconds()}
}

// planesNamed is the planes of these names, in that order.
func planesNamed(planes []*windowPlane, names ...string) []*windowPlane {
	var out []*windowPlane
	for _, name := range names {
		for _, p := range planes {
			if p.name == name {
				out = append(out, p)
			}
		}
	}
	return out
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kroCold starts a control plane with kro's CRDs and the graph's RGD, has
// the contender make the RGD's CRD (unmeasured; then it stops), loads n
// instances and starts the contender again, measured from its exec until
// it has converged them; the API server's objects are checked after. The
// plane is returned with the contender running.
func (b *bench) kroCold(ctx context.Context, kr *KroRun, bin, crds, name string, g kroGraph, n int, settle func(context.Context) error) (*windowPlane, *KroCold, error) {
	dir := "kro-" + name + "-" + g.name
	progress("N=%d kro: %s, %s graph: a control plane", n, name, g.name)
	env, cl, kubeconfig, err := startPlane(b.work, dir, crds)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	p := &windowPlane{name: name, managedBy: kroManagedBy, env: env, cl: cl, kubeconfig: kubeconfig}
	p.interval = time.Duration(kr.Intervals[name] * float64(time.Second))
	if p.interval > 0 {
		p.managedBy = "resyncd"
	}
	if err := cl.applyRGD(ctx, g.name); err != nil {
		return p, nil, fmt.Errorf("%s: %w", dir, err)
	}
	start := func(tag string) (*daemon, string, error) {
		if p.interval > 0 {
			config, err := b.kroResyncdConfig(dir, p.interval)
			if err != nil {
				return nil, "", err
			}
			d, err := b.spawnDaemon(dir+tag, config, kubeconfig)
			return d, "", err
		}
		metrics, health := freeAddr(), freeAddr()
		args := append([]string{bin, "--kubeconfig", kubeconfig, "--metrics-bind-address", metrics, "--health-probe-bind-address", health}, kroFlags[name]...)
		d, err := b.spawn(dir+tag, args)
		return d, metrics, err
	}
	setUp, _, err := start("-setup")
	if err != nil {
		return p, nil, err
	}
	err = cl.rgdActive(ctx, g)
	setUp.stop()
	if err != nil {
		return p, nil, fmt.Errorf("%s: %w\n%s", dir, err, strings.Join(setUp.tail, "\n"))
	}
	if err := cl.loadInstances(ctx, g, n); err != nil {
		return p, nil, fmt.Errorf("%s: %w", dir, err)
	}
	// The plane is ready; kro on the planes before may still be working.
	if err := settle(ctx); err != nil {
		return p, nil, err
	}
	progress("N=%d kro: %s, %s graph: cold", n, name, g.name)
	cold := &KroCold{Sample: Sample{Contender: name, N: n, Rep: 1, Phase: "cold"}, Graph: g.name}
	before, err := scrapeTraffic(ctx, cl.cs.CoreV1().RESTClient())
	if err != nil {
		return p, nil, err
	}
	d, metrics, err := start("")
	if err != nil {
		return p, nil, err
	}
	p.daemon = d
	var after Traffic
	if metrics != "" {
		after, err = b.kroConverged(ctx, d, metrics, cl, n)
	} else {
		cold.Passes, cold.Short, after, err = b.resyncdConverged(ctx, d, cl, g, n)
	}
	cold.Seconds = time.Since(d.start).Seconds()
	cold.PeakRSS, cold.PeakHeap = vmHWM(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid)), d.heap.Load()
	cold.Traffic = after.sub(before)
	if err != nil {
		if errors.Is(err, errNotConverged) {
			cold.Error = err.Error()
			return p, cold, nil
		}
		return p, cold, fmt.Errorf("%s: %w\n%s", dir, err, strings.Join(d.tail, "\n"))
	}
	missing, err := cl.depthConverged(ctx, n, g.depthGraph, g.gvr, kroLabel)
	if err != nil {
		return p, cold, err
	}
	cold.Error = missing
	return p, cold, nil
}

// kroConverged waits until kro's own metrics count n instances ACTIVE,
// reading its /metrics, not the API server, and returns the API server's
// traffic at that moment.
func (b *bench) kroConverged(ctx context.Context, d *daemon, metrics string, cl *cluster, n int) (Traffic, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout(n))
	defer cancel()
	for {
		active, err := kroActive(ctx, metrics)
		if err == nil && active >= n {
			return scrapeTraffic(context.WithoutCancel(ctx), cl.cs.CoreV1().RESTClient())
		}
		select {
		case <-d.exited:
			return Traffic{}, fmt.Errorf("kro exited: %v", d.cmd.ProcessState)
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return Traffic{}, fmt.Errorf("kro (N=%d, %d active): %w in %s", n, active, errNotConverged, runTimeout(n))
			}
			return Traffic{}, ctx.Err()
		}
	}
}

// kroActive is the number of instances kro holds ACTIVE by its
// instance_state_transitions_total: the transitions to ACTIVE less those
// from it.
func kroActive(ctx context.Context, addr string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, err := httpGet(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return 0, err
	}
	return parseKroActive(raw)
}

// parseKroActive is kroActive of kro's metrics in the text format.
func parseKroActive(raw []byte) (int, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return 0, fmt.Errorf("kro's metrics: %w", err)
	}
	active := 0.0
	if f := fams["instance_state_transitions_total"]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() != "ACTIVE" {
					continue
				}
				switch l.GetName() {
				case "to_state":
					active += m.GetCounter().GetValue()
				case "from_state":
					active -= m.GetCounter().GetValue()
				}
			}
		}
	}
	return int(active), nil
}

// resyncdConverged waits for the passes of the RGD's instances until one
// leaves every instance's children and status in place, kicking each next
// one with SIGUSR1, and returns the passes that wrote and the API server's
// traffic at the end of the last, without the bench's own checks.
func (b *bench) resyncdConverged(ctx context.Context, d *daemon, cl *cluster, g kroGraph, n int) (int, []string, Traffic, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout(n))
	defer cancel()
	rc := cl.cs.CoreV1().RESTClient()
	var checks Traffic // what the bench's checks cost, taken off
	passes := 0
	var short []string
	resource := g.gvr.Resource + "." + g.gvr.Version + "." + g.gvr.Group
	for range maxDepthPasses + 1 {
		var l passLine
		for l.Resource != resource {
			var err error
			if l, err = d.pass(ctx); err != nil {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return passes, short, Traffic{}, fmt.Errorf("resyncd (N=%d): %w in %s", n, errNotConverged, runTimeout(n))
				}
				return passes, short, Traffic{}, err
			}
		}
		if l.writes() > 0 {
			passes++
		}
		at, err := scrapeTraffic(ctx, rc)
		if err != nil {
			return passes, short, Traffic{}, err
		}
		missing, err := cl.depthConverged(ctx, n, g.depthGraph, g.gvr, kroLabel)
		if err != nil {
			return passes, short, Traffic{}, err
		}
		if missing == "" {
			return passes, short, at.sub(checks), nil
		}
		short = append(short, missing)
		done, err := scrapeTraffic(ctx, rc)
		if err != nil {
			return passes, short, Traffic{}, err
		}
		checks = checks.add(done.sub(at))
		if err := d.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			return passes, short, Traffic{}, err
		}
	}
	return passes, short, Traffic{}, fmt.Errorf("resyncd (N=%d): still not converged after %d passes", n, maxDepthPasses+1)
}

// kroResyncdConfig writes resyncd's configuration for the figure: the
// bench's, limits lifted, serving the cluster's RGDs at interval.
func (b *bench) kroResyncdConfig(dir string, interval time.Duration) (string, error) {
	head, err := configHead()
	if err != nil {
		return "", err
	}
	body := head + "resourceGraphDefinitions:\n  enabled: true\n  interval: " + shortDuration(interval) + "\nresources: []\n"
	path := filepath.Join(b.work, "resyncd-"+dir+".yaml")
	return path, os.WriteFile(path, []byte(body), 0o644)
}

// applyRGD creates testdata/graphs/NAME-rgd.yaml.
func (c *cluster) applyRGD(ctx context.Context, name string) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(root, "testdata", "graphs", name+"-rgd.yaml"))
	if err != nil {
		return err
	}
	rgd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &rgd.Object); err != nil {
		return fmt.Errorf("%s-rgd.yaml: %w", name, err)
	}
	_, err = c.dyn.Resource(rgdGVR).Create(ctx, rgd, metav1.CreateOptions{})
	return err
}

// rgdActive waits until the RGD of g is Active and its CRD serves g's kind.
func (c *cluster) rgdActive(ctx context.Context, g kroGraph) error {
	name := "webapp-" + g.name
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		rgd, err := c.dyn.Resource(rgdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last, _, _ = unstructured.NestedString(rgd.Object, "status", "state")
		if last != "Active" {
			return false, nil
		}
		_, err = c.dyn.Resource(g.gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("RGD %s not Active (state %q): %w", name, last, err)
	}
	return nil
}

func kroNamespace(i int) string { return fmt.Sprintf("kro-%03d", i) }

// loadInstances creates n instances of g's kind, new, 100 a namespace.
func (c *cluster) loadInstances(ctx context.Context, g kroGraph, n int) error {
	namespaces := (n + parentsPerNS - 1) / parentsPerNS
	if err := c.ensureNamespaces(ctx, namespaces, kroNamespace, kroLabel); err != nil {
		return err
	}
	return parallel(n, func(i int) error {
		u := webApp(i)
		u.SetAPIVersion(g.gvr.GroupVersion().String())
		u.SetKind(g.kind)
		_, err := c.dyn.Resource(g.gvr).Namespace(kroNamespace(i%namespaces)).Create(ctx, u, metav1.CreateOptions{})
		return err
	})
}

// httpGet is the body of a GET of url.
func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// freeAddr is a loopback address with a port free now.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer l.Close()
	return l.Addr().String()
}

// latencyOn injects drift under each plane's contender at the same time
// and measures how long each change lives.
func (b *bench) latencyOn(ctx context.Context, planes []*windowPlane, n int) []*LatencySample {
	o := b.tradeOffOpts
	out := make([]*LatencySample, len(planes))
	var wg sync.WaitGroup
	for i, p := range planes {
		wg.Go(func() {
			// Until repaired: the span, then an interval more (resyncd's
			// next pass), or a minute for a watch.
			settle := max(p.interval, time.Minute) + 30*time.Second
			rng := rand.New(rand.NewPCG(uint64(n), uint64(i)))
			s := &LatencySample{Contender: p.name, Interval: p.interval.Seconds()}
			var err error
			s.Seconds, s.Unrepaired, err = p.cl.driftLatency(ctx, p.managedBy, o.latencySpan, o.latencyChanges, settle, rng)
			if err != nil {
				s.Error = err.Error()
			}
			out[i] = s
		})
	}
	wg.Wait()
	return out
}
