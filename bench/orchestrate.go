package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/internal/testenv"
)

// A contender is one process the bench runs against the cluster.
type contender struct {
	// Name is the key in the results.
	Name string
	// ManagedBy is the managed-by label value of its children.
	ManagedBy string
	// UntilConverged runs until it prints "converged", then gets SIGTERM;
	// the others exit by themselves.
	UntilConverged bool
	// Repeats: it is also run on a converged cluster and after drift.
	Repeats bool
	// Config is resyncd's configuration: the steady and drift passes are
	// passes of one `resyncd run`, started with SIGUSR1.
	Config string
	// TwoClusters: the N parents are split over two control planes, N/2
	// in each, which one resyncd keeps in sync.
	TwoClusters bool
	// OneNamespace: the N parents are all in one namespace, not 100 a
	// namespace: a pass holds a namespace's children at a time, so its
	// memory grows with the largest namespace.
	OneNamespace bool
	// MaxN, when set, is the largest N it runs at.
	MaxN int
	// Targeted: a target of the report is on its figures, so it runs at
	// every N, above -all-up-to too.
	Targeted bool
	// ColdRepeats: its cold convergence is repeated -reps times up to
	// -target-cold-reps-up-to, above -cold-reps-up-to too, so that the
	// target on it (against the floor, or the graph's against the
	// built-in renderer) and an A/B of it have a spread.
	ColdRepeats bool
	// Baseline: the contender runs -baseline's binary rather than
	// -resyncd's, for a same-run A/B of two builds.
	Baseline bool
	args     func(b *bench, n int) []string
}

// binary is the resyncd binary c runs.
func (b *bench) binary(c contender) string {
	if c.Baseline {
		return b.baseline
	}
	return b.resyncd
}

const (
	floorName         = "raw-ssa-floor"
	resyncdName       = "resyncd"
	resyncdServerName = "resyncd-server"
	resyncdGraphName  = "resyncd-graph"
	resyncdTwoName    = "resyncd-2-clusters"
	resyncdOneNSName  = "resyncd-one-namespace"
	// oneNamespace holds the parents of resyncdOneNSName.
	oneNamespace = "bench-one"
	// baselineSuffix names a contender run with -baseline's binary.
	baselineSuffix = "-baseline"
	crName         = "controller-runtime"
	cr8Name        = "controller-runtime-8"
	listName       = "raw-list"
	// untargetedMaxN is the largest N of the driftCheck server's and two
	// clusters' figures, which no target is on: make bench-scale runs them
	// at N = 1,000 (make bench leaves them out to stay within 30 minutes).
	untargetedMaxN = 1000
	// minRunTimeout is the longest a run of a contender may take at any
	// N, and the longest a `resyncd run` may take to end a pass.
	minRunTimeout = 15 * time.Minute
)

// runTimeout is the longest a contender's run may take at n parents: 15
// minutes, or 150 ms a parent where that is longer. Cold convergence at N
// = 20,000 is bound by the API server's writes, 60–75 a second on two
// cores when the machine is quick, 13–16 minutes for its 60,000; the same
// run took 19 minutes on one day and was cut off at 25 on a slower one, so
// the cap is twice that.
func runTimeout(n int) time.Duration {
	return max(minRunTimeout, time.Duration(n)*150*time.Millisecond)
}

// errNotConverged: a contender that runs until converged did not within
// runTimeout. Its cold sample says so, with the time it had; its repeats
// are not run.
var errNotConverged = errors.New("did not converge")

// once is the command line of `resyncd once` with the build bin and the
// configuration named config, against the bench's cluster if local (a
// configuration of clusters names its own). It runs with no time limit of
// its own (--timeout 0): the bench's, runTimeout, bounds it.
func (b *bench) once(bin, config string, local bool) []string {
	args := []string{bin, "once", "--timeout", "0", "--config", b.configs[config]}
	if local {
		args = append(args, "--kubeconfig", b.kubeconfig)
	}
	return args
}

