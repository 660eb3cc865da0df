package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
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
	heap   atomic.Int64 // the largest heap of a GC, from its gctrace
	tail   []string     // the last log lines, for errors
	log    string       // the file of its whole log
}

// passLine is resyncd's "Pass finished" or "Pass failed" log line.
type passLine struct {
	Msg      string `json:"msg"`
	Duration string `json:"duration"`
	Error    string `json:"error"`
	// Resource is the watched resource the pass was of.
	Resource string `json:"resource"`
	// Parents is the number of parents the pass listed: with sharding,
	// those of the replica's share.
	Parents int `json:"parents"`
	// The pass's writes, as its summary counts them.
	Taken    int `json:"taken"`
	Created  int `json:"created"`
	Updated  int `json:"updated"`
	Deleted  int `json:"deleted"`
	Released int `json:"released"`
	Statuses int `json:"statuses"`
}

// writes is every write the pass made.
func (l passLine) writes() int {
	return l.Taken + l.Created + l.Updated + l.Deleted + l.Released + l.Statuses
}

func (b *bench) startDaemon(c contender, n int) (*daemon, error) {
	return b.spawnDaemonOf(b.binary(c), fmt.Sprintf("%s-%d", c.Name, n), b.configs[c.Config], b.kubeconfig)
}

// spawnDaemon starts `resyncd run` with config against kubeconfig, its log
// in the work directory under name.
func (b *bench) spawnDaemon(name, config, kubeconfig string) (*daemon, error) {
	return b.spawnDaemonOf(b.resyncd, name, config, kubeconfig)
}

// spawnDaemonOf is spawnDaemon with the resyncd binary bin.
func (b *bench) spawnDaemonOf(bin, name, config, kubeconfig string) (*daemon, error) {
	args := []string{bin, "run", "--config", config, "--log-format", "json"}
	if kubeconfig != "" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	if b.profile != "" {
		base := filepath.Join(b.profile, name+"-run")
		args = append(args, "--cpu-profile", base+".cpu.pprof", "--heap-profile", base+".heap.pprof")
	}
	return b.spawn(name, args)
}

// spawn starts args[0] with the GC trace on, its stderr in the work
// directory under name, following its peak RSS, its heap and, of resyncd,
// the ends of its passes.
func (b *bench) spawn(name string, args []string) (*daemon, error) {
	d := &daemon{cmd: exec.Command(args[0], args[1:]...), done: make(chan passLine, 256), exited: make(chan struct{})}
	d.cmd.Env = gcTraced()
	logs, err := d.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	d.log = filepath.Join(b.work, name+".log")
	logFile, err := os.Create(d.log)
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
			if h := gcHeap(line); h > 0 {
				if h > d.heap.Load() {
					d.heap.Store(h)
				}
				continue
			}
			d.tail = append(d.tail, line)
			if len(d.tail) > 20 {
				d.tail = d.tail[1:]
			}
			if l, ok := parsePassLine(line); ok {
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
	case <-time.After(minRunTimeout):
		return passLine{}, fmt.Errorf("resyncd: no pass ended in %s; its goroutines in resyncd's code:\n%s", minRunTimeout, d.dump())
	case <-ctx.Done():
		return passLine{}, ctx.Err()
	}
}

// dumpTimeout bounds the wait for a daemon to print its goroutines and
// exit; maxDump, what of them an error carries.
const (
	dumpTimeout = 10 * time.Second
	maxDump     = 32 << 10
)

// dump ends a daemon that hangs with SIGQUIT, on which the Go runtime
// prints every goroutine's stack and exits, and returns the stacks that
// pass through resyncd's own code: where it hangs.
func (d *daemon) dump() string {
	if err := d.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return err.Error()
	}
	select {
	case <-d.exited:
	case <-time.After(dumpTimeout):
		return "no goroutine dump in " + dumpTimeout.String()
	}
	raw, err := os.ReadFile(d.log)
	if err != nil {
		return err.Error()
	}
	return ownStacks(string(raw), maxDump)
}

// ownStacks returns the goroutines of a Go runtime's dump in log whose
// stack passes through resyncd's code, at most limit bytes of them.
func ownStacks(log string, limit int) string {
	_, stacks, ok := strings.Cut(log, "\ngoroutine ")
	if !ok {
		return "no goroutine dump in the log"
	}
	var out strings.Builder
	for g := range strings.SplitSeq("goroutine "+stacks, "\n\n") {
		if !strings.Contains(g, "github.com/resyncd/resyncd/") {
			continue
		}
		if out.Len()+len(g) > limit {
			out.WriteString("...")
			break
		}
		out.WriteString(g + "\n\n")
	}
	return out.String()
}

// stop ends the daemon and returns its peak RSS and peak heap.
func (d *daemon) stop() (rss, heap int64) {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	return d.peak(), d.heap.Load()
}

// passRun is one `resyncd run` of contender c on its clusters, measured
// pass by pass.
type passRun struct {
	b   *bench
	c   contender
	n   int
	d   *daemon
	cls []*cluster
	out []*Sample
}

func (b *bench) startPasses(c contender, n int) (*passRun, error) {
	cls, _, err := b.clustersOf(c, n)
	if err != nil {
		return nil, err
	}
	d, err := b.startDaemon(c, n)
	if err != nil {
		return nil, err
	}
	return &passRun{b: b, c: c, n: n, d: d, cls: cls}, nil
}

