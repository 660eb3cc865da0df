package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// life is one injected change: when the API server held the drifted
// object and when it held the repaired one, as a watch saw them.
type life struct {
	drifted, repaired time.Time
}

// driftLatency changes `changes` children of managedBy, picked at random,
// at random moments over span, as driftOne does, and watches each until
// it is repaired or settle after the span has passed. It returns each
// repaired change's life in seconds and the number not repaired.
func (c *cluster) driftLatency(ctx context.Context, managedBy string, span time.Duration, changes int, settle time.Duration,
	rng *rand.Rand) ([]float64, int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=" + managedBy}
	deps, err := c.cs.AppsV1().Deployments("").List(ctx, sel)
	if err != nil {
		return nil, 0, err
	}
	svcs, err := c.cs.CoreV1().Services("").List(ctx, sel)
	if err != nil {
		return nil, 0, err
	}
	var all []childKey
	for _, d := range deps.Items {
		all = append(all, childKey{"Deployment", d.Namespace, d.Name})
	}
	for _, s := range svcs.Items {
		all = append(all, childKey{"Service", s.Namespace, s.Name})
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	picked := all[:min(changes, len(all))]
	at := make([]time.Duration, len(picked))
	for i := range at {
		at[i] = time.Duration(rng.Int64N(int64(span)))
	}
	slices.Sort(at)

	var (
		mu       sync.Mutex
		lives    = map[childKey]*life{}
		repaired int
	)
	observe := func(k childKey, inSync bool) {
		mu.Lock()
		defer mu.Unlock()
		l := lives[k]
		switch {
		case l == nil:
		case !inSync && l.drifted.IsZero():
			l.drifted = time.Now()
		case inSync && !l.drifted.IsZero() && l.repaired.IsZero():
			l.repaired = time.Now()
			repaired++
		}
	}
	watches := make(chan error, 2)
	follow := func(w watch.Interface, err error) {
		if err != nil {
			watches <- err
			return
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				switch o := ev.Object.(type) {
				case *appsv1.Deployment:
					observe(childKey{"Deployment", o.Namespace, o.Name}, deploymentInSync(o))
				case *corev1.Service:
					observe(childKey{"Service", o.Namespace, o.Name}, serviceInSync(o))
				}
			}
			if ctx.Err() == nil {
				watches <- errors.New("drift latency: the watch ended early")
			}
		}()
	}
	sel.ResourceVersion = deps.ResourceVersion
	follow(c.cs.AppsV1().Deployments("").Watch(ctx, sel))
	sel.ResourceVersion = svcs.ResourceVersion
	follow(c.cs.CoreV1().Services("").Watch(ctx, sel))

	start := time.Now()
	for i, k := range picked {
		select {
		case <-time.After(time.Until(start.Add(at[i]))):
		case err := <-watches:
			return nil, 0, err
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
		mu.Lock()
		lives[k] = &life{}
		mu.Unlock()
		if err := c.driftOne(ctx, k); err != nil {
			return nil, 0, err
		}
	}
	deadline := time.Now().Add(settle)
	for time.Now().Before(deadline) {
		mu.Lock()
		done := repaired == len(picked)
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case err := <-watches:
			return nil, 0, err
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var secs []float64
	for _, k := range picked {
		if l := lives[k]; !l.repaired.IsZero() {
			secs = append(secs, l.repaired.Sub(l.drifted).Seconds())
		}
	}
	return secs, len(picked) - len(secs), nil
}
