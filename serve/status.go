package serve

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/resyncd/resyncd/config"
)

// Status is what the process says of itself over HTTP (Handler): the
// daemon updates it through its methods, the handlers only read it. A
// process is ready when
// it follows (it has nothing to do), or when it leads and the last pass
// over every watched resource of the clusters it reaches through its own
// connection succeeded; a replica of a ring counts only the clusters it
// holds work in. A cluster of a kubeconfig file that is down does
// not make it unready: restarting would not bring that cluster back.
// /statusz says, cluster by cluster, how the last passes went.
type Status struct {
	mu      sync.Mutex
	cfg     *config.Config
	leading bool
	ring    *ringStatus
	// shards are this replica's share of each cluster, by name, kept
	// apart from the clusters' entries: a cluster starts once the ring
	// gave it work.
	shards   map[string]*shardStatus
	clusters []*clusterStatus
	// refused are the Secrets read that hold no cluster resyncd syncs.
	refused []*clusterStatus
}

// ringStatus is what /statusz says of the ring of replicas sharing the
// work.
type ringStatus struct {
	Identity string   `json:"identity"`
	Lease    string   `json:"lease"`
	Members  []string `json:"members"`
}

// shardStatus is what /statusz says of this replica's share of a cluster.
type shardStatus struct {
	// Slots this replica holds, of the cluster's.
	Slots int `json:"slots"`
	Of    int `json:"of"`
	// Ranges are the namespace hash ranges held ("none").
	Ranges string `json:"ranges"`
	// ServerSelector: whether the last passes' LISTs were filtered by the
	// API server ("server"), or by resyncd ("local": the server does not
	// answer shardSelector, or sharding.serverSelector is off).
	ServerSelector string `json:"serverSelector,omitempty"`
}

// clusterStatus is what /statusz says of one cluster.
type clusterStatus struct {
	Name   string `json:"name"`
	Server string `json:"server,omitempty"`
	// Secret is the Secret, namespace/name, the cluster comes from.
	Secret string `json:"secret,omitempty"`
	// Home: reached through resyncd's own connection; it counts for /readyz.
	Home bool `json:"home"`
	// Up: the last pass of every resource succeeded.
	Up bool `json:"up"`
	// Error is why the cluster could not be reached or prepared, before
	// any pass.
	Error              string     `json:"error,omitempty"`
	LastSuccessfulPass *time.Time `json:"lastSuccessfulPass,omitempty"`
	// Shard is this replica's share of the cluster; nil without sharding.
	Shard     *shardStatus      `json:"shard,omitempty"`
	Resources []*resourceStatus `json:"resources"`
}

// resourceStatus is what /statusz says of one resource in one cluster.
type resourceStatus struct {
	Resource string     `json:"resource"`
	Mode     string     `json:"mode"`
	LastPass *time.Time `json:"lastPass,omitempty"`
	// Error is the last pass's, or why its writes failed for a passing reason.
	Error    string `json:"error,omitempty"`
	Parents  int    `json:"parents"`
	Drifted  int    `json:"drifted"`
	Written  int    `json:"written"`
	Failed   int    `json:"failed"`
	Stalled  int    `json:"stalled"`
	Deferred int    `json:"deferred"`
	// Foreign are the parents LISTed that are another replica's.
	Foreign int `json:"foreign,omitempty"`
	// Down is why the resource has no pass (its CRD was refused).
	Down   string `json:"down,omitempty"`
	done   bool
	failed bool
}

// NewStatus returns the status of a process that runs cfg, before any
// pass: not leading, every resource of every cluster of the file with no
// pass yet.
func NewStatus(cfg *config.Config) *Status {
	h := &Status{cfg: cfg}
	for _, c := range cfg.Clusters {
		h.clusters = append(h.clusters, newClusterStatus(c, cfg.ResourcesIn(c.Name)))
	}
	return h
}

func newClusterStatus(c config.Cluster, resources []config.Resource) *clusterStatus {
	cs := &clusterStatus{Name: c.Name, Secret: c.Secret, Home: c.Home(), Resources: []*resourceStatus{}}
	for _, r := range resources {
		cs.Resources = append(cs.Resources, &resourceStatus{Resource: r.Name(), Mode: string(r.Mode)})
	}
	return cs
}

// Add lists cluster c, watching resources, afresh: what was said of a
// cluster of that name before is forgotten.
func (h *Status) Add(c config.Cluster, resources []config.Resource) {
	cs := newClusterStatus(c, resources)
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := h.index(c.Name); i >= 0 {
		h.clusters[i] = cs
		return
	}
	h.clusters = append(h.clusters, cs)
}

// Remove stops listing the cluster named name.
func (h *Status) Remove(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := h.index(name); i >= 0 {
		h.clusters = append(h.clusters[:i], h.clusters[i+1:]...)
	}
}

// Refused is a Secret read that holds no cluster resyncd syncs.
type Refused struct {
	// Name is the cluster it names, Secret its namespace/name.
	Name, Secret string
	// Why it is refused.
	Why string
}

