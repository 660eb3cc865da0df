package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/config"
)

// Bounds of the metrics guard's memory of verdicts: an allowed token is
// asked about again after a minute, a refused one after a few seconds,
// so that a binding just made works at the next scrape.
const (
	verdictTTL        = time.Minute
	refusedVerdictTTL = 5 * time.Second
	maxVerdicts       = 1024
)

// Bounds of the reviews asked of the API server for tokens the guard has
// no verdict for: a scraper's token is reviewed once a minute, so a few a
// second serve many scrapers, and a flood of made-up tokens costs the API
// server at most that, and evicts no scraper's verdict.
const (
	reviewsPerSecond = 5
	reviewBurst      = 20
)

// The identities of a request the API server lets in without credentials:
// they never read /metrics through the guard, whatever RBAC grants them.
const (
	anonymousUser        = "system:anonymous"
	unauthenticatedGroup = "system:unauthenticated"
)

// metricsGuard lets a request through to next only with a bearer token
// that the API server authenticates (TokenReview) as someone other than
// the anonymous user and allows to get the path (SubjectAccessReview on a
// non-resource URL): 401 without a valid token, 403 without the
// permission, 429 when too many unknown tokens came at once. This is what
// kubebuilder-scaffolded operators get from controller-runtime's metrics
// filter; that filter links k8s.io/apiserver into the binary, so the same
// two reviews are made here with client-go. Verdicts are kept (an allowed
// one a minute), so a scrape every 30 s costs the API server two reviews a
// minute at most.
type metricsGuard struct {
	kube kubernetes.Interface
	next http.Handler
	now  func() time.Time
	// reviews bounds the reviews of tokens with no verdict kept.
	reviews *rate.Limiter

	mu       sync.Mutex
	verdicts map[[sha256.Size]byte]verdict
}

// verdict is what the API server said of one token and path.
type verdict struct {
	code    int // 200, 401 or 403
	expires time.Time
}

// newMetricsGuard returns the guard of next, which asks kube's API server
// for its verdicts.
func newMetricsGuard(kube kubernetes.Interface, next http.Handler) *metricsGuard {
	return &metricsGuard{kube: kube, next: next, now: time.Now, reviews: rate.NewLimiter(reviewsPerSecond, reviewBurst),
		verdicts: map[[sha256.Size]byte]verdict{}}
}

func (g *metricsGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
		return
	}
	code, err := g.judge(r.Context(), token, r.URL.Path, strings.ToLower(r.Method))
	switch {
	case err != nil:
		http.Error(w, "Cannot check the token with the API server: "+err.Error(), http.StatusServiceUnavailable)
	case code == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "Too many requests with unknown tokens: retry later", code)
	case code == http.StatusUnauthorized:
		http.Error(w, "Unauthorized", code)
	case code == http.StatusForbidden:
		http.Error(w, "Forbidden: the token may not "+strings.ToLower(r.Method)+" "+r.URL.Path, code)
	default:
		g.next.ServeHTTP(w, r)
	}
}

// bearerToken returns the token of an Authorization header value of the
// Bearer scheme, whose name is read in any case (RFC 9110), with the space
// around the value and between scheme and token trimmed.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// judge returns 200, 401 or 403 for token asking verb on path, or 429
// when the token has no verdict kept and reviews are over their bound.
func (g *metricsGuard) judge(ctx context.Context, token, path, verb string) (int, error) {
	key := sha256.Sum256([]byte(verb + " " + path + " " + token))
	g.mu.Lock()
	v, ok := g.verdicts[key]
	g.mu.Unlock()
	if ok && g.now().Before(v.expires) {
		return v.code, nil
	}
	if !g.reviews.AllowN(g.now(), 1) {
		return http.StatusTooManyRequests, nil
	}
	code, err := g.review(ctx, token, path, verb)
	if err != nil {
		return 0, err
	}
	ttl := verdictTTL
	if code != http.StatusOK {
		ttl = refusedVerdictTTL
	}
	g.keep(key, verdict{code: code, expires: g.now().Add(ttl)})
	return code, nil
}

// keep remembers v; when the memory is full, expired verdicts are dropped,
// and then those closest to expiring (refused ones before allowed ones),
// so that a flood of new tokens does not evict a scraper's verdict.
func (g *metricsGuard) keep(key [sha256.Size]byte, v verdict) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.verdicts[key]; !ok && len(g.verdicts) >= maxVerdicts {
		now := g.now()
		maps.DeleteFunc(g.verdicts, func(_ [sha256.Size]byte, v verdict) bool { return !now.Before(v.expires) })
		if len(g.verdicts) >= maxVerdicts {
			delete(g.verdicts, soonestExpiring(g.verdicts))
		}
	}
	g.verdicts[key] = v
}

// soonestExpiring returns the key of the verdict that expires first.
func soonestExpiring(verdicts map[[sha256.Size]byte]verdict) [sha256.Size]byte {
	var key [sha256.Size]byte
	var at time.Time
	for k, v := range verdicts {
		if at.IsZero() || v.expires.Before(at) {
			key, at = k, v.expires
		}
	}
	return key
}

func (g *metricsGuard) review(ctx context.Context, token, path, verb string) (int, error) {
	tr, err := g.kube.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	u := tr.Status.User
	if !tr.Status.Authenticated || u.Username == anonymousUser || slices.Contains(u.Groups, unauthenticatedGroup) {
		return http.StatusUnauthorized, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := g.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, nil
	}
	return http.StatusOK, nil
}

// metricsTLS is the TLS configuration of a secure metrics endpoint: the
// configured certificate, or a self-signed one made now.
func metricsTLS(m config.Metrics) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	if m.CertFile != "" {
		cert, err = tls.LoadX509KeyPair(m.CertFile, m.KeyFile)
	} else {
		cert, err = selfSigned()
	}
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// selfSigned makes a certificate for a scraper that does not verify it
// (Prometheus with insecureSkipVerify); the bearer token is what
// authenticates the scraper.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "resyncd-metrics"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
