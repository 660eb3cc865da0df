package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/resyncd/resyncd/internal/testenv"
)

// TradeOff is what polling costs and saves against watching, at one N:
// the server's cost over time with everything in sync, how long drift
// lives, and (as samples of phase "others") the cost of objects no
// contender manages.
type TradeOff struct {
	N int `json:"n"`
	// Others is the number of unrelated Deployments, and of Services.
	Others int `json:"others"`
	// Windows are measured side by side, each on its own control plane.
	Windows []*WindowSample `json:"windows"`
	// Latency is measured after the windows, on two of their planes.
	Latency []*LatencySample `json:"latency"`
	// Churn is measured after the latency, on control planes of its own.
	Churn *Churn `json:"churn,omitempty"`
}

// WindowSample is one control plane's cost over a window in which
// nothing changes.
type WindowSample struct {
	// Contender is "idle" (no client), resyncd-INTERVAL or
	// controller-runtime.
	Contender string  `json:"contender"`
	Interval  float64 `json:"intervalSeconds,omitempty"`
	Seconds   float64 `json:"seconds"`
	// Passes is the number of resyncd passes that ended in the window.
	Passes int `json:"passes,omitempty"`
	// APIServerCPU and EtcdCPU are the processes' user and system time
	// in the window, in seconds, from /proc/PID/stat.
	APIServerCPU float64 `json:"apiServerCPUSeconds"`
	EtcdCPU      float64 `json:"etcdCPUSeconds"`
	Traffic      Traffic `json:"traffic"`
	Error        string  `json:"error,omitempty"`
}

// LatencySample is how long injected drift lived under one contender.
type LatencySample struct {
	Contender string  `json:"contender"`
	Interval  float64 `json:"intervalSeconds,omitempty"`
	// Seconds is, for each change, the time from the API server holding
	// the drifted object to its holding the repaired one.
	Seconds []float64 `json:"seconds"`
	// Unrepaired changes were not repaired within the span and one more
	// interval (or a minute).
	Unrepaired int    `json:"unrepaired"`
	Error      string `json:"error,omitempty"`
}

// tradeOffOptions are the -tradeoff flags.
type tradeOffOptions struct {
	n              int
	others         int // a multiple of N
	window         time.Duration
	intervals      []time.Duration
	latencySpan    time.Duration
	latencyChanges int
	// churnWindow is the window with unrelated Deployments changing; 0:
	// no churn.
	churnWindow time.Duration
}

// tradeOff runs, at n: the window planes (idle, resyncd at each interval,
// controller-runtime) started, converged, then side by side for the
// window while, on the main plane from their start, every contender keeps
// the cluster in sync with U = -others×N unrelated Deployments and
// Services present; then drift injected at random moments under resyncd
// at the first interval and under controller-runtime, each on its window
// plane; then the churn.
func (b *bench) tradeOff(ctx context.Context, res *Results, cs []contender, n, reps int) error {
	o := b.tradeOffOpts
	to := &TradeOff{N: n, Others: o.others * n}
	res.TradeOff = to
	// The figures among unrelated objects, on the main plane, count
	// memory, requests and bytes, no time: they run while the window's
	// planes start and converge, and through the window.
	type othersDone struct {
		samples []*Sample
		err     error
	}
	others := make(chan othersDone, 1)
	othersCtx, stopOthers := context.WithCancel(ctx)
	defer stopOthers()
	go func() {
		samples, err := b.others(othersCtx, cs, n, reps, to.Others)
		others <- othersDone{samples, err}
	}()
	planes, err := b.startWindowPlanes(ctx, n)
	defer func() {
		for _, p := range planes {
			p.stop()
		}
	}()
	if err == nil {
		to.Windows = measureWindows(ctx, planes, o.window)
	} else {
		stopOthers() // the run fails: no need to wait for its figures
	}
	done := <-others
	res.Samples = append(res.Samples, done.samples...)
	if err := errors.Join(err, done.err); err != nil {
		return err
	}
	to.Latency = b.latencies(ctx, planes, n)
	if o.churnWindow == 0 {
		return nil
	}
	to.Churn, err = b.churn(ctx, n, planes)
	return err
}

// windowPlane is one control plane of the window, with its client.
type windowPlane struct {
	name      string
	interval  time.Duration
	managedBy string
	// workers is controller-runtime's MaxConcurrentReconciles.
	workers    int
	env        *testenv.Env
	cl         *cluster
	kubeconfig string
	daemon     *daemon   // resyncd
	cr         *exec.Cmd // controller-runtime
	stopped    bool
}

// stop stops the contender and the control plane, once.
func (p *windowPlane) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	if p.daemon != nil {
		p.daemon.stop()
	}
	p.stopCR()
	if err := p.env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: stop control plane:", err)
	}
}

func (p *windowPlane) stopCR() {
	if p.cr != nil {
		_ = p.cr.Process.Signal(syscall.SIGTERM)
		_ = p.cr.Wait()
		p.cr = nil
	}
}

// idleName is the window plane with no client: converged by
// controller-runtime with 8 workers, which then stops, so that the churn
// can start it there again.
const idleName = "idle"

