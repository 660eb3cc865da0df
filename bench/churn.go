package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Churn is what keeping N parents in sync costs in a cluster where
// unrelated Deployments keep changing: a watch receives an event for each
// change, a poll does not see them.
type Churn struct {
	N int `json:"n"`
	// Objects unrelated Deployments are in each cluster; each gets an
	// annotation written once a Period, in turn: Objects/Period writes a
	// second.
	Objects       int     `json:"objects"`
	PeriodSeconds float64 `json:"periodSeconds"`
	// DeploymentsOnly: no unrelated Service beside the Deployments. The
	// records before it had as many Services, which do not change.
	DeploymentsOnly bool `json:"deploymentsOnly,omitempty"`
	// Windows are measured side by side, each on its own control plane.
	Windows []*ChurnSample `json:"windows"`
	// Latency is drift injected while the churn goes on, under resyncd at
	// the first interval and under controller-runtime with one worker.
	Latency []*LatencySample `json:"latency"`
}

// ChurnSample is one control plane's cost over the churn window.
type ChurnSample struct {
	WindowSample
	// Workers is controller-runtime's MaxConcurrentReconciles.
	Workers int `json:"workers,omitempty"`
	// Writes are the churn's writes in the window.
	Writes int64 `json:"writes"`
	// ProcessCPU is the contender's user and system time in the window,
	// in seconds; PeakRSS the largest RSS sampled in it, each second.
	ProcessCPU float64 `json:"processCPUSeconds"`
	PeakRSS    int64   `json:"peakRSSBytes"`
}

// churnAnnotation is the annotation the churn writes.
const churnAnnotation = "bench.resyncd.io/churn"

// churnPeriod is how often each unrelated Deployment is written at N:
// every N/10 seconds, at least every second.
func churnPeriod(n int) time.Duration {
	return max(time.Duration(n)*time.Second/10, time.Second)
}