// contenders are what the bench measures.
func contenders() []contender {
	return []contender{
		{Name: floorName, ManagedBy: "resyncd", Targeted: true, ColdRepeats: true, args: func(b *bench, _ int) []string {
			return []string{b.self, "floor", "--kubeconfig", b.kubeconfig, "--concurrency", "8", "--page-size", "500"}
		}},
		{Name: resyncdName, ManagedBy: "resyncd", Repeats: true, Targeted: true, ColdRepeats: true, Config: "local", args: func(b *bench, _ int) []string {
			return b.once(b.resyncd, "local", true)
		}},
		{Name: resyncdName + baselineSuffix, ManagedBy: "resyncd", Repeats: true, Targeted: true, ColdRepeats: true, Config: "local", Baseline: true, args: func(b *bench, _ int) []string {
			return b.once(b.baseline, "local", true)
		}},
		{Name: resyncdServerName, ManagedBy: "resyncd", Repeats: true, Config: "server", MaxN: untargetedMaxN, args: func(b *bench, _ int) []string {
			return b.once(b.resyncd, "server", true)
		}},
		{Name: resyncdGraphName, ManagedBy: "resyncd", Repeats: true, ColdRepeats: true, Config: "graph", args: func(b *bench, _ int) []string {
			return b.once(b.resyncd, "graph", true)
		}},
		{Name: resyncdGraphName + baselineSuffix, ManagedBy: "resyncd", Repeats: true, ColdRepeats: true, Config: "graph", Baseline: true, args: func(b *bench, _ int) []string {
			return b.once(b.baseline, "graph", true)
		}},
		{Name: resyncdTwoName, ManagedBy: "resyncd", Repeats: true, Config: "clusters", TwoClusters: true, MaxN: untargetedMaxN, args: func(b *bench, _ int) []string {
			return b.once(b.resyncd, "clusters", false)
		}},
		{Name: resyncdOneNSName, ManagedBy: "resyncd", Repeats: true, Config: "local", OneNamespace: true, MaxN: 5000, args: func(b *bench, _ int) []string {
			return b.once(b.resyncd, "local", true)
		}},
		{Name: crName, ManagedBy: crManagedBy, UntilConverged: true, Repeats: true, args: func(b *bench, n int) []string {
			return []string{b.self, "cr", "--kubeconfig", b.kubeconfig, "--expect", strconv.Itoa(n)}
		}},
		// The same with as many workers as resyncd: what a team that cares
		// about cold convergence sets.
		{Name: cr8Name, ManagedBy: crManagedBy, UntilConverged: true, Repeats: true, args: func(b *bench, n int) []string {
			return []string{b.self, "cr", "--kubeconfig", b.kubeconfig, "--expect", strconv.Itoa(n), "--workers", "8"}
		}},
	}
}