// startWindowPlanes starts a control plane for each window contender,
// loads N parents into each, and has each contender converge its own
// (the idle one controller-runtime with 8 workers, stopped once it has),
// all at the same time.
func (b *bench) startWindowPlanes(ctx context.Context, n int) ([]*windowPlane, error) {
	planes := []*windowPlane{{name: idleName, managedBy: crManagedBy, workers: 8}}
	for _, iv := range b.tradeOffOpts.intervals {
		planes = append(planes, &windowPlane{name: resyncdName + "-" + shortDuration(iv), interval: iv, managedBy: "resyncd"})
	}
	planes = append(planes, &windowPlane{name: crName, managedBy: crManagedBy, workers: 1})
	progress("N=%d trade-off: %d control planes, converging", n, len(planes))
	errs := make([]error, len(planes))
	var wg sync.WaitGroup
	for i, p := range planes {
		wg.Go(func() { errs[i] = b.startWindowPlane(ctx, p, n) })
	}
	wg.Wait()
	var started []*windowPlane
	for _, p := range planes {
		if p.env != nil {
			started = append(started, p)
		}
	}
	return started, errors.Join(errs...)
}

func (b *bench) startWindowPlane(ctx context.Context, p *windowPlane, n int) error {
	dir := "window-" + p.name
	env, cl, kubeconfig, err := startPlane(b.work, dir)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	p.env, p.cl, p.kubeconfig = env, cl, kubeconfig
	if err := cl.reset(ctx, n); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	switch {
	case p.interval > 0:
		config := filepath.Join(b.work, "resyncd-"+dir+".yaml")
		body := strings.Replace(fmt.Sprintf(resyncdConfig, "local"), "interval: 24h", "interval: "+shortDuration(p.interval), 1)
		if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
			return err
		}
		if p.daemon, err = b.spawnDaemon(dir, config, kubeconfig); err != nil {
			return err
		}
		// The cold pass, then one on the converged cluster: in sync.
		for _, kick := range []bool{false, true} {
			if kick {
				if err := p.daemon.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
					return err
				}
			}
			if _, err := p.daemon.pass(ctx); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
	case p.managedBy == crManagedBy:
		if err := p.startCR(b, kubeconfig, n); err != nil {
			return err
		}
		if p.name == idleName {
			p.stopCR()
		}
	default:
		return fmt.Errorf("%s: no contender", p.name)
	}
	if err := cl.converged(ctx, n, p.managedBy); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	return nil
}

// startCR starts controller-runtime on the plane and returns once it has
// reconciled every parent and its own status writes have settled.
func (p *windowPlane) startCR(b *bench, kubeconfig string, n int) error {
	args := []string{"cr", "--kubeconfig", kubeconfig, "--expect", strconv.Itoa(n)}
	if p.workers > 1 {
		args = append(args, "--workers", strconv.Itoa(p.workers))
	}
	p.cr = exec.Command(b.self, args...)
	out, err := p.cr.StdoutPipe()
	if err != nil {
		return err
	}
	if err := p.cr.Start(); err != nil {
		p.cr = nil
		return err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "converged ") {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			time.Sleep(5 * time.Second)
			return nil
		}
	}
	return fmt.Errorf("%s: controller-runtime exited before it converged", p.name)
}

// measureWindows measures every plane over the same window.
func measureWindows(ctx context.Context, planes []*windowPlane, window time.Duration) []*WindowSample {
	type mark struct {
		api, etcd float64
		t         Traffic
		err       error
	}
	read := func(p *windowPlane) (m mark) {
		api, etcd, err := p.env.ServerPIDs()
		if err != nil {
			return mark{err: err}
		}
		if m.api, m.err = cpuSeconds(api); m.err != nil {
			return m
		}
		if m.etcd, m.err = cpuSeconds(etcd); m.err != nil {
			return m
		}
		m.t, m.err = scrapeTraffic(ctx, p.cl.cs.CoreV1().RESTClient())
		return m
	}
	progress("trade-off: a window of %s on %d control planes", window, len(planes))
	before := make([]mark, len(planes))
	for i, p := range planes {
		if p.daemon != nil {
			drain(p.daemon.done)
		}
		before[i] = read(p)
	}
	start := time.Now()
	select {
	case <-time.After(window):
	case <-ctx.Done():
	}
	var out []*WindowSample
	for i, p := range planes {
		after := read(p)
		w := &WindowSample{Contender: p.name, Interval: p.interval.Seconds(), Seconds: time.Since(start).Seconds(),
			APIServerCPU: after.api - before[i].api, EtcdCPU: after.etcd - before[i].etcd, Traffic: after.t.sub(before[i].t)}
		if p.daemon != nil {
			w.Passes = drain(p.daemon.done)
		}
		if err := errors.Join(before[i].err, after.err, ctx.Err()); err != nil {
			w.Error = err.Error()
		}
		out = append(out, w)
	}
	return out
}

// drain empties ch and returns how many it held.
func drain[T any](ch chan T) int {
	for n := 0; ; n++ {
		select {
		case <-ch:
		default:
			return n
		}
	}
}

// cpuSeconds is a process's user and system time so far, from
// /proc/PID/stat, in seconds.
func cpuSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after it. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(raw), ')')
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return (utime + stime) / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// latencyMaxInterval is the longest interval drift latency is measured
// at: a change lives up to an interval, and the figure waits for it.
const latencyMaxInterval = 5 * time.Minute

// latencies injects drift at random moments under resyncd at each
// interval up to latencyMaxInterval and under controller-runtime, all at
// the same time, each on its window plane, and measures how long each
// change lives: the latency against the interval.
func (b *bench) latencies(ctx context.Context, planes []*windowPlane, n int) []*LatencySample {
	o := b.tradeOffOpts
	var picked []*windowPlane
	for _, p := range planes {
		if p.name == crName || (p.interval > 0 && p.interval <= latencyMaxInterval) {
			picked = append(picked, p)
		}
	}
	progress("N=%d trade-off: %d changes over %s under %d contenders", n, o.latencyChanges, o.latencySpan, len(picked))
	return b.latencyOn(ctx, picked, n)
}

// shortDuration is d as a person writes it: 30s, 5m, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
