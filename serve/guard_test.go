package serve

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/resyncd/resyncd/internal/fixture"
)

// okHandler answers 200 "metrics".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics") })

// guardAnswer is the status code g answers a GET /metrics with the
// Authorization header auth (none when empty).
func guardAnswer(t *testing.T, g http.Handler, auth string) int {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	return rec.Code
}

// TestMetricsGuardHeader: against the API server, with anonymous requests
// allowed to get /metrics there, the Authorization value is trimmed and
// its scheme read in any case: a stray space does not make the request
// anonymous, a lower-case scheme is not refused.
func TestMetricsGuardHeader(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env(t).Config)
	const ns = "metrics-header"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-header-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	allowed := fixture.ServiceAccountToken(t, cs, ns, "scraper", reader.Name, "metrics-header")
	anonymous := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-header-anonymous"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:unauthenticated"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, anonymous, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), anonymous.Name, metav1.DeleteOptions{})
	})
	// The authorizer learns of the bindings from its cache, a moment later.
	fixture.Eventually(t, "anonymous requests allowed to get /metrics", 30*time.Second, func() bool {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:anonymous", Groups: []string{"system:unauthenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed
	})
	fixture.Eventually(t, "the scraper allowed", 30*time.Second, func() bool {
		return guardAnswer(t, newMetricsGuard(cs, okHandler), "Bearer "+allowed) == http.StatusOK
	})
	for _, tt := range []struct {
		name, auth string
		want       int
	}{
		{"two spaces before a token that is no token", "Bearer  x", http.StatusUnauthorized},
		{"a space and nothing", "Bearer  ", http.StatusUnauthorized},
		{"the scheme in lower case", "bearer " + allowed, http.StatusOK},
		{"the scheme in upper case, spaces around", "  BEARER   " + allowed + " ", http.StatusOK},
		{"a second word after the token", "Bearer " + allowed + " x", http.StatusUnauthorized},
		{"another scheme", "Basic " + allowed, http.StatusUnauthorized},
		{"no scheme", allowed, http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := guardAnswer(t, newMetricsGuard(cs, okHandler), tt.auth); got != tt.want {
				t.Errorf("Authorization %q: %d, want %d", tt.auth, got, tt.want)
			}
		})
	}
}

// reviewer is a fake API server's TokenReview and SubjectAccessReview:
// every token is authenticated as user, and allowed; reviews counts the
// TokenReviews.
func reviewer(user authenticationv1.UserInfo, reviews *atomic.Int32) kubernetes.Interface {
	cs := kubefake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
		reviews.Add(1)
		tr := action.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: user}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
		sar := action.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = true
		return true, sar, nil
	})
	return cs
}

// TestMetricsGuardRefusesAnonymous: a token the API server authenticates
// as the anonymous user, or in the unauthenticated group, gets 401 even
// where RBAC lets it get /metrics.
func TestMetricsGuardRefusesAnonymous(t *testing.T) {
	for _, user := range []authenticationv1.UserInfo{
		{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}},
		{Username: "system:anonymous"},
		{Username: "someone", Groups: []string{"system:unauthenticated"}},
	} {
		var reviews atomic.Int32
		if got := guardAnswer(t, newMetricsGuard(reviewer(user, &reviews), okHandler), "Bearer x"); got != http.StatusUnauthorized {
			t.Errorf("a token of %+v: %d, want 401", user, got)
		}
	}
	var reviews atomic.Int32
	if got := guardAnswer(t, newMetricsGuard(reviewer(authenticationv1.UserInfo{Username: "prometheus"}, &reviews), okHandler), "Bearer x"); got != http.StatusOK {
		t.Errorf("a token of a user: %d, want 200", got)
	}
}

// TestMetricsGuardBoundsReviews: tokens the guard has no verdict for are
// reviewed at most reviewBurst at once and reviewsPerSecond after; the
// others get 429, and a scraper's verdict kept is served without a review.
func TestMetricsGuardBoundsReviews(t *testing.T) {
	var reviews atomic.Int32
	g := newMetricsGuard(reviewer(authenticationv1.UserInfo{Username: "prometheus"}, &reviews), okHandler)
	now := time.Now()
	g.now = func() time.Time { return now }
	if got := guardAnswer(t, g, "Bearer scraper"); got != http.StatusOK {
		t.Fatalf("the scraper: %d", got)
	}
	codes := map[int]int{}
	for i := range 200 {
		codes[guardAnswer(t, g, fmt.Sprintf("Bearer random-%d", i))]++
	}
	if want := map[int]int{http.StatusOK: reviewBurst - 1, http.StatusTooManyRequests: 200 - reviewBurst + 1}; !maps.Equal(codes, want) {
		t.Errorf("200 unknown tokens at once: %v, want %v", codes, want)
	}
	if n := reviews.Load(); n != reviewBurst {
		t.Errorf("%d TokenReviews, want %d", n, reviewBurst)
	}
	if got := guardAnswer(t, g, "Bearer scraper"); got != http.StatusOK || reviews.Load() != reviewBurst {
		t.Errorf("the scraper during the flood: %d after %d reviews, want 200 with no review", got, reviews.Load())
	}
	now = now.Add(time.Second)
	for i := range 20 {
		guardAnswer(t, g, fmt.Sprintf("Bearer later-%d", i))
	}
	if n := reviews.Load(); n != reviewBurst+reviewsPerSecond {
		t.Errorf("a second later: %d TokenReviews in all, want %d", n, reviewBurst+reviewsPerSecond)
	}
}

// TestMetricsGuardEvictsByAge: with the memory of verdicts full, the
// verdicts that expire first go, one at a time: a scraper's allowed
// verdict outlives a flood of refused ones and is not asked again.
func TestMetricsGuardEvictsByAge(t *testing.T) {
	var reviews atomic.Int32
	g := newMetricsGuard(reviewer(authenticationv1.UserInfo{Username: "prometheus"}, &reviews), okHandler)
	g.reviews = rate.NewLimiter(rate.Inf, 0)
	now := time.Now()
	g.now = func() time.Time { return now }
	guardAnswer(t, g, "Bearer scraper")
	// Refused verdicts, each a moment younger than the one before.
	for i := range 2 * maxVerdicts {
		now = now.Add(time.Millisecond)
		g.keep(sha256.Sum256(fmt.Appendf(nil, "refused-%d", i)), verdict{code: http.StatusUnauthorized, expires: now.Add(refusedVerdictTTL)})
	}
	if n := len(g.verdicts); n != maxVerdicts {
		t.Errorf("%d verdicts kept, want %d", n, maxVerdicts)
	}
	before := reviews.Load()
	if got := guardAnswer(t, g, "Bearer scraper"); got != http.StatusOK || reviews.Load() != before {
		t.Errorf("the scraper after the flood: %d, %d reviews more; want 200 from its verdict kept", got, reviews.Load()-before)
	}
	if _, ok := g.verdicts[sha256.Sum256([]byte("refused-0"))]; ok {
		t.Error("the oldest refused verdict is still kept")
	}
	if _, ok := g.verdicts[sha256.Sum256(fmt.Appendf(nil, "refused-%d", 2*maxVerdicts-1))]; !ok {
		t.Error("the youngest verdict was evicted")
	}
}
