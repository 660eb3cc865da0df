package daemon

import (
	"context"
	"sync/atomic"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
)

// eventFlushTimeout bounds how long stopping the recorder waits for the
// Events recorded to be written.
const eventFlushTimeout = 5 * time.Second

// newRecorder returns an Event recorder writing through events.k8s.io/v1,
// and the function that stops it once the Events recorded are written,
// or eventFlushTimeout has passed: the broadcaster writes on its own
// goroutine, and its Shutdown does not wait, so the last pass of `once`
// would otherwise lose its Events.
func newRecorder(ctx context.Context, kube kubernetes.Interface) (events.EventRecorder, func()) {
	sink := &countingSink{EventSink: &events.EventSinkImpl{Interface: kube.EventsV1()}}
	b := events.NewBroadcaster(sink)
	b.StartRecordingToSink(ctx.Done())
	rec := &countingRecorder{EventRecorder: b.NewRecorder(scheme.Scheme, "resyncd")}
	return rec, func() {
		deadline := time.Now().Add(eventFlushTimeout)
		for sink.handled.Load() < rec.recorded.Load() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		b.Shutdown()
	}
}

// countingRecorder counts the Events recorded.
type countingRecorder struct {
	events.EventRecorder
	recorded atomic.Int64
}

func (r *countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.recorded.Add(1)
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// countingSink counts the Events the API server answered for, written or
// refused. A repeat of an Event joins its series instead, and reaches the
// sink only later: stopping then waits out eventFlushTimeout.
type countingSink struct {
	events.EventSink
	handled atomic.Int64
}

func (s *countingSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	defer s.handled.Add(1)
	return s.EventSink.Create(ctx, e)
}
