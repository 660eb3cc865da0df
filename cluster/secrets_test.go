package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestClaimNames: of two Secrets that name one cluster the older keeps
// it, whatever their names; a name of the configuration is never taken;
// a Secret refused already keeps its reason and claims nothing.
func TestClaimNames(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	secret := func(key, name string, created int, err error) secretCluster {
		sc := secretCluster{secret: key, created: at(created), err: err}
		sc.Name = name
		return sc
	}
	broken := errors.New("kubeconfig: no current context")
	found := []secretCluster{
		secret("argocd/a-new", "west", 20, nil),
		secret("argocd/b-broken", "north", 5, broken),
		secret("argocd/home", "home", 1, nil),
		secret("argocd/z-old", "west", 10, nil),
		secret("argocd/north", "north", 30, nil),
	}
	got := claimNames(map[string]string{"home": "clusters[0]"}, found)
	want := []string{
		`the cluster name "west" is taken by the Secret argocd/z-old; give one of the two another name`,
		broken.Error(),
		`the cluster name "home" is taken by clusters[0]; give one of the two another name`,
		"",
		"",
	}
	var errs []string
	for _, sc := range got {
		msg := ""
		if sc.err != nil {
			msg = sc.err.Error()
		}
		errs = append(errs, msg)
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
