package actual_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/resyncd/resyncd/actual"
)

// countingTransport counts the requests that reach the API server.
type countingTransport struct {
	next  http.RoundTripper
	lists atomic.Int64
	other atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Query().Has("limit") {
		c.lists.Add(1)
	} else {
		c.other.Add(1)
	}
	return c.next.RoundTrip(r)
}

func TestEachPages(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "paging"}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 20 {
		name := fmt.Sprintf("cm-%02d", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"paging": "yes"}}}
		if _, err := cs.CoreV1().ConfigMaps("paging").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	// Not selected: must not be returned.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled"}}
	if _, err := cs.CoreV1().ConfigMaps("paging").Create(t.Context(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	counter := &countingTransport{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	err = actual.Each(t.Context(), client, gvr, "paging", metav1.ListOptions{LabelSelector: "paging=yes"}, 7,
		func(u *unstructured.Unstructured) error {
			got = append(got, u.GetName())
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	if n := counter.lists.Load(); n != 3 {
		t.Errorf("LIST requests = %d, want 3 (20 objects in pages of 7)", n)
	}
	if n := counter.other.Load(); n != 0 {
		t.Errorf("other requests = %d, want 0", n)
	}
}
