package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

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

// metricsGuard lets a request through to next only with a bearer token
// that the API server authenticates (TokenReview) and allows to get the
// path (SubjectAccessReview on a non-resource URL): 401 without a valid
// token, 403 without the permission. This is what kubebuilder-scaffolded
// operators get from controller-runtime's metrics filter; that filter
// links k8s.io/apiserver into the binary, so the same two reviews are made
// here with client-go. Verdicts are kept (an allowed one a minute), so a
// scrape every 30 s costs the API server two reviews a minute at most.
type metricsGuard struct {
	kube kubernetes.Interface
	next http.Handler
	now  func() time.Time

	mu       sync.Mutex
	verdicts map[[sha256.Size]byte]verdict
}

// verdict is what the API server said of one token and path.
type verdict struct {
	code    int // 200, 401 or 403
	expires time.Time
}

func newMetricsGuard(kube kubernetes.Interface, next http.Handler) *metricsGuard {
	return &metricsGuard{kube: kube, next: next, now: time.Now, verdicts: map[[sha256.Size]byte]verdict{}}
}

func (g *metricsGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
		return
	}
	code, err := g.judge(r.Context(), token, r.URL.Path, strings.ToLower(r.Method))
	switch {
	case err != nil:
		http.Error(w, "Cannot check the token with the API server: "+err.Error(), http.StatusServiceUnavailable)
	case code == http.StatusUnauthorized:
		http.Error(w, "Unauthorized", code)
	case code == http.StatusForbidden:
		http.Error(w, "Forbidden: the token may not "+strings.ToLower(r.Method)+" "+r.URL.Path, code)
	default:
		g.next.ServeHTTP(w, r)
	}
}

// judge returns 200, 401 or 403 for token asking verb on path.
func (g *metricsGuard) judge(ctx context.Context, token, path, verb string) (int, error) {
	key := sha256.Sum256([]byte(verb + " " + path + " " + token))
	g.mu.Lock()
	v, ok := g.verdicts[key]
	g.mu.Unlock()
	if ok && g.now().Before(v.expires) {
		return v.code, nil
	}
	code, err := g.review(ctx, token, path, verb)
	if err != nil {
		return 0, err
	}
	g.mu.Lock()
	if len(g.verdicts) >= maxVerdicts {
		clear(g.verdicts)
	}
	ttl := verdictTTL
	if code != http.StatusOK {
		ttl = refusedVerdictTTL
	}
	g.verdicts[key] = verdict{code: code, expires: g.now().Add(ttl)}
	g.mu.Unlock()
	return code, nil
}

func (g *metricsGuard) review(ctx context.Context, token, path, verb string) (int, error) {
	tr, err := g.kube.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, nil
	}
	u := tr.Status.User
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