// pass measures one pass: the first starts by itself, kick starts one
// with SIGUSR1.
func (r *passRun) pass(ctx context.Context, rep int, phase string, kick bool) (*Sample, error) {
	s := &Sample{Contender: r.c.Name, N: r.n, Rep: rep, Phase: phase}
	r.out = append(r.out, s)
	before, err := r.b.traffic(ctx, r.c, r.n)
	if err != nil {
		return s, err
	}
	start := r.d.start
	if kick {
		start = time.Now()
		if err := r.d.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			return s, err
		}
	}
	// One pass line a cluster; the pass is its slowest cluster's.
	for range r.cls {
		l, err := r.d.pass(ctx)
		if err != nil {
			return s, err
		}
		if dur, err := time.ParseDuration(l.Duration); err == nil {
			s.PassSeconds = max(s.PassSeconds, dur.Seconds())
		}
		s.Parents += l.Parents
	}
	s.Seconds = time.Since(start).Seconds()
	after, err := r.b.traffic(ctx, r.c, r.n)
	s.Traffic = after.sub(before)
	return s, err
}

// stop ends the daemon and gives each of its samples the run's peak RSS
// and heap.
func (r *passRun) stop() []*Sample {
	rss, heap := r.d.stop()
	for _, s := range r.out {
		s.PeakRSS, s.PeakHeap = rss, heap
	}
	return r.out
}

// passes measures one `resyncd run` on the converged cluster: its first
// pass (nothing remembered from an earlier pass), then reps rounds of a
// steady pass, the raw LIST beside it, drift, the pass after drift and one
// more.
func (b *bench) passes(ctx context.Context, c contender, n, reps int, fraction float64) ([]*Sample, error) {
	r, err := b.startPasses(c, n)
	if err != nil {
		return nil, err
	}
	var others []*Sample // the raw LIST's
	err = b.passRounds(ctx, r, reps, fraction, func(s *Sample) { others = append(others, s) })
	return append(r.stop(), others...), err
}

func (b *bench) passRounds(ctx context.Context, r *passRun, reps int, fraction float64, keep func(*Sample)) error {
	c, n := r.c, r.n
	progress("N=%d %s: passes of resyncd run", n, c.Name)
	if _, err := r.pass(ctx, 1, "first", false); err != nil {
		return err
	}
	for rep := 1; rep <= reps; rep++ {
		if _, err := r.pass(ctx, rep, "steady", true); err != nil {
			return err
		}
		if c.Name == resyncdName {
			s, err := b.run(ctx, listContender(), n, rep, "steady")
			keep(s)
			if err != nil {
				return err
			}
		}
		drifted := make([][]childKey, len(r.cls))
		for i, cl := range r.cls {
			var err error
			if drifted[i], err = cl.drift(ctx, c.ManagedBy, fraction, rand.New(rand.NewPCG(uint64(n), uint64(rep+100*i)))); err != nil {
				return err
			}
		}
		for _, phase := range []string{"drift", "again"} {
			s, err := r.pass(ctx, rep, phase, true)
			if err != nil {
				return err
			}
			for i, cl := range r.cls {
				left, err := cl.stillDrifted(ctx, c.ManagedBy, drifted[i])
				if err != nil {
					return err
				}
				s.Drifted += len(drifted[i])
				s.StillDrifted += left
			}
		}
	}
	return nil
}

// listContender is the raw paged LIST, run beside resyncd's steady passes.
func listContender() contender {
	return contender{Name: listName, args: func(b *bench, _ int) []string {
		return []string{b.self, "list", "--kubeconfig", b.kubeconfig, "--page-size", "500"}
	}}
}

// gcTraced is the environment with the Go runtime's GC trace on: a line on
// stderr at each collection, with the heap's size at its start.
func gcTraced() []string {
	return append(os.Environ(), "GODEBUG=gctrace=1")
}

// parsePassLine reads resyncd's "Pass finished" or "Pass failed" line.
// The runtime writes a GC trace line in pieces, and resyncd's log line
// (one write) may land between them, after a piece: the JSON starts where
// the log line does.
func parsePassLine(line string) (passLine, bool) {
	var l passLine
	i := strings.Index(line, `{"level"`)
	if i < 0 || json.Unmarshal([]byte(line[i:]), &l) != nil {
		return l, false
	}
	return l, l.Msg == "Pass finished" || l.Msg == "Pass failed"
}

// gcTraceHeap finds the heap sizes of a GC trace line, also when its
// start was cut off by another writer's line.
var gcTraceHeap = regexp.MustCompile(`@[0-9.]+s .* (\d+)->(\d+)->\d+ MB, \d+ MB goal`)

// gcHeap is the largest heap a gctrace line reports: at the start of the
// collection or at its end, before the sweep (the heap grows while it is
// marked), in bytes, rounded down to a MiB by the runtime; 0 for any other
// line.
func gcHeap(line string) int64 {
	m := gcTraceHeap.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	start, _ := strconv.ParseInt(m[1], 10, 64)
	end, _ := strconv.ParseInt(m[2], 10, 64)
	return max(start, end) << 20
}
