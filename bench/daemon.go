package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// daemon is a `resyncd run` whose passes after the first the bench starts
// with SIGUSR1, reading each pass's end from its log.
type daemon struct {
	cmd    *exec.Cmd
	start  time.Time
	done   chan passLine
	exited chan struct{}
	peak   func() int64
	tail   []string // the last log lines, for errors
}

// passLine is resyncd's "Pass finished" or "Pass failed" log line.
type passLine struct {
	Msg      string `json:"msg"`
	Duration string `json:"duration"`
	Error    string `json:"error"`
}

func (b *bench) startDaemon(c contender, n int) (*daemon, error) {
	args := []string{b.resyncd, "run", "--config", b.configs[c.Config], "--kubeconfig", b.kubeconfig, "--log-format", "json"}
	if b.profile != "" {
		base := filepath.Join(b.profile, fmt.Sprintf("%s-%d-run", c.Name, n))
		args = append(args, "--cpu-profile", base+".cpu.pprof", "--heap-profile", base+".heap.pprof")
	}
	d := &daemon{cmd: exec.Command(args[0], args[1:]...), done: make(chan passLine, 16), exited: make(chan struct{})}
	logs, err := d.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(b.work, fmt.Sprintf("%s-%d.log", c.Name, n)))
	if err != nil {
		return nil, err
	}
	d.start = time.Now()
	if err := d.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	d.peak = watchPeakRSS(d.cmd.Process.Pid)
	go func() {
		defer close(d.exited)
		defer logFile.Close()
		sc := bufio.NewScanner(io.TeeReader(logs, logFile))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.tail = append(d.tail, line)
			if len(d.tail) > 20 {
				d.tail = d.tail[1:]
			}
			var l passLine
			if json.Unmarshal([]byte(line), &l) == nil && (l.Msg == "Pass finished" || l.Msg == "Pass failed") {
				d.done <- l
			}
		}
		_ = d.cmd.Wait()
	}()
	return d, nil
}

// pass waits for the end of the running pass.
func (d *daemon) pass(ctx context.Context) (passLine, error) {
	select {
	case l := <-d.done:
		if l.Msg == "Pass failed" {
			return l, fmt.Errorf("resyncd: pass failed: %s", l.Error)
		}
		return l, nil
	case <-d.exited:
		return passLine{}, fmt.Errorf("resyncd exited: %v\n%s", d.cmd.ProcessState, strings.Join(d.tail, "\n"))
	case <-time.After(runTimeout):
		return passLine{}, errors.New("resyncd: no pass ended in " + runTimeout.String())
	case <-ctx.Done():
		return passLine{}, ctx.Err()
	}
}

// stop ends the daemon and returns its peak RSS.
func (d *daemon) stop() int64 {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	return d.peak()
}

// passes measures one `resyncd run` on the converged cluster: its first
// pass (nothing remembered from an earlier pass), then reps rounds of a
// steady pass, the raw LIST beside it, drift, the pass after drift and one
// more.
func (b *bench) passes(ctx context.Context, c contender, n, reps int, fraction float64) (out []*Sample, err error) {
	cls, _, err := b.clustersOf(c, n)
	if err != nil {
		return nil, err
	}
	before, err := b.traffic(ctx, c, n)
	if err != nil {
		return nil, err
	}
	d, err := b.startDaemon(c, n)
	if err != nil {
		return nil, err
	}
	defer func() {
		p := d.stop()
		for _, s := range out {
			if s.Contender == c.Name {
				s.PeakRSS = p
			}
		}
	}()
	// pass measures one pass; the first starts by itself.
	pass := func(rep int, phase string, kick bool) (*Sample, error) {
		s := &Sample{Contender: c.Name, N: n, Rep: rep, Phase: phase}
		out = append(out, s)
		start := d.start
		if kick {
			if before, err = b.traffic(ctx, c, n); err != nil {
				return s, err
			}
			start = time.Now()
			if err := d.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
				return s, err
			}
		}
		// One pass line a cluster; the pass is its slowest cluster's.
		for range cls {
			l, err := d.pass(ctx)
			if err != nil {
				return s, err
			}
			if dur, err := time.ParseDuration(l.Duration); err == nil {
				s.PassSeconds = max(s.PassSeconds, dur.Seconds())
			}
		}
		s.Seconds = time.Since(start).Seconds()
		after, err := b.traffic(ctx, c, n)
		s.Traffic = after.sub(before)
		return s, err
	}
	fmt.Fprintf(os.Stderr, "bench: N=%d %s: passes of resyncd run\n", n, c.Name)
	if _, err := pass(1, "first", false); err != nil {
		return out, err
	}
	for rep := 1; rep <= reps; rep++ {
		if _, err := pass(rep, "steady", true); err != nil {
			return out, err
		}
		if c.Name == resyncdName {
			s, err := b.run(ctx, contender{Name: listName, args: func(b *bench, _ int) []string {
				return []string{b.self, "list", "--kubeconfig", b.kubeconfig, "--page-size", "500"}
			}}, n, rep, "steady")
			out = append(out, s)
			if err != nil {
				return out, err
			}
		}
		drifted := make([][]childKey, len(cls))
		for i, cl := range cls {
			if drifted[i], err = cl.drift(ctx, c.ManagedBy, fraction, rand.New(rand.NewPCG(uint64(n), uint64(rep+100*i)))); err != nil {
				return out, err
			}
		}
		for _, phase := range []string{"drift", "again"} {
			s, err := pass(rep, phase, true)
			if err != nil {
				return out, err
			}
			for i, cl := range cls {
				left, err := cl.stillDrifted(ctx, c.ManagedBy, drifted[i])
				if err != nil {
					return out, err
				}
				s.Drifted += len(drifted[i])
				s.StillDrifted += left
			}
		}
	}
	return out, nil
}
