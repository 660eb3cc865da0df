package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/internal/fixture"
	"github.com/resyncd/resyncd/internal/testenv"
)

// TestLeaderStopsAfterItsBatch: `resyncd run` with leader election, stopped
// while it writes a batch that takes seconds, returns only once the batch
// is written, and has released the Lease by then.
func TestLeaderStopsAfterItsBatch(t *testing.T) {
	const ns, parents = "lead", 30
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	dyn := dynamic.NewForConfigOrDie(env(t).Config)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range parents {
		fixture.CreateParent(t, dyn, ns, fmt.Sprintf("app-%02d", i), map[string]any{"image": "nginx", "port": int64(8080)})
	}
	flags := files(t, ns)
	health := testenv.FreeAddr(t)
	// 20 writes a second: the one batch of 90 writes takes seconds.
	body := fmt.Sprintf(`metrics: {address: "127.0.0.1:0"}
health: {address: %[2]q}
log: {level: error}
leaderElection: {enabled: true, namespace: %[1]s, leaseName: resyncd-lead, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 500ms}
apply: {qps: 20, burst: 1, batchSize: 200, concurrency: 2}
resources:
  - {group: resyncd.io, version: v1alpha1, resource: httpservices, renderer: httpservice, interval: 10m, namespaces: [%[1]s]}
`, ns, health)
	if err := os.WriteFile(flags[3], []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, flags[3], flags[1], 30*time.Second)
	}()
	// No request of the test's own until run serves: run sets client-go's
	// logger as it starts, which a main does before any request.
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("resyncd run ended as it started: %v", err)
		default:
		}
		resp, err := http.Get("http://" + health + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return true, nil
	})
	if err != nil {
		t.Fatalf("resyncd run does not serve: %v", err)
	}
	children := func() int {
		deps, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svcs, err := cs.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(deps.Items) + len(svcs.Items)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("resyncd run ended before writing: %v", err)
		default:
		}
		return children() > 0, nil
	})
	if err != nil {
		t.Fatalf("no child written: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("resyncd run after SIGTERM: %v", err)
	}
	if got := children(); got != 2*parents {
		t.Errorf("%d children when run returned, want %d: the batch in flight did not finish", got, 2*parents)
	}
	lease, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), "resyncd-lead", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %s after run returned", *h)
	}
}

// TestTerm: the elector's context of a replica outlives a shutdown while
// the passes it leads finish their batch, and ends once they returned; a
// Lease lost while they run ends the term at once with errLeaseLost.
func TestTerm(t *testing.T) {
	errPasses := errors.New("passes")
	for _, tc := range []struct {
		name string
		// lead says whether the replica leads; shutdown and lose end its
		// run: by a shutdown, by a lost Lease.
		lead, shutdown, lose bool
		// finish lets the batch in flight finish before result is asked.
		finish bool
		want   error
	}{
		{name: "shutdown while following", shutdown: true, want: context.Canceled},
		{name: "shutdown while leading", lead: true, shutdown: true, finish: true, want: errPasses},
		{name: "Lease lost during the batch", lead: true, lose: true, want: errLeaseLost},
		{name: "Lease lost during the batch after a shutdown", lead: true, shutdown: true, lose: true, want: errLeaseLost},
		{name: "Lease lost, the batch finished", lead: true, lose: true, finish: true, want: errLeaseLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shutdown, stop := context.WithCancel(t.Context())
			defer stop()
			term := newTerm(shutdown)
			leading, lose := context.WithCancel(term.ctx)
			defer lose()
			running, stopped, batch := make(chan struct{}), make(chan struct{}), make(chan struct{})
			if tc.lead {
				go term.lead(leading, func(ctx context.Context) error {
					close(running)
					<-ctx.Done()
					close(stopped)
					<-batch
					return errPasses
				})
				<-running
			}
			if tc.shutdown {
				stop()
			}
			if tc.lose {
				lose()
			}
			if tc.lead {
				<-stopped
				if !tc.lose {
					// The other callbacks of the shutdown have run by now
					// on a machine that is not starved.
					time.Sleep(100 * time.Millisecond)
					if term.ctx.Err() != nil {
						t.Fatal("the elector's context ended while the batch in flight was written")
					}
				}
			}
			if tc.finish {
				close(batch)
			}
			if !tc.lose {
				<-term.ctx.Done()
			}
			if got := term.result(); !errors.Is(got, tc.want) {
				t.Errorf("result: %v, want %v", got, tc.want)
			}
			if !tc.finish {
				close(batch)
			}
		})
	}
}
