package actual_test

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
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
	cfg := rest.CopyConfig(env(t).Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	lister, err := actual.NewLister(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	listed, err := lister.Each(t.Context(), gvr, "paging", metav1.ListOptions{LabelSelector: "paging=yes"}, 7,
		func(u *unstructured.Unstructured) error {
			// The API server leaves kind out of a built-in list's items.
			if u.GetKind() != "ConfigMap" || u.GetAPIVersion() != "v1" {
				t.Errorf("%s: kind %q, apiVersion %q; want ConfigMap, v1", u.GetName(), u.GetKind(), u.GetAPIVersion())
			}
			got = append(got, u.GetName())
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if listed.Kind != "ConfigMap" || listed.Sharded {
		t.Errorf("listed %+v, want kind ConfigMap, not sharded", listed)
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

// TestEachErrors: the API server's refusal comes back as its own error,
// so that callers can tell a missing resource or a throttled request.
func TestEachErrors(t *testing.T) {
	lister, err := actual.NewLister(env(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "resyncd.io", Version: "v1alpha1", Resource: "nothings"}
	_, err = lister.Each(t.Context(), gvr, "", metav1.ListOptions{}, 10, func(*unstructured.Unstructured) error { return nil })
	if !apierrors.IsNotFound(err) {
		t.Errorf("LIST of a resource not served: %v, want NotFound", err)
	}
	stop := errors.New("stop")
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	_, err = lister.Each(t.Context(), cms, "", metav1.ListOptions{}, 10, func(*unstructured.Unstructured) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("fn's error: got %v", err)
	}
}
