package actual_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/actual"
	"github.com/resyncd/resyncd/shard"
)

// TestEachSharded: the API server returns, page by page, the objects of
// the namespaces whose hash falls in the ranges asked for, and says so;
// shard.Part.Has agrees with it on every namespace.
func TestEachSharded(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	var namespaces []string
	for i := range 16 {
		ns := fmt.Sprintf("shard-%02d", i)
		namespaces = append(namespaces, ns)
		if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"sharded": "yes"}}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lister, err := actual.NewLister(env(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	// Slots cut where the namespaces are (their names share FNV-1a's high
	// bits): one, three of them, and the rest.
	layout := shard.LayoutOf(namespaces)
	parts := []shard.Part{{Layout: layout, Slots: 1 << 4}, {Layout: layout, Slots: 0b1011_0000_0001}}
	parts = append(parts, shard.Part{Layout: layout, Slots: layout.All() &^ (parts[0].Slots | parts[1].Slots)})
	seen := map[string]int{}
	for _, s := range parts {
		t.Run(s.String(), func(t *testing.T) {
			var want, got []string
			for _, ns := range namespaces {
				if s.Has(ns) {
					want = append(want, ns)
				}
			}
			listed, err := lister.Each(t.Context(), gvr, "", metav1.ListOptions{LabelSelector: "sharded=yes", ShardSelector: s.Selector()}, 3,
				func(u *unstructured.Unstructured) error {
					got = append(got, u.GetNamespace())
					seen[u.GetNamespace()]++
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if !listed.Sharded {
				t.Errorf("the server did not say it applied %q", s.Selector())
			}
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("namespaces listed (-want +got):\n%s", diff)
			}
		})
	}
	// The three parts cover the hash space once: each namespace once.
	for _, ns := range namespaces {
		if seen[ns] != 1 {
			t.Errorf("%s listed %d times over the three ranges, want 1", ns, seen[ns])
		}
	}
}