// contenderSet is the names of a comma-separated list of contenders, or
// of the other figures named in also; an error names the flag and each
// name that is neither.
func contenderSet(flagName, list string, also ...string) (map[string]bool, error) {
	set := map[string]bool{}
	var unknown []string
	for f := range strings.SplitSeq(list, ",") {
		name := strings.TrimSpace(f)
		switch {
		case name == "":
		case contenderNamed(name).Name == "" && !slices.Contains(also, name):
			unknown = append(unknown, strconv.Quote(name))
		default:
			set[name] = true
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s %q: no contender is named %s", flagName, list, strings.Join(unknown, ", "))
	}
	return set, nil
}

// contenderNamed is the contender of that name; the zero contender if
// there is none.
func contenderNamed(name string) contender {
	for _, c := range contenders() {
		if c.Name == name {
			return c
		}
	}
	return contender{}
}

// resyncdConfig is resyncd's default configuration with the client-side
// write limits lifted, as the floor has none: the API server is the limit.
const resyncdConfig = `# resyncd's defaults, but for the client-side write limits: the bench
# measures the engine and the API server, not apply.qps. Passes after the
# first are started by the bench with SIGUSR1.
driftCheck: %s
apply:
  qps: 1000000
  burst: 1000000
  maxWritesPerPass: 1000000
leaderElection: {enabled: false}
metrics: {address: "127.0.0.1:0"}
health: {address: "127.0.0.1:0"}
resources:
  - group: resyncd.io
    version: v1alpha1
    resource: httpservices
    renderer: httpservice
    interval: 24h
`

// Sample is one process run.
type Sample struct {
	Contender string `json:"contender"`
	N         int    `json:"n"`
	Rep       int    `json:"rep"`
	// Phase: cold (no child, no status), steady (in sync), drift (after
	// Drifted children were changed), again (the pass after drift).
	Phase string `json:"phase"`
	// Seconds is the wall time from exec to exit, or to "converged".
	Seconds float64 `json:"seconds"`
	// PassSeconds is the pass as the process timed it: resyncd's pass
	// duration, the floor's and raw LIST's work, controller-runtime's time
	// from start to every parent reconciled.
	PassSeconds float64 `json:"passSeconds"`
	PeakRSS     int64   `json:"peakRSSBytes"`
	// PeakHeap is the largest heap the Go runtime's GC trace reported.
	PeakHeap int64   `json:"peakHeapBytes,omitempty"`
	Traffic  Traffic `json:"traffic"`
	// Others is the number of unrelated Deployments and of unrelated
	// Services in the cluster (phase "others").
	Others  int `json:"others,omitempty"`
	Drifted int `json:"drifted,omitempty"`
	// StillDrifted counts drifted children not repaired after the run.
	StillDrifted int `json:"stillDrifted,omitempty"`
	// Replica is the ring figure's replica the sample is of ("all": the
	// ring's replicas at once).
	Replica string `json:"replica,omitempty"`
	// Parents is the number of parents the measured passes listed.
	Parents int `json:"parents,omitempty"`
	// BytesByCollection is Traffic.Bytes by collection (ring figure).
	BytesByCollection map[string]float64 `json:"bytesByCollection,omitempty"`
	Error             string             `json:"error,omitempty"`
}

// Results is everything one bench run measured.
type Results struct {
	Date     string    `json:"date"`
	Machine  Machine   `json:"machine"`
	Versions Versions  `json:"versions"`
	Sizes    []int     `json:"sizes"`
	Reps     int       `json:"reps"`
	Drift    float64   `json:"driftFraction"`
	Seconds  float64   `json:"seconds"`
	Samples  []*Sample `json:"samples"`
	// TradeOff is what polling costs and saves against watching, at one N.
	TradeOff *TradeOff `json:"tradeOff,omitempty"`
	// FixedN is the handful of parents resyncd's fixed part was measured
	// with (samples at that N); 0: not measured.
	FixedN int `json:"fixedN,omitempty"`
	// GraphDepth is what depth costs a graph's convergence, at one N.
	GraphDepth *GraphDepth `json:"graphDepth,omitempty"`
	// Ring is one replica against three sharing the work, at each N of
	// -ring-n.
	Ring *RingRun `json:"ring,omitempty"`
	// Kro is kro's controller against resyncd serving the same RGD, at
	// each N of -kro-n.
	Kro *KroRun `json:"kro,omitempty"`
}

type bench struct {
	self, resyncd, kubeconfig string
	// baseline is -baseline's binary; empty: no A/B.
	baseline string
	work     string // the daemons' logs go here
	configs  map[string]string
	cl       *cluster
	env      *testenv.Env
	// second is the second cluster of the two-cluster contender, and its
	// control plane, started when that contender first runs.
	second    *cluster
	secondEnv *testenv.Env
	coldMax   int
	// targetColdMax is -target-cold-reps-up-to.
	targetColdMax int
	// untargetedRounds is -untargeted-rounds.
	untargetedRounds int
	// allMax is -all-up-to.
	allMax int
	only   map[string]bool
	// skip are the contenders -skip leaves out.
	skip    map[string]bool
	profile string
	// tradeOffN is the N at which the trade-off against watching is
	// measured; 0: nowhere.
	tradeOffN    int
	tradeOffOpts tradeOffOptions
	// depthN is the N at which graph depth is measured; 0: nowhere.
	depthN int
	// fixedN is the N at which resyncd's fixed part is measured; 0:
	// nowhere.
	fixedN int
	// ringN are the Ns of the ring figure; none: not measured.
	ringN []int
	// kroN are the Ns of the kro figure; none: not measured. kroChainN
	// is the N at which the chain converges (0: nowhere), by kro too if
	// kroChainKro.
	kroN        []int
	kroChainN   int
	kroChainKro bool
	// clean: nothing (a cold run, the graph depth, the ring) has written
	// to the main plane since it started.
	clean bool
}

func orchestrate(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	sizes := fs.String("sizes", "1000,5000", "numbers of HttpServices, comma-separated")
	reps := fs.Int("reps", 3, "repetitions of each measurement")
	drift := fs.Float64("drift", 0.05, "fraction of children drifted")
	resyncdBin := fs.String("resyncd", "bin/resyncd", "the resyncd binary")
	baseline := fs.String("baseline", "", "a second resyncd binary (of an earlier commit, say) measured beside -resyncd as "+
		resyncdName+baselineSuffix+" and "+resyncdGraphName+baselineSuffix+", for a same-run A/B; the report gives the ratios")
	out := fs.String("out", "", "write the results as JSON here")
	doc := fs.String("doc", "", "write the Markdown report here")
	work := fs.String("work", ".run/bench", "directory for the kubeconfig, configurations and the control plane's log")
	coldMax := fs.Int("cold-reps-up-to", 2000, "repeat cold convergence -reps times up to this N; above it, once")
	allMax := fs.Int("all-up-to", 0, "above this N, only the contenders a target is on run (resyncd, the raw-SSA floor, the raw LIST and a -baseline's resyncd); 0: every contender at every N")
	untargetedRounds := fs.Int("untargeted-rounds", 0, "rounds of steady passes and drift of the contenders no target is on (driftCheck server, two clusters, one namespace, controller-runtime); 0: -reps")
	targetColdMax := fs.Int("target-cold-reps-up-to", 5000, "repeat the cold convergence of the contenders a cold target is on (resyncd, the raw-SSA floor, the graph) -reps times up to this N, above -cold-reps-up-to too")
	only := fs.String("only", "", "run only these contenders, comma-separated (development)")
	skip := fs.String("skip", "", "leave out these contenders, comma-separated (make bench leaves "+resyncdOneNSName+" to make bench-scale)")
	profile := fs.String("profile", "", "write pprof CPU and heap profiles of every resyncd run into this directory")
	fixedN := fs.Int("fixed-n", 0, "measure resyncd keeping this many parents in sync, the part of its memory that does not grow with them, against a target (0: not at all; with -only, only if it lists "+resyncdName+")")
	depthN := fs.Int("depth-n", 0, "measure the passes and seconds to converge this many WebApps under a graph four deep and one deep (0: not at all; with -only, only if it lists "+depthName+")")
	ringN := fs.String("ring-n", "", "measure one resyncd run against "+strconv.Itoa(ringReplicas)+
		" sharing the work at these Ns, comma-separated (none: not at all; with -only, only if it lists "+ringThreeName+")")
	kroN := fs.String("kro-n", "", "measure kro's controller (bin/kro, make kro) against resyncd serving the same ResourceGraphDefinition at these Ns, comma-separated, "+
		"with the trade-off's window, intervals, drift and churn flags (none: not at all; with -only, only if it lists "+kroFigure+")")
	kroChainN := fs.Int("kro-chain-n", 0, "in the kro figure, converge the four-deep chain (chain-rgd.yaml) at this N too (0: not at all)")
	kroChainKro := fs.Bool("kro-chain-kro", true, "with -kro-chain-n, converge the chain by kro too, not only by resyncd")
	from := fs.String("from", "", "write the report of this results file (-out of an earlier run) to -doc, and run nothing")
	var to tradeOffOptions
	fs.IntVar(&to.n, "tradeoff-n", 0, "measure the trade-off against watching at this N, one of -sizes (0: not at all)")
	fs.IntVar(&to.others, "others", 4, "unrelated Deployments, and Services, in the trade-off: this many times N")
	fs.DurationVar(&to.window, "window", 3*time.Minute, "the trade-off's window with everything in sync")
	intervals := fs.String("intervals", "30s,3m", "resyncd's intervals in the trade-off's window, comma-separated; drift latency at the first")
	fs.DurationVar(&to.latencySpan, "latency-span", 60*time.Second, "the span over which drift is injected at random moments")
	fs.IntVar(&to.latencyChanges, "latency-changes", 60, "the number of children drifted over -latency-span")
	fs.DurationVar(&to.churnWindow, "churn-window", 60*time.Second, "the trade-off's window with the unrelated Deployments changing, each once every N/10 seconds (0: no churn)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from != "" {
		return reportFrom(*from, *doc)
	}
	ns, err := parseSizes("-sizes", *sizes)
	if err != nil {
		return err
	}
	for _, f := range strings.Split(*intervals, ",") {
		iv, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || iv <= 0 {
			return fmt.Errorf("-intervals %q: %q is not a positive duration", *intervals, f)
		}
		to.intervals = append(to.intervals, iv)
	}
	var rings []int
	if *ringN != "" {
		if rings, err = parseSizes("-ring-n", *ringN); err != nil {
			return err
		}
	}
	var kros []int
	if *kroN != "" {
		if kros, err = parseSizes("-kro-n", *kroN); err != nil {
			return err
		}
	}
	if to.n != 0 && !slices.Contains(ns, to.n) {
		return fmt.Errorf("-tradeoff-n %d: not one of -sizes %s", to.n, *sizes)
	}
	if *depthN < 0 {
		return fmt.Errorf("-depth-n %d: must not be negative", *depthN)
	}
	if *fixedN < 0 {
		return fmt.Errorf("-fixed-n %d: must not be negative", *fixedN)
	}
	if *untargetedRounds < 0 {
		return fmt.Errorf("-untargeted-rounds %d: must not be negative", *untargetedRounds)
	}
	if *reps < 1 {
		return fmt.Errorf("-reps %d: must be at least 1", *reps)
	}
	skipped, err := contenderSet("-skip", *skip)
	if err != nil {
		return err
	}
	onlyThese, err := contenderSet("-only", *only, depthName, ringThreeName, kroFigure)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	b, err := setUp(*work, *resyncdBin)
	if err != nil {
		return err
	}
	b.coldMax, b.targetColdMax, b.allMax, b.profile = *coldMax, *targetColdMax, *allMax, *profile
	b.untargetedRounds, b.skip = *untargetedRounds, skipped
	b.tradeOffN, b.tradeOffOpts, b.depthN, b.ringN, b.fixedN, b.kroN = to.n, to, *depthN, rings, *fixedN, kros
	b.kroChainN, b.kroChainKro = *kroChainN, *kroChainKro
	if *baseline != "" {
		if b.baseline, err = filepath.Abs(*baseline); err == nil {
			_, err = os.Stat(b.baseline)
		}
		if err != nil {
			_ = b.env.Stop()
			return fmt.Errorf("-baseline: %w", err)
		}
	}
	if *only != "" {
		b.only = onlyThese
	}
	if b.profile != "" {
		if err := os.MkdirAll(b.profile, 0o755); err != nil {
			return err
		}
	}
	defer func() {
		if err := errors.Join(b.env.Stop(), b.secondEnv.Stop()); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop control plane:", err)
		}
	}()
	res := &Results{Date: time.Now().UTC().Format(time.RFC3339), Sizes: ns, Reps: *reps, Drift: *drift}
	res.Machine, res.Versions = machine(), versions(b)
	start := time.Now()
	runErr := b.runAll(ctx, res, ns, *reps, *drift)
	res.Seconds = time.Since(start).Seconds()
	if *out != "" {
		// Written also when a run failed: the samples so far show why.
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	report := summarize(res)
	fmt.Print(report.fixedPart() + report.tables() + report.scale() + report.tradeOff() + report.graphDepth() + report.ring() + report.kro())
	if *doc != "" {
		if err := report.writeReport(*doc, *out); err != nil {
			return err
		}
	}
	return nil
}

// runAll measures every contender at every size: cold convergence -reps
// times (above -cold-reps-up-to, where it takes minutes, once, but for
// resyncd's and the raw-SSA floor's up to -target-cold-reps-up-to), then, on the
// cluster its last cold run converged, -reps rounds of steady pass and
// drift. Repeated cold runs go round by round, each round starting one
// contender later: the server slows as a bench goes on (its etcd's history
// grows), and a contender measured after the others would seem slower than
// it is. At -tradeoff-n, the trade-off against watching follows. Graph
// depth, at -depth-n, goes first, on WebApps of its own, removed after;
// the ring figure, at -ring-n, last, on parents of its own.
func (b *bench) runAll(ctx context.Context, res *Results, sizes []int, reps int, drift float64) error {
	if err := b.runContenders(ctx, res, sizes, reps, drift); err != nil {
		return err
	}
	if (len(b.kroN) > 0 || b.kroChainN > 0) && (b.only == nil || b.only[kroFigure]) {
		bin, _, err := kroBinary()
		if err != nil {
			return err
		}
		res.Kro = &KroRun{Version: kroVersion(bin), Flags: kroFlags, Intervals: b.kroIntervals()}
		ns := slices.Clone(b.kroN)
		if b.kroChainN > 0 && !slices.Contains(ns, b.kroChainN) {
			ns = append(ns, b.kroChainN)
		}
		slices.Sort(ns)
		for _, n := range ns {
			if err := b.measureKro(ctx, res.Kro, n, slices.Contains(b.kroN, n)); err != nil {
				return err
			}
		}
	}
	if len(b.ringN) == 0 || (b.only != nil && !b.only[ringThreeName]) {
		return nil
	}
	res.Ring = &RingRun{Sizes: b.ringN}
	for _, n := range b.ringN {
		if err := b.measureRing(ctx, res.Ring, n, reps); err != nil {
			return err
		}
	}
	return nil
}

// runContenders measures graph depth, the fixed part, then every
// contender at every size.
func (b *bench) runContenders(ctx context.Context, res *Results, sizes []int, reps int, drift float64) error {
	if b.depthN > 0 && (b.only == nil || b.only[depthName]) {
		if err := b.measureDepth(ctx, res, b.depthN, reps); err != nil {
			return err
		}
	}
	if b.fixedN > 0 && (b.only == nil || b.only[resyncdName]) {
		if err := b.measureFixed(ctx, res, b.fixedN, reps, drift); err != nil {
			return err
		}
	}
	cs := b.selected()
	for i, n := range sizes {
		if i > 0 {
			if err := b.freshPlanes(); err != nil {
				return err
			}
		}
		if err := b.measureSize(ctx, res, cs, n, reps, drift); err != nil {
			return err
		}
		if n == b.tradeOffN {
			if err := b.tradeOff(ctx, res, cs, n, reps); err != nil {
				return err
			}
		}
	}
	return nil
}

// selected is the contenders this run measures: those -only names (all
// without it) but those -skip names, and a -baseline's.
func (b *bench) selected() []contender {
	return slices.DeleteFunc(contenders(), func(c contender) bool {
		return (c.Baseline && b.baseline == "") || (b.only != nil && !b.only[c.Name]) || b.skip[c.Name]
	})
}

// measureSize measures every contender at N: cold convergence in rounds,
// each round starting one contender later, then, after a contender's last
// cold run and on the cluster it converged, its steady passes and drift.
func (b *bench) measureSize(ctx context.Context, res *Results, cs []contender, n, reps int, drift float64) error {
	cs = b.runAt(cs, n)
	for rep := 1; rep <= reps; rep++ {
		for i := range cs {
			c := cs[(i+rep-1)%len(cs)]
			colds := b.colds(c, n, reps)
			if rep > colds {
				continue
			}
			s, err := b.cold(ctx, c, n, rep, colds)
			if s != nil {
				res.Samples = append(res.Samples, s)
			}
			if err != nil {
				return err
			}
			if rep < colds || !c.Repeats || s.Error != "" {
				continue
			}
			samples, err := b.repeats(ctx, c, n, b.rounds(c, reps), drift)
			res.Samples = append(res.Samples, samples...)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// runAt is the contenders of cs that run at N: up to their MaxN, and
// above -all-up-to only those a target is on.
func (b *bench) runAt(cs []contender, n int) []contender {
	return slices.DeleteFunc(slices.Clone(cs), func(c contender) bool {
		return (c.MaxN > 0 && n > c.MaxN) || (b.allMax > 0 && n > b.allMax && !c.Targeted)
	})
}

// colds is how many times c converges N parents from cold: reps up to
// -cold-reps-up-to; above it, up to -target-cold-reps-up-to, only for the
// contenders whose ratio is a target (resyncd against the raw-SSA floor);
// once otherwise.
func (b *bench) colds(c contender, n, reps int) int {
	if n <= b.coldMax || (c.ColdRepeats && n <= b.targetColdMax) {
		return reps
	}
	return 1
}

// rounds is how many rounds of steady passes and drift c makes: reps,
// or -untargeted-rounds for the contenders no target is on, neither
// Targeted nor ColdRepeats (the graph's targets hold it to the built-in
// renderer, so it keeps its rounds).
func (b *bench) rounds(c contender, reps int) int {
	if b.untargetedRounds > 0 && !c.Targeted && !c.ColdRepeats {
		return min(b.untargetedRounds, reps)
	}
	return reps
}

// reportFrom writes the report of an earlier run's results.
func reportFrom(path, doc string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res Results
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	report := summarize(&res)
	if doc == "" {
		fmt.Print(report.fixedPart() + report.tables() + report.scale() + report.tradeOff() + report.graphDepth() + report.ring() + report.kro())
		return nil
	}
	return report.writeReport(doc, path)
}

// parseSizes reads the numbers of the flag named name.
func parseSizes(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: %q is not a positive number", name, s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// setUp starts the control plane with its inflight limits raised, so that
// its CPU, not its throttling, bounds the contenders, and writes what the
// contenders need.
func setUp(work, resyncdBin string) (*bench, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if resyncdBin, err = filepath.Abs(resyncdBin); err != nil {
		return nil, err
	}
	// Absolute: the configurations name the kubeconfigs, and resyncd reads
	// a relative path against the configuration's own directory.
	if work, err = filepath.Abs(work); err != nil {
		return nil, err
	}
	if _, err := os.Stat(resyncdBin); err != nil {
		return nil, fmt.Errorf("resyncd binary: %w (make build)", err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	env, cl, kubeconfig, err := startPlane(work, "")
	if err != nil {
		return nil, err
	}
	b := &bench{self: self, resyncd: resyncdBin, env: env, cl: cl, kubeconfig: kubeconfig, configs: map[string]string{}, work: work, clean: true}
	fail := func(err error) (*bench, error) { _ = env.Stop(); return nil, err }
	for _, mode := range []string{"local", "server"} {
		p := filepath.Join(work, "resyncd-"+mode+".yaml")
		if err := os.WriteFile(p, fmt.Appendf(nil, resyncdConfig, mode), 0o644); err != nil {
			return fail(err)
		}
		b.configs[mode] = p
	}
	// The graph contender: HttpService declared as a graph, not compiled in.
	root, err := testenv.RepoRoot()
	if err != nil {
		return fail(err)
	}
	graph := strings.Replace(fmt.Sprintf(resyncdConfig, "local"), "renderer: httpservice",
		"graph: "+filepath.Join(root, "testdata", "graphs", "httpservice.yaml"), 1)
	b.configs["graph"] = filepath.Join(work, "resyncd-graph.yaml")
	if err := os.WriteFile(b.configs["graph"], []byte(graph), 0o644); err != nil {
		return fail(err)
	}
	// The two-cluster contender: the same resource in two clusters, each
	// reached through its kubeconfig file.
	two := fmt.Sprintf(resyncdConfig, "local") + fmt.Sprintf("clusters:\n  - {name: a, kubeconfig: %s}\n  - {name: b, kubeconfig: %s}\n",
		b.kubeconfig, filepath.Join(work, "second", "kubeconfig"))
	b.configs["clusters"] = filepath.Join(work, "resyncd-clusters.yaml")
	if err := os.WriteFile(b.configs["clusters"], []byte(two), 0o644); err != nil {
		return fail(err)
	}
	return b, nil
}

// startPlane starts a control plane for the bench, its log and kubeconfig
// in work (or work/sub), and returns it with an unthrottled admin client.
// crds are directories of CustomResourceDefinitions it installs beside
// the repository's.
func startPlane(work, sub string, crds ...string) (*testenv.Env, *cluster, string, error) {
	dir := filepath.Join(work, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, "", err
	}
	logFile, err := os.Create(filepath.Join(dir, "control-plane.log"))
	if err != nil {
		return nil, nil, "", err
	}
	var crdDirs []string
	if len(crds) > 0 {
		root, err := testenv.RepoRoot()
		if err != nil {
			return nil, nil, "", err
		}
		crdDirs = append([]string{filepath.Join(root, "deploy", "crds")}, crds...)
	}
	env, err := testenv.Start(testenv.Options{
		Output:  logFile,
		CRDDirs: crdDirs,
		APIServerArgs: map[string]string{
			"max-requests-inflight":          "3000",
			"max-mutating-requests-inflight": "1000",
		},
	})
	if err != nil {
		return nil, nil, "", err
	}
	fail := func(err error) (*testenv.Env, *cluster, string, error) { _ = env.Stop(); return nil, nil, "", err }
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.Kubeconfig(), 0o600); err != nil {
		return fail(err)
	}
	cfg := *env.Config
	cfg.QPS = -1
	dyn, err := dynamic.NewForConfig(&cfg)
	if err != nil {
		return fail(err)
	}
	// The bench's own loads and resets, tens of thousands of writes a
	// run, in protobuf as the cluster's own controllers write: less of the
	// server's CPU for what is not measured. (Custom resources have no
	// protobuf: those go through dyn, in JSON.)
	pb := cfg
	pb.ContentType, pb.AcceptContentTypes = runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(&pb)
	if err != nil {
		return fail(err)
	}
	return env, &cluster{dyn: dyn, cs: cs}, kubeconfig, nil
}

// freshPlanes replaces the control plane, and stops the second one, so
// that each N starts on a server with no history: etcd's grows with every
// write and delete until it is compacted (5,000 parents converged in 55 s
// on a new server, in 64–103 s after the figures at N = 1,000 on the same
// one). The kubeconfig keeps its path, which the configurations name.
func (b *bench) freshPlanes() error {
	progress("a new control plane")
	err := errors.Join(b.env.Stop(), b.secondEnv.Stop())
	b.env, b.cl, b.secondEnv, b.second = nil, nil, nil, nil
	if err != nil {
		return fmt.Errorf("stop control plane: %w", err)
	}
	env, cl, kubeconfig, err := startPlane(b.work, "")
	if err != nil {
		return err
	}
	if kubeconfig != b.kubeconfig {
		_ = env.Stop()
		return fmt.Errorf("new control plane: kubeconfig %s, not %s", kubeconfig, b.kubeconfig)
	}
	b.env, b.cl, b.clean = env, cl, true
	return nil
}

// clustersOf returns the clusters c keeps in sync, each with the number of
// parents it holds at N; the second control plane is started the first
// time a contender needs it.
func (b *bench) clustersOf(c contender, n int) ([]*cluster, []int, error) {
	if !c.TwoClusters {
		return []*cluster{b.cl}, []int{n}, nil
	}
	if b.second == nil {
		env, cl, _, err := startPlane(b.work, "second")
		if err != nil {
			return nil, nil, fmt.Errorf("second control plane: %w", err)
		}
		b.secondEnv, b.second = env, cl
	}
	return []*cluster{b.cl, b.second}, []int{n / 2, n - n/2}, nil
}

// traffic is the API servers' count of the requests made to the clusters
// of c so far, summed.
func (b *bench) traffic(ctx context.Context, c contender, n int) (Traffic, error) {
	cls, _, err := b.clustersOf(c, n)
	if err != nil {
		return Traffic{}, err
	}
	var sum Traffic
	for _, cl := range cls {
		t, err := scrapeTraffic(ctx, cl.cs.CoreV1().RESTClient())
		if err != nil {
			return sum, err
		}
		sum = sum.add(t)
	}
	return sum, nil
}

// freshColdMin is the N from which a measured cold run starts on a new
// control plane rather than on the old one emptied: at 5,000 emptying it
// took 31–39 s, more than starting a new server (7 s) and loading the
// parents (12 s) together; at 1,000 either takes about 8 s.
const freshColdMin = 2000

// cold resets the cluster to N new parents and runs c until it converged
// them; rep 0 is a run to converge the cluster, not a sample, on the
// cluster as it is (the trade-off's unrelated objects stay).
func (b *bench) cold(ctx context.Context, c contender, n, rep, of int) (*Sample, error) {
	what := fmt.Sprintf("cold %d/%d", rep, of)
	if rep == 0 {
		what = "converging, unmeasured"
	}
	progress("N=%d %s: %s: resetting", n, c.Name, what)
	if rep > 0 && n >= freshColdMin && !b.clean {
		if err := b.freshPlanes(); err != nil {
			return nil, err
		}
	}
	b.clean = false
	cls, ns, err := b.clustersOf(c, n)
	if err != nil {
		return nil, err
	}
	for i, cl := range cls {
		var err error
		if c.OneNamespace {
			err = cl.resetIn(ctx, ns[i], []string{oneNamespace})
		} else {
			err = cl.reset(ctx, ns[i])
		}
		if err != nil {
			return nil, err
		}
	}
	progress("N=%d %s: %s", n, c.Name, what)
	s, err := b.run(ctx, c, n, rep, "cold")
	if err != nil {
		s.Error = err.Error() // kept in the samples, out of the figures
		if errors.Is(err, errNotConverged) && rep > 0 {
			return s, nil // a finding, not a failure of the bench
		}
		return s, err
	}
	for i, cl := range cls {
		if err := cl.converged(ctx, ns[i], c.ManagedBy); err != nil {
			s.Error = err.Error()
		}
	}
	if rep == 0 {
		if s.Error != "" {
			return nil, fmt.Errorf("%s did not converge: %s", c.Name, s.Error)
		}
		return nil, nil
	}
	return s, nil
}

// repeats measures c reps times on the cluster it converged, then after
// drift: as passes of one `resyncd run` for resyncd, as restarts for
// controller-runtime.
func (b *bench) repeats(ctx context.Context, c contender, n, reps int, fraction float64) ([]*Sample, error) {
	if c.Config != "" {
		return b.passes(ctx, c, n, reps, fraction)
	}
	var out []*Sample
	run := func(c contender, rep int, phase string) (*Sample, error) {
		s, err := b.run(ctx, c, n, rep, phase)
		out = append(out, s)
		return s, err
	}
	for rep := 1; rep <= reps; rep++ {
		progress("N=%d %s: steady and drift %d/%d", n, c.Name, rep, reps)
		if _, err := run(c, rep, "steady"); err != nil {
			return out, err
		}
		rng := rand.New(rand.NewPCG(uint64(n), uint64(rep)))
		drifted, err := b.cl.drift(ctx, c.ManagedBy, fraction, rng)
		if err != nil {
			return out, err
		}
		for _, phase := range []string{"drift", "again"} {
			s, err := run(c, rep, phase)
			if err != nil {
				return out, err
			}
			s.Drifted = len(drifted)
			if s.StillDrifted, err = b.cl.stillDrifted(ctx, c.ManagedBy, drifted); err != nil {
				return out, err
			}
			if c.UntilConverged {
				break // a daemon repairs until it is stopped; "again" is a pass
			}
		}
	}
	return out, nil
}

// run execs c and measures it: wall time, the time it reports, its peak
// RSS, and the API server's count of its requests.
func (b *bench) run(ctx context.Context, c contender, n, rep int, phase string) (*Sample, error) {
	s := &Sample{Contender: c.Name, N: n, Rep: rep, Phase: phase}
	before, err := b.traffic(ctx, c, n)
	if err != nil {
		return s, err
	}
	args := c.args(b, n)
	if b.profile != "" && strings.HasPrefix(c.Name, resyncdName) {
		base := filepath.Join(b.profile, fmt.Sprintf("%s-%d-%s-%d", c.Name, n, phase, rep))
		args = append(args, "--cpu-profile", base+".cpu.pprof", "--heap-profile", base+".heap.pprof")
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout(n))
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = gcTraced()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return s, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return s, err
	}
	peak := watchPeakRSS(cmd.Process.Pid)
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if c.UntilConverged && strings.HasPrefix(line, "converged ") {
			s.Seconds = time.Since(start).Seconds()
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	waitErr := cmd.Wait()
	if !c.UntilConverged {
		s.Seconds = time.Since(start).Seconds()
	}
	s.PeakRSS = peak()
	logs := stderrWithoutGC(stderr.String(), &s.PeakHeap)
	after, err := b.traffic(context.WithoutCancel(ctx), c, n)
	if err != nil {
		return s, err
	}
	s.Traffic = after.sub(before)
	s.PassSeconds = passSeconds(lines)
	if c.UntilConverged && s.Seconds == 0 {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return s, fmt.Errorf("%s (N=%d, %s): %w in %s", c.Name, n, phase, errNotConverged, runTimeout(n))
		}
		waitErr = errors.Join(waitErr, errors.New("stopped before it converged"))
	}
	if waitErr != nil && !(c.UntilConverged && s.Seconds > 0) {
		return s, fmt.Errorf("%s (N=%d, %s): %w\n%s%s", c.Name, n, phase, waitErr, strings.Join(lines, "\n"), tail(logs, 2000))
	}
	return s, nil
}

// watchPeakRSS samples the high-water mark of pid's resident set
// (VmHWM) every 10 ms until the returned function is called, after the
// process exited, which returns the last sample. getrusage cannot tell:
// Linux carries the forking process's peak into the child's ru_maxrss
// across exec.
func watchPeakRSS(pid int) func() int64 {
	var last atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		path := fmt.Sprintf("/proc/%d/status", pid)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := vmHWM(path); v > 0 {
				last.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return last.Load()
	}
}

// vmHWM reads VmHWM from a /proc/PID/status file, in bytes; 0 once the
// process has released its memory.
func vmHWM(path string) int64 { return procBytes(path, "VmHWM") }

// procBytes reads a field in kB of a /proc/PID/status file, in bytes; 0
// when the file or the field is not there.
func procBytes(path, field string) int64 {
	v := procField(path, field)
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	if err != nil {
		return 0
	}
	return kb * 1024
}

// passSeconds finds the time the process reported: a "pass" or
// "converged" line, or the DURATION column of resyncd once's summary.
func passSeconds(lines []string) float64 {
	slowest := 0.0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 2 && (f[0] == "pass" || f[0] == "converged") {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
		if len(f) > 2 && f[0] != "RESOURCE" && f[0] != "CLUSTER" {
			// With clusters, one line each: the slowest.
			if d, err := time.ParseDuration(f[len(f)-1]); err == nil {
				slowest = max(slowest, d.Seconds())
			}
		}
	}
	return slowest
}

// stderrWithoutGC is a process's stderr without its GC trace lines, the
// largest heap they report stored in heap.
func stderrWithoutGC(stderr string, heap *int64) string {
	var kept []string
	for _, l := range strings.Split(stderr, "\n") {
		if h := gcHeap(l); h > 0 {
			*heap = max(*heap, h)
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
