package engine

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/resyncd/resyncd/actual"
)

// TestNSCompareIsKeyOrder: nsCompare orders namespaces as the storage
// orders the keys namespace/name of their objects.
func TestNSCompareIsKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab-0"
	for range 2000 {
		var ns [2]string
		for i := range ns {
			b := make([]byte, 1+rng.IntN(4))
			for j := range b {
				b[j] = alphabet[rng.IntN(len(alphabet))]
			}
			ns[i] = string(b)
		}
		want := strings.Compare(ns[0]+"/x", ns[1]+"/x")
		if ns[0] == ns[1] {
			want = 0
		}
		if got := nsCompare(ns[0], ns[1]); got != want {
			t.Fatalf("nsCompare(%q, %q) = %d, want %d", ns[0], ns[1], got, want)
		}
	}
}

// readLog wraps a pageReader and logs, in order, every object it hands
// out: "parent ns/name" or "child ns/name".
type readLog struct {
	pageReader
	log *[]string
	// reverse hands out the parents in the reverse of the server's order.
	reverse bool
}

func (r readLog) Parents(ctx context.Context, gvr schema.GroupVersionResource, scope actual.Scope, fn func(*unstructured.Unstructured) error) (actual.Listed, error) {
	if !r.reverse {
		return r.pageReader.Parents(ctx, gvr, scope, r.logged("parent", fn))
	}
	var all []*unstructured.Unstructured
	listed, err := r.pageReader.Parents(ctx, gvr, scope, func(u *unstructured.Unstructured) error { all = append(all, u); return nil })
	if err != nil {
		return listed, err
	}
	slices.Reverse(all)
	for _, u := range all {
		if err := r.logged("parent", fn)(u); err != nil {
			return listed, err
		}
	}
	return listed, nil
}

func (r readLog) Children(ctx context.Context, gvr schema.GroupVersionResource, scope actual.Scope, selector string, fn func(*unstructured.Unstructured) error) (actual.Listed, error) {
	return r.pageReader.Children(ctx, gvr, scope, selector, r.logged("child", fn))
}

func (r readLog) logged(what string, fn func(*unstructured.Unstructured) error) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		*r.log = append(*r.log, what+" "+u.GetNamespace()+"/"+u.GetName())
		return fn(u)
	}
}

// windowNamespaces are namespaces whose order by name is not the order
// of their objects' keys: "team-a/…" sorts after "team-a-b/…".
var windowNamespaces = []string{"team-a", "team-a-b", "team-a0", "team-b"}

// TestPassReadsANamespaceAtATime: a pass reads the parents and children
// side by side, and, when it reads a parent, has read of the namespaces
// after the parent's no more than the one child at the head of each
// kind's LIST. Orphans are found as well as when the cluster is read
// whole: the children of a deleted parent, in a namespace that has other
// parents and in one that has none left, are deleted, and nothing else.
func TestPassReadsANamespaceAtATime(t *testing.T) {
	p := newMemPass(t, testConfig())
	for _, ns := range windowNamespaces {
		for _, name := range []string{"api", "web"} {
			p.parent(ns, name, map[string]any{"image": "nginx:1", "port": int64(8080)})
		}
	}
	var log []string
	p.engine.reader = readLog{pageReader: p.engine.reader, log: &log}
	if rep := p.sync(); rep.Created != 16 {
		t.Fatalf("created %d children, want 16 (a Deployment and a Service of each of 8 parents)", rep.Created)
	}
	log = nil
	if calls := p.syncCalls(); len(calls) != 0 {
		t.Fatalf("the pass after the converged one wrote %q", calls)
	}
	order := slices.SortedFunc(slices.Values(windowNamespaces), nsCompare)
	for i, entry := range log {
		what, obj, _ := strings.Cut(entry, " ")
		if what != "parent" {
			continue
		}
		ns, _, _ := strings.Cut(obj, "/")
		after := order[slices.Index(order, ns)+1:]
		ahead := 0
		for _, e := range log[:i] {
			if ens, _, _ := strings.Cut(strings.TrimPrefix(e, "child "), "/"); strings.HasPrefix(e, "child ") && slices.Contains(after, ens) {
				ahead++
			}
		}
		if ahead > 2 { // the head of the Deployments' LIST and of the Services'
			t.Errorf("when parent %s was read, %d children of later namespaces had been read, want at most 2:\n%s", obj, ahead, strings.Join(log[:i+1], "\n"))
		}
	}

	// The parents gone: api in team-a (whose web stays), both in team-a-b.
	for _, gone := range [][2]string{{"team-a", "api"}, {"team-a-b", "api"}, {"team-a-b", "web"}} {
		p.w.remove(httpServices, gone[0], gone[1])
	}
	p.sync()
	want := []string{"team-a/web", "team-a0/api", "team-a0/web", "team-b/api", "team-b/web"}
	for _, gvr := range []schema.GroupVersionResource{deployments, services} {
		if got := p.w.names(gvr); !slices.Equal(got, want) {
			t.Errorf("%s left: %q, want %q", gvr.Resource, got, want)
		}
	}
	if calls := p.syncCalls(); len(calls) != 0 {
		t.Errorf("the pass after the pruning one wrote %q", calls)
	}
}

// TestUnsortedListReadsWhole: a server that lists parents out of its
// keys' order fails the pass that sees it, with no write, rather than
// taking the children of the parents not yet read for orphans; the
// passes after it read the whole cluster at once and converge it.
func TestUnsortedListReadsWhole(t *testing.T) {
	p := newMemPass(t, testConfig())
	for _, ns := range windowNamespaces {
		p.parent(ns, "web", map[string]any{"image": "nginx:1", "port": int64(8080)})
	}
	p.sync()
	var log []string
	p.engine.reader = readLog{pageReader: p.engine.reader, log: &log, reverse: true}
	p.w.log()
	_, err := p.engine.SyncOnce(t.Context())
	if err == nil || !strings.Contains(err.Error(), "out of its storage order") {
		t.Fatalf("SyncOnce: %v, want the order named", err)
	}
	if calls := writesOf(p.w.log()); len(calls) != 0 {
		t.Errorf("the pass that saw the order broken wrote %q", calls)
	}
	p.w.remove(httpServices, "team-a0", "web")
	rep := p.sync()
	if rep.Deleted != 2 || rep.InSync != 6 {
		t.Errorf("read whole: deleted %d, in sync %d, want 2 (team-a0/web's children) and 6", rep.Deleted, rep.InSync)
	}
	want := []string{"team-a-b/web", "team-a/web", "team-b/web"}
	if got := p.w.names(deployments); !slices.Equal(got, want) {
		t.Errorf("Deployments left: %q, want %q", got, want)
	}
}
