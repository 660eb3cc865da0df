package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/resyncd/resyncd/config"
)

// SecretReader reads, through resyncd's own connection, the clusters that
// the Secrets of the configuration's clusterSecrets hold: one LIST per
// entry and call, no watch. What a LIST that fails would have found is
// taken to be what the last one found: an API server that is away for a
// moment stops no cluster.
type SecretReader struct {
	catalog *Catalog
	kube    kubernetes.Interface
	entries []config.ClusterSecret
	log     *zap.Logger
	// last is what the last LIST of each entry found.
	last [][]secretCluster
	// failed is the error of each entry's last LIST, "" when it
	// succeeded: a LIST that keeps failing is logged once.
	failed []string
	// said is what was last logged of each Secret read: why it was
	// refused, or "" when it was not.
	said map[string]string
}

// secretCluster is one Secret read.
type secretCluster struct {
	config.SecretCluster
	// secret is the Secret's namespace/name.
	secret string
	// sum hashes the Secret's name and data: a Secret whose sum changed
	// holds new credentials (a token rotated), or another server.
	sum [sha256.Size]byte
	// created is when the Secret was created: of two that name one
	// cluster, the older keeps it.
	created time.Time
	// err is why the Secret is refused.
	err error
}

// Secrets returns the reader of the clusters of the Secrets the
// configuration selects (clusterSecrets), LISTed through kube, resyncd's
// own connection; what it logs goes to log. Nil when the configuration
// selects none.
func (c *Catalog) Secrets(kube kubernetes.Interface, log *zap.Logger) *SecretReader {
	entries := c.cfg.ClusterSecrets
	if len(entries) == 0 {
		return nil
	}
	return &SecretReader{catalog: c, kube: kube, entries: entries, log: log,
		last: make([][]secretCluster, len(entries)), failed: make([]string, len(entries)), said: map[string]string{}}
}

// read LISTs the Secrets of every entry and returns the clusters they
// hold, refused ones with the reason, in the configuration's order of
// the entries, then by namespace and name; a Secret two entries select
// is read once.
func (r *SecretReader) read(ctx context.Context) []secretCluster {
	var out []secretCluster
	seen := map[string]bool{}
	for i, e := range r.entries {
		for _, sc := range r.list(ctx, i, e) {
			if !seen[sc.secret] {
				seen[sc.secret] = true
				out = append(out, sc)
			}
		}
	}
	for key := range r.said {
		if !seen[key] {
			delete(r.said, key)
		}
	}
	return out
}

// list LISTs the Secrets of entry i, e, and reads each.
func (r *SecretReader) list(ctx context.Context, i int, e config.ClusterSecret) []secretCluster {
	list, err := r.kube.CoreV1().Secrets(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.LabelSelector})
	if err != nil {
		if ctx.Err() == nil && r.failed[i] != err.Error() {
			r.log.Warn("Cluster Secrets not listed", zap.String("namespace", e.Namespace),
				zap.String("labelSelector", e.LabelSelector), zap.Error(err))
		}
		r.failed[i] = err.Error()
		return r.last[i]
	}
	if r.failed[i] != "" {
		r.log.Info("Cluster Secrets listed again", zap.String("namespace", e.Namespace), zap.String("labelSelector", e.LabelSelector))
	}
	r.failed[i] = ""
	found := make([]secretCluster, 0, len(list.Items))
	for _, s := range list.Items {
		found = append(found, readSecret(&s))
	}
	r.last[i] = found
	return found
}

// readSecret reads the cluster Secret s holds.
func readSecret(s *corev1.Secret) secretCluster {
	sc := secretCluster{secret: s.Namespace + "/" + s.Name, sum: secretSum(s), created: s.CreationTimestamp.Time}
	sc.SecretCluster, sc.err = config.ClusterFromSecret(s.Name, s.Data)
	return sc
}