// SetRefused lists the Secrets read that hold no cluster resyncd syncs.
func (h *Status) SetRefused(refused []Refused) {
	listed := make([]*clusterStatus, 0, len(refused))
	for _, r := range refused {
		listed = append(listed, &clusterStatus{Name: r.Name, Secret: r.Secret, Error: "refused: " + r.Why, Resources: []*resourceStatus{}})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refused = listed
}

// index is the position of the cluster named name, or -1.
func (h *Status) index(name string) int {
	for i, cs := range h.clusters {
		if cs.Name == name {
			return i
		}
	}
	return -1
}

// cluster is the status of the cluster named name; one of no cluster
// listed (removed while its last pass ended) is written to nothing.
func (h *Status) cluster(name string) *clusterStatus {
	if i := h.index(name); i >= 0 {
		return h.clusters[i]
	}
	return &clusterStatus{}
}

// Pass is what the status keeps of one pass over one resource.
type Pass struct {
	// Parents are the parents of the pass, Foreign those LISTed that are
	// another replica's.
	Parents, Foreign int
	// Drifted counts the children drifted, missing or orphaned.
	Drifted int
	// Written counts the writes made: creates, updates, deletes, releases
	// and statuses.
	Written int
	// Failed, Stalled and Deferred count the writes that failed, the
	// parents stalled and the writes left for a later pass.
	Failed, Stalled, Deferred int
	// Transient counts the writes that failed for a passing reason.
	Transient int
	// Sharded: the API server filtered the pass's LISTs by shardSelector.
	Sharded bool
}

// Record keeps how the last pass over the i-th resource of cluster c went:
// an error, or writes that failed for a passing reason (the API server
// unreachable or overloaded), count as failed; a parent stalled for good
// does not.
func (h *Status) Record(c string, i int, rep Pass, err error) {
	if err == nil && rep.Transient > 0 {
		err = fmt.Errorf("%d writes failed for a passing reason (API server unreachable or overloaded?)", rep.Transient)
	}
	now := time.Now().UTC().Truncate(time.Second)
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.cluster(c)
	if i >= len(cs.Resources) {
		return
	}
	rs := cs.Resources[i]
	rs.done, rs.failed, rs.LastPass, rs.Error = true, err != nil, &now, ""
	if err != nil {
		rs.Error = err.Error()
	}
	rs.Parents, rs.Drifted, rs.Failed, rs.Stalled, rs.Deferred = rep.Parents, rep.Drifted, rep.Failed, rep.Stalled, rep.Deferred
	rs.Written, rs.Foreign = rep.Written, rep.Foreign
	if sh := h.shards[c]; sh != nil && rep.Parents+rep.Foreign > 0 {
		sh.ServerSelector = "local"
		if rep.Sharded {
			sh.ServerSelector = "server"
		}
	}
	cs.Error, cs.Up = "", true
	for _, r := range cs.Resources {
		cs.Up = cs.Up && !r.failed
	}
	if err == nil {
		cs.LastSuccessfulPass = &now
	}
}

// Down records that the i-th resource of cluster c has no pass, and why.
func (h *Status) Down(c string, i int, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.cluster(c)
	if i >= len(cs.Resources) {
		return
	}
	cs.Resources[i].Down, cs.Resources[i].failed, cs.Up = why, true, false
}

// Unreachable records why cluster c could not be made ready for a pass.
func (h *Status) Unreachable(c string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.cluster(c)
	cs.Up, cs.Error = false, err.Error()
}

// Disconnected records that cluster c has no clients now, and why.
func (h *Status) Disconnected(c, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.cluster(c)
	cs.Up, cs.Server, cs.Error = false, "", why
}

// Reached records the server of cluster c, once it answered.
func (h *Status) Reached(c, server string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.cluster(c)
	cs.Server, cs.Error = server, ""
	for _, rs := range cs.Resources {
		rs.Down = "" // made ready again: down anew, or not
	}
}

// SetRing records this replica's place in the ring.
func (h *Status) SetRing(identity, lease string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring = &ringStatus{Identity: identity, Lease: lease, Members: []string{}}
}

// SetMembers records the ring's live replicas.
func (h *Status) SetMembers(members []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring.Members = members
}

// SetShare records this replica's share of the cluster named cluster:
// slots of the layout's of, the namespace hash ranges they are.
func (h *Status) SetShare(cluster string, slots, of int, ranges string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shards == nil {
		h.shards = map[string]*shardStatus{}
	}
	sh := h.shards[cluster]
	if sh == nil {
		sh = &shardStatus{}
		h.shards[cluster] = sh
	}
	sh.Slots, sh.Of, sh.Ranges = slots, of, ranges
}

// SetLeading records whether the process leads: runs passes, as the
// leader or as a replica of a ring.
func (h *Status) SetLeading(leading bool) {
	h.mu.Lock()
	h.leading = leading
	h.mu.Unlock()
}

// notReady lists why the process is not ready; empty when it is.
func (h *Status) notReady() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.leading {
		return nil
	}
	var why []string
	for _, cs := range h.clusters {
		if !cs.Home {
			continue
		}
		if sh := h.shards[cs.Name]; h.ring != nil && (sh == nil || sh.Slots == 0) {
			continue // a replica of a ring with no work in the cluster: nothing to be ready for
		}
		for _, rs := range cs.Resources {
			name := h.cfg.InCluster(cs.Name, rs.Resource)
			switch {
			case rs.Mode == string(config.ModeOff):
			case rs.Down != "":
				why = append(why, name+": down: "+rs.Down)
			case !rs.done:
				why = append(why, name+": no pass finished yet")
			case rs.failed:
				why = append(why, fmt.Sprintf("%s: last pass failed: %s", name, rs.Error))
			}
		}
	}
	return why
}

// status is the body of /statusz.
func (h *Status) status() ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cs := range h.clusters {
		cs.Shard = h.shards[cs.Name]
	}
	return json.MarshalIndent(struct {
		Leading  bool             `json:"leading"`
		Ring     *ringStatus      `json:"ring,omitempty"`
		Clusters []*clusterStatus `json:"clusters"`
	}{h.leading, h.ring, append(slices.Clip(h.clusters), h.refused...)}, "", "  ")
}
