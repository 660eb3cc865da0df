package engine

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
)

// scheduler makes the writes of every watched resource of the engine's
// cluster: one queue of jobs, apply.concurrency workers, the engine's one
// write limiter and one write budget. When the jobs of several resources'
// passes wait at once, the resource's priority orders them, then the
// parent's, then the kind of write, then the age of the drift.
type scheduler struct {
	concurrency int
	budgetSize  int64
	// runJob makes one job's writes (Engine.runJob).
	runJob func(context.Context, *run, *job)

	mu      sync.Mutex
	done    *sync.Cond // a job finished, or was dropped
	queue   jobQueue
	seq     int
	workers int
	// executing counts the passes whose jobs are queued or running; the
	// budget is shared by them, and refilled when a pass finds none.
	executing int
	budget    *atomic.Int64
	// held counts the passes still planning that the workers wait for,
	// so that the jobs of passes started together are ordered together.
	held int
}

func newScheduler(concurrency, budget int, runJob func(context.Context, *run, *job)) *scheduler {
	s := &scheduler{concurrency: concurrency, budgetSize: int64(budget), runJob: runJob}
	s.done = sync.NewCond(&s.mu)
	return s
}

// queued is one job of one pass, waiting in the queue.
type queued struct {
	r     *run
	j     *job
	batch int // of the pass's batches of about apply.batchSize writes
	seq   int // order of arrival
}

// hold makes the workers wait until n passes have each arrived (with jobs
// or none).
func (s *scheduler) hold(n int) {
	s.mu.Lock()
	s.held += n
	s.mu.Unlock()
}

// arrive tells a hold that one of its passes has queued its jobs, or has
// none.
func (s *scheduler) arrive() {
	s.mu.Lock()
	if s.held > 0 {
		s.held--
	}
	s.startWorkers()
	s.mu.Unlock()
}

// execute queues the jobs of r's pass, in the order its plan gave them,
// arrives at a hold, and returns once each job is done or dropped; it
// returns the jobs dropped because the pass ended before their batch
// started.
func (s *scheduler) execute(r *run, jobs []*job, batches []int) []*job {
	s.mu.Lock()
	if s.executing == 0 {
		s.budget = new(atomic.Int64)
		s.budget.Store(s.budgetSize)
	}
	s.executing++
	r.budget = s.budget
	r.started = -1
	for i, j := range jobs {
		heap.Push(&s.queue, &queued{r: r, j: j, batch: batches[i], seq: s.seq})
		s.seq++
	}
	r.waiting = len(jobs)
	if s.held > 0 {
		s.held--
	}
	s.startWorkers()
	for r.waiting > 0 {
		s.done.Wait()
	}
	s.executing--
	s.mu.Unlock()
	return r.dropped
}

// startWorkers starts workers for the queue, up to the concurrency, unless
// a hold is on. Called with s.mu held.
func (s *scheduler) startWorkers() {
	for s.held == 0 && s.workers < min(s.concurrency, s.queue.Len()) {
		s.workers++
		go s.work()
	}
}

// work runs jobs until the queue is empty.
func (s *scheduler) work() {
	s.mu.Lock()
	for {
		q := s.next()
		if q == nil {
			s.workers--
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.runJob(q.r.inFlight, q.r, q.j)
		s.mu.Lock()
		q.r.waiting--
		s.done.Broadcast()
	}
}

// next takes the first job that may start: one of a pass still running,
// or of the batch its pass has in flight. The jobs of a pass that ended
// before their batch started are dropped. Called with s.mu held.
func (s *scheduler) next() *queued {
	for s.queue.Len() > 0 && s.held == 0 {
		q := heap.Pop(&s.queue).(*queued)
		r := q.r
		if r.ctx.Err() != nil && q.batch != r.started {
			r.dropped = append(r.dropped, q.j)
			r.waiting--
			s.done.Broadcast()
			continue
		}
		r.started = q.batch
		return q
	}
	return nil
}

// jobQueue orders the queued jobs: higher resource priority first, then
// higher parent priority, the kind of write most needed, the oldest drift,
// and arrival. A pass's own jobs come in this order already (sortJobs), so
// they stay in it.
type jobQueue []*queued

func (q jobQueue) Len() int { return len(q) }

func (q jobQueue) Less(a, b int) bool {
	x, y := q[a], q[b]
	if px, py := x.r.rs.cfg.Priority, y.r.rs.cfg.Priority; px != py {
		return px > py
	}
	if x.j.priority != y.j.priority {
		return x.j.priority > y.j.priority
	}
	if cx, cy := x.j.class(), y.j.class(); cx != cy {
		return cx < cy
	}
	if !x.j.since.Equal(y.j.since) {
		return x.j.since.Before(y.j.since)
	}
	return x.seq < y.seq
}

func (q jobQueue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }

func (q *jobQueue) Push(x any) { *q = append(*q, x.(*queued)) }

func (q *jobQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return x
}