// churn measures, at n, resyncd at the first interval and
// controller-runtime with one and with eight workers while every one of
// -others×N unrelated Deployments is written once a churnPeriod: the
// contenders' CPU and memory and the servers' over the churn window, and
// how long drift lives meanwhile. It goes on on the window's control
// planes, which hold the N parents in sync already: resyncd's and
// controller-runtime's keep running, the idle one gets controller-runtime
// with eight workers, and each gets the unrelated Deployments, which are
// what changes (no Service: with as many Services beside them, each a
// ClusterIP to allocate, loading took the three servers 2.5–3.2 minutes,
// the Deployments alone under one); the others are stopped. The quiet
// window and the churn are then measured on the same servers.
func (b *bench) churn(ctx context.Context, n int, quiet []*windowPlane) (*Churn, error) {
	o := b.tradeOffOpts
	ch := &Churn{N: n, Objects: o.others * n, PeriodSeconds: churnPeriod(n).Seconds(), DeploymentsOnly: true}
	var rs, cr, idle *windowPlane
	for _, p := range quiet {
		switch {
		case p.interval > 0 && p.interval == o.intervals[0]:
			rs = p
		case p.name == crName:
			cr = p
		case p.name == idleName:
			idle = p
		default:
			p.stop()
		}
	}
	if rs == nil || cr == nil || idle == nil {
		return ch, errors.New("churn: the window's planes of resyncd, controller-runtime and the idle server are not all up")
	}
	planes := []*windowPlane{rs, cr, idle}
	progress("N=%d churn: %d control planes with %d unrelated Deployments each", n, len(planes), ch.Objects)
	errs := make([]error, len(planes))
	var wg sync.WaitGroup
	for i, p := range planes {
		wg.Go(func() {
			if errs[i] = p.cl.loadOthers(ctx, ch.Objects, false); errs[i] != nil || p != idle {
				return
			}
			p.name, p.workers = cr8Name, 8
			if errs[i] = p.startCR(b, p.kubeconfig, n); errs[i] == nil {
				errs[i] = p.cl.converged(ctx, n, p.managedBy)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return ch, err
	}
	var err error
	ch.Windows, ch.Latency, err = b.churnWindow(ctx, planes, planes[:2], n)
	return ch, err
}

// churnWindow has every unrelated Deployment of each plane written once a
// churnPeriod, and once it has gone on for a moment measures the planes
// over the churn window while drift is injected under the contenders of
// drifting.
func (b *bench) churnWindow(ctx context.Context, planes, drifting []*windowPlane, n int) ([]*ChurnSample, []*LatencySample, error) {
	o := b.tradeOffOpts
	churnCtx, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	writes := make([]atomic.Int64, len(planes))
	churned := make(chan error, len(planes))
	for i, p := range planes {
		go func() { churned <- p.churn(churnCtx, churnPeriod(n), &writes[i]) }()
	}
	// A moment first, so that a watch's queues are in their steady state
	// when the window opens.
	select {
	case <-time.After(min(churnPeriod(n), 20*time.Second)):
	case err := <-churned:
		return nil, nil, fmt.Errorf("churn: %w", err)
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	progress("N=%d churn: a window of %s, drift injected over %s under %d contenders", n, o.churnWindow, o.latencySpan, len(drifting))
	lat := make(chan []*LatencySample, 1)
	go func() { lat <- b.latencyOn(ctx, drifting, n) }()
	windows := measureChurn(ctx, planes, writes, o.churnWindow)
	latency := <-lat
	stopChurn()
	for range planes {
		if err := <-churned; err != nil {
			return windows, latency, fmt.Errorf("churn: %w", err)
		}
	}
	return windows, latency, nil
}

// churnInFlight bounds the churn's writes in flight on a plane: one at
// a time, a write's round trip on a loaded 2-core machine (25-33 ms)
// held the churn to 30-36 writes a second, short of its 40.
const churnInFlight = 4

// churn writes churnAnnotation to each of the plane's unrelated
// Deployments in turn, each once a period, until ctx ends, counting the
// writes. Up to churnInFlight writes are in flight; past that a write
// slower than its turn delays the next rather than piling up: writes
// says what was done.
func (p *windowPlane) churn(ctx context.Context, period time.Duration, writes *atomic.Int64) error {
	list, err := p.cl.cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/part-of=" + othersPartOf})
	if err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return fmt.Errorf("%s: no unrelated Deployment to change", p.name)
	}
	tick := time.NewTicker(period / time.Duration(len(list.Items)))
	defer tick.Stop()
	opts := metav1.PatchOptions{FieldManager: "bench-churn"}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(churnInFlight)
	for i := 0; ; i++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			// The end of the window, or a write failed: its error.
			return g.Wait()
		}
		d := list.Items[i%len(list.Items)]
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, churnAnnotation, strconv.Itoa(i))
		g.Go(func() error {
			if _, err := p.cl.cs.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, opts); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%s: %s/%s: %w", p.name, d.Namespace, d.Name, err)
			}
			writes.Add(1)
			return nil
		})
	}
}

// measureChurn measures every plane over the same window: its servers as
// measureWindows does, and the contender's process CPU and largest RSS.
func measureChurn(ctx context.Context, planes []*windowPlane, writes []atomic.Int64, window time.Duration) []*ChurnSample {
	before := make([]float64, len(planes))
	wrote := make([]int64, len(planes))
	peaks := make([]atomic.Int64, len(planes))
	errs := make([]error, len(planes))
	sampling, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, p := range planes {
		before[i], errs[i] = cpuSeconds(p.pid())
		wrote[i] = writes[i].Load()
		wg.Go(func() { sampleRSS(sampling, p.pid(), &peaks[i]) })
	}
	ws := measureWindows(ctx, planes, window)
	stop()
	wg.Wait()
	out := make([]*ChurnSample, len(planes))
	for i, p := range planes {
		s := &ChurnSample{WindowSample: *ws[i], Workers: p.workers, Writes: writes[i].Load() - wrote[i], PeakRSS: peaks[i].Load()}
		after, err := cpuSeconds(p.pid())
		s.ProcessCPU = after - before[i]
		if err := errors.Join(errs[i], err); err != nil {
			s.Error = strings.TrimPrefix(s.Error+"; "+err.Error(), "; ")
		}
		out[i] = s
	}
	return out
}

// pid is the contender's process on the plane.
func (p *windowPlane) pid() int {
	if p.daemon != nil {
		return p.daemon.cmd.Process.Pid
	}
	return p.cr.Process.Pid
}

// sampleRSS keeps in peak the largest VmRSS of pid, read every second
// until ctx ends.
func sampleRSS(ctx context.Context, pid int, peak *atomic.Int64) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if rss := procBytes(path, "VmRSS"); rss > peak.Load() {
			peak.Store(rss)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}