// secretSum hashes the name and the data of s, not its labels or
// annotations: editing those restarts nothing.
func secretSum(s *corev1.Secret) [sha256.Size]byte {
	h := sha256.New()
	field := func(b []byte) {
		_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
		h.Write(b)
	}
	field([]byte(s.Namespace + "/" + s.Name))
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		field([]byte(k))
		field(s.Data[k])
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// report logs, once per change, that the Secret of sc is refused and why
// (err), or that it no longer is.
func (r *SecretReader) report(sc secretCluster, err error) {
	why := ""
	if err != nil {
		why = err.Error()
	}
	before, known := r.said[sc.secret]
	r.said[sc.secret] = why
	switch {
	case why != "" && why != before:
		r.log.Warn("Cluster Secret refused", zap.String("secret", sc.secret), zap.String("cluster", sc.Name),
			zap.String("format", string(sc.Format)), zap.String("reason", why))
	case why == "" && known && before != "":
		r.log.Info("Cluster Secret accepted", zap.String("secret", sc.secret), zap.String("cluster", sc.Name))
	}
}

// Refused is a Secret read that holds no cluster resyncd syncs.
type Refused struct {
	// Name is the cluster the Secret names, Secret its namespace/name.
	Name, Secret string
	// Err says why it is refused.
	Err error
}

// Read LISTs the Secrets and returns the clusters they hold, in the
// configuration's order of the entries, then by namespace and name, and
// those refused: a Secret whose cluster's name another cluster has, or
// that does not hold a cluster resyncd accepts. A refusal is logged once,
// as is a LIST that keeps failing; what a LIST that fails would have found
// is taken to be what the last one found.
func (r *SecretReader) Read(ctx context.Context) (accepted []*Target, refused []Refused) {
	for _, sc := range claimNames(r.catalog.takenNames(), r.read(ctx)) {
		r.report(sc, sc.err)
		if sc.err != nil {
			refused = append(refused, Refused{Name: sc.Name, Secret: sc.secret, Err: sc.err})
			continue
		}
		accepted = append(accepted, r.catalog.secretTarget(sc))
	}
	return accepted, refused
}

// ReadOnce reads the Secrets once, for a command that runs one pass, and
// returns the clusters they hold; a Secret refused, or a LIST that
// failed, is an error of its own.
func (r *SecretReader) ReadOnce(ctx context.Context) ([]*Target, error) {
	var out []*Target
	var errs []error
	for _, sc := range claimNames(r.catalog.takenNames(), r.read(ctx)) {
		if sc.err != nil {
			errs = append(errs, fmt.Errorf("cluster %s (Secret %s): refused: %w", sc.Name, sc.secret, sc.err))
			continue
		}
		out = append(out, r.catalog.secretTarget(sc))
	}
	cfg := r.catalog.cfg
	for i, e := range r.entries {
		if r.failed[i] != "" {
			errs = append(errs, fmt.Errorf("%s: clusterSecrets[%d]: list the Secrets in %s: %s", cfg.Where(fmt.Sprintf("clusterSecrets[%d]", i)), i, e.Namespace, r.failed[i]))
		}
	}
	return out, errors.Join(errs...)
}

// takenNames maps the name of each cluster of the configuration file to
// its key.
func (c *Catalog) takenNames() map[string]string {
	taken := make(map[string]string, len(c.listed))
	for i, t := range c.listed {
		taken[t.Config.Name] = fmt.Sprintf("clusters[%d]", i)
	}
	return taken
}

// claimNames gives each Secret of found that is not refused the name of
// its cluster, the oldest Secret first, unless taken (cluster name → what
// has it) has it already: then it is refused. The oldest first, so that a
// Secret created beside the one of a running cluster, under any name,
// cannot take its cluster, and a restart changes nothing. It returns
// found, in its order, with the reason of each refused.
func claimNames(taken map[string]string, found []secretCluster) []secretCluster {
	out := slices.Clone(found)
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return out[a].created.Compare(out[b].created) })
	for _, i := range order {
		sc := &out[i]
		if other, ok := taken[sc.Name]; ok && sc.err == nil {
			sc.err = fmt.Errorf("the cluster name %q is taken by %s; give one of the two another name", sc.Name, other)
		}
		if sc.err == nil {
			taken[sc.Name] = "the Secret " + sc.secret
		}
	}
	return out
}

// secretTarget is the cluster that the Secret read sc holds.
func (c *Catalog) secretTarget(sc secretCluster) *Target {
	t := c.target(c.cfg.ClusterOfSecret(sc.Name, sc.secret))
	t.secret, t.Sum = sc.REST, sc.sum
	return t
}
