package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/resyncd/resyncd/desired"
	"github.com/resyncd/resyncd/internal/testenv"
)

// diffCase is one RGD (or a few that use each other) with its instances,
// reconciled once by kro and once by resyncd.
type diffCase struct {
	name      string // the namespace of its instances is diff-<name>
	source    string // where its files are, for the report
	rgds      []*unstructured.Unstructured
	before    []*unstructured.Unstructured // made by hand first: what its external references read
	instances []*unstructured.Unstructured
	skip      string // why it is not run
	only      string // why only its RGDs' status is compared: no instance is made
}

func (c *diffCase) namespace() string { return "diff-" + c.name }

// keys are what two cases of one round must not share: RGD names, the
// kinds they declare, and the names of instances, which the names of
// children (in a namespace an instance's spec gives, say default) are
// made of.
func (c *diffCase) keys() []string {
	var out []string
	for _, r := range c.rgds {
		out = append(out, "rgd/"+r.GetName(), "kind/"+declaredGVK(r).GroupKind().String())
	}
	for _, in := range c.instances {
		out = append(out, "name/"+in.GetName())
		if n, ok, _ := unstructured.NestedString(in.Object, "spec", "name"); ok {
			out = append(out, "name/"+n)
		}
	}
	return out
}

// declaredGVK is the kind of the instances of rgd: its schema's group
// (kro.run when empty), apiVersion and kind.
func declaredGVK(rgd *unstructured.Unstructured) schema.GroupVersionKind {
	group, _, _ := unstructured.NestedString(rgd.Object, "spec", "schema", "group")
	if group == "" {
		group = "kro.run"
	}
	version, _, _ := unstructured.NestedString(rgd.Object, "spec", "schema", "apiVersion")
	kind, _, _ := unstructured.NestedString(rgd.Object, "spec", "schema", "kind")
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// templateKinds are the kinds of rgd's templates and external
// references (those an expression names are left out).
func templateKinds(rgd *unstructured.Unstructured) []schema.GroupVersionKind {
	resources, _, _ := unstructured.NestedSlice(rgd.Object, "spec", "resources")
	var out []schema.GroupVersionKind
	for _, r := range resources {
		m, _ := r.(map[string]any)
		for _, field := range []string{"template", "externalRef"} {
			obj, ok := m[field].(map[string]any)
			if !ok {
				continue
			}
			u := unstructured.Unstructured{Object: obj}
			if strings.Contains(u.GetAPIVersion(), "${") || strings.Contains(u.GetKind(), "${") {
				continue
			}
			out = append(out, u.GroupVersionKind())
		}
	}
	return out
}

// readDocs decodes the YAML documents of path.
func readDocs(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	out, err := readAll(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// differentialCases are the RGDs of testdata/kro, each with its instance
// in testdata/kro/instances (and what its external references read), and
// those of kro's examples/ directory, a directory a case: its RGDs and
// the instances of their kinds.
func differentialCases(t *testing.T, root, kroDir string) []*diffCase {
	t.Helper()
	var cases []*diffCase
	files, err := filepath.Glob(filepath.Join(root, "testdata", "kro", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".yaml")
		c := &diffCase{name: base, source: "testdata/kro/" + base + ".yaml", rgds: readDocs(t, f)}
		c.instances = readDocs(t, filepath.Join(root, "testdata", "kro", "instances", base+".yaml"))
		if ext := filepath.Join(root, "testdata", "kro", "instances", base+".external.yaml"); fileExists(ext) {
			c.before = readDocs(t, ext)
		}
		for _, u := range c.rgds {
			if u.GroupVersionKind() != rgdGVR.GroupVersion().WithKind("ResourceGraphDefinition") {
				c.skip = fmt.Sprintf("a %s of %s, which resyncd reads from graph files; kro serves no such kind", u.GetKind(), u.GetAPIVersion())
			}
		}
		cases = append(cases, c)
	}

	byDir := map[string]*diffCase{}
	err = filepath.WalkDir(filepath.Join(kroDir, "examples"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		docs, err := readAll(path)
		if err != nil {
			return nil // a Helm template or values file, not a manifest
		}
		rel, _ := filepath.Rel(kroDir, filepath.Dir(path))
		c := byDir[rel]
		if c == nil {
			c = &diffCase{name: strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(rel, "examples/"), "/", "-")), source: "kro " + rel + "/"}
			byDir[rel] = c
		}
		for _, u := range docs {
			if u.GetKind() == "ResourceGraphDefinition" {
				c.rgds = append(c.rgds, u)
			} else {
				c.instances = append(c.instances, u)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range slices.Sorted(maps.Keys(byDir)) {
		c := byDir[rel]
		if len(c.rgds) == 0 {
			// Objects of kro's group but no RGD: an API of kro that the
			// pinned version does not serve. Anything else (Helm charts,
			// values) is not a case.
			var found []string
			for _, u := range c.instances {
				if u.GroupVersionKind().Group == "kro.run" && !slices.Contains(found, u.GetKind()) {
					found = append(found, u.GetKind())
				}
			}
			if len(found) > 0 {
				c.skip = "no ResourceGraphDefinition; kro.run kinds no CRD of the pinned kro defines: " + strings.Join(found, ", ")
				cases = append(cases, c)
			}
			continue
		}
		// Instances are the objects of the kinds the RGDs declare; anything
		// else beside them is left out.
		declared := map[schema.GroupKind]bool{}
		for _, r := range c.rgds {
			declared[declaredGVK(r).GroupKind()] = true
		}
		c.instances = slices.DeleteFunc(c.instances, func(u *unstructured.Unstructured) bool {
			return !declared[u.GroupVersionKind().GroupKind()] || strings.Contains(u.GetName(), "${") || strings.Contains(u.GetName(), "{{")
		})
		if len(c.instances) == 0 {
			c.only = "no instance beside its RGDs"
		}
		if len(c.name) > 58 {
			c.name = c.name[:58]
		}
		cases = append(cases, c)
	}
	return cases
}

func readAll(path string) (out []*unstructured.Unstructured, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 && u.GetKind() != "" {
			out = append(out, u)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// rounds splits the cases that run into groups that share no key, in
// order.
func rounds(cases []*diffCase) [][]*diffCase {
	var out [][]*diffCase
	var taken []map[string]bool
next:
	for _, c := range cases {
		if c.skip != "" {
			continue
		}
		for i := range out {
			if !slices.ContainsFunc(c.keys(), func(k string) bool { return taken[i][k] }) {
				out[i] = append(out[i], c)
				for _, k := range c.keys() {
					taken[i][k] = true
				}
				continue next
			}
		}
		out = append(out, []*diffCase{c})
		m := map[string]bool{}
		for _, k := range c.keys() {
			m[k] = true
		}
		taken = append(taken, m)
	}
	return out
}

// objectKey names an object: Kind.group namespace/name.
func objectKey(u *unstructured.Unstructured) string {
	gk := u.GroupVersionKind().GroupKind()
	if u.GetNamespace() == "" {
		return gk.String() + " " + u.GetName()
	}
	return gk.String() + " " + u.GetNamespace() + "/" + u.GetName()
}

// snapshot is what one controller left: the RGDs' status, and every
// object of the round's kinds that carries kro.run/owned (children, and
// instances made by another instance) or is an instance, normalised.
type snapshot struct {
	rgds    map[string]any // RGD name → normalised status
	objects map[string]map[string]any
	owner   map[string]string // object key → the case it is of
}

// normalise drops what differs between any two writers of the same
// object and what the API server assigns: identity, versions, times, field
// managers; ownership marks (kro's ApplySet and version label, resyncd's
// labels and ownerReference: "Differences from kro" in docs/graphs.md);
// the UIDs in kro's labels; allocated cluster IPs; a child's status,
// which its kind's controller writes. Of an instance's status, the
// conditions keep type, status and reason.
func normalise(u *unstructured.Unstructured, instance bool) map[string]any {
	obj := u.DeepCopy().Object
	md, _ := obj["metadata"].(map[string]any)
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences", "selfLink"} {
		delete(md, f)
	}
	if labels, ok := md["labels"].(map[string]any); ok {
		for k := range labels {
			switch {
			case k == "app.kubernetes.io/managed-by" || k == "kro.run/kro-version" || strings.HasPrefix(k, "resyncd.io/") || strings.HasPrefix(k, "applyset.kubernetes.io/"):
				delete(labels, k)
			case k == desired.KroInstanceID || k == desired.KroRGDID:
				labels[k] = "<uid>"
			}
		}
		if len(labels) == 0 {
			delete(md, "labels")
		}
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		for k := range ann {
			if strings.HasPrefix(k, "kro.run/") || strings.HasPrefix(k, "internal.kro.run/") || strings.HasPrefix(k, "applyset.kubernetes.io/") ||
				strings.HasPrefix(k, "resyncd.io/") || k == "deployment.kubernetes.io/revision" {
				delete(ann, k)
			}
		}
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	if spec, ok := obj["spec"].(map[string]any); ok && u.GetKind() == "Service" && u.GroupVersionKind().Group == "" {
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	}
	if !instance {
		delete(obj, "status")
		return masked(obj).(map[string]any)
	}
	if status, ok := obj["status"].(map[string]any); ok {
		normaliseConditions(status)
		delete(status, "observedGeneration")
	}
	return masked(obj).(map[string]any)
}

var (
	uidPattern  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
)

// masked replaces, in every string of v, a UID by <uid> and a time by
// <time>: the objects of two runs have other UIDs (a Job's selector holds
// its own) and other times (a status field that copies a child's
// conditions).
func masked(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = masked(e)
		}
	case []any:
		for i, e := range v {
			v[i] = masked(e)
		}
	case string:
		if timePattern.MatchString(v) {
			return "<time>"
		}
		return uidPattern.ReplaceAllString(v, "<uid>")
	}
	return v
}

// normaliseConditions replaces status.conditions by type → "status
// reason".
func normaliseConditions(status map[string]any) {
	conds, ok := status["conditions"].([]any)
	if !ok {
		return
	}
	m := map[string]any{}
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		typ, _ := cm["type"].(string)
		st, _ := cm["status"].(string)
		reason, _ := cm["reason"].(string)
		m[typ] = st + " " + reason
	}
	status["conditions"] = m
}

// normaliseRGDStatus keeps of an RGD's status what kro users read: state,
// topologicalOrder, resources, the conditions (type, status, reason) but
// GraphRevisionsResolved; lastIssuedRevision stands for kro's
// GraphRevision objects, which resyncd has none of.
func normaliseRGDStatus(u *unstructured.Unstructured) any {
	status, _ := u.DeepCopy().Object["status"].(map[string]any)
	if status == nil {
		return nil
	}
	delete(status, "lastIssuedRevision")
	// kro lists a resource's dependencies in the order of a map's
	// iteration, from run to run another.
	if resources, ok := status["resources"].([]any); ok {
		for _, r := range resources {
			if deps, ok := r.(map[string]any)["dependencies"].([]any); ok {
				slices.SortFunc(deps, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			}
		}
	}
	normaliseConditions(status)
	if conds, ok := status["conditions"].(map[string]any); ok {
		delete(conds, "GraphRevisionsResolved")
	}
	return status
}

// differ lists the paths at which a and b differ.
func differ(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := slices.Sorted(maps.Keys(am))
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			differ(path+"."+k, am[k], bm[k], out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			differ(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, fmt.Sprintf("%s: kro %s, resyncd %s", strings.TrimPrefix(path, "."), short(a), short(b)))
	}
}

func short(v any) string {
	if v == nil {
		return "(none)"
	}
	s := fmt.Sprintf("%v", v)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return "`" + s + "`"
}

// differential runs the cases of one round under one controller and
// takes the snapshot; start starts the controller and returns its stop.
type differential struct {
	t          *testing.T
	dyn        dynamic.Interface
	cs         kubernetes.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper
	kubeconfig string
	dir        string
}

func (d *differential) resource(gvk schema.GroupVersionKind) (dynamic.NamespaceableResourceInterface, bool, error) {
	m, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		d.mapper.Reset()
		if m, err = d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, false, err
		}
	}
	return d.dyn.Resource(m.Resource), m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// create makes u (in ns when it is namespaced and names none of the
// case's own), or applies it over what is there.
func (d *differential) create(u *unstructured.Unstructured, ns string) error {
	u = u.DeepCopy()
	ri, namespaced, err := d.resource(u.GroupVersionKind())
	if err != nil {
		return err
	}
	var r dynamic.ResourceInterface = ri
	if namespaced {
		u.SetNamespace(ns)
		r = ri.Namespace(ns)
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	_, err = r.Patch(context.Background(), u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "differential-test", Force: &force})
	return err
}

// phase applies the round's RGDs, waits until each is Active (or
// stays as it is), makes the cases' instances, waits until the
// snapshot settles, and returns it.
func (d *differential) phase(who string, round []*diffCase) snapshot {
	t := d.t
	t.Helper()
	ctx := context.Background()
	for _, c := range round {
		for _, r := range c.rgds {
			applyRGD(t, d.dyn, objectYAML(t, r))
		}
	}
	// Each RGD is Active, or has said the same of itself for 5 s: the
	// snapshot's settling compares what it says.
	said, since := map[string]string{}, map[string]time.Time{}
	waitFor(2*time.Minute, func() bool {
		settled := true
		for _, c := range round {
			for _, r := range c.rgds {
				state, ready, _ := rgdState(t, d.dyn, r.GetName(), "Ready")
				now := fmt.Sprint(state, ready["reason"], ready["message"])
				if said[r.GetName()] != now {
					said[r.GetName()], since[r.GetName()] = now, time.Now()
				}
				if state != "Active" && (state == "" || time.Since(since[r.GetName()]) < 5*time.Second) {
					settled = false
				}
			}
		}
		return settled
	})
	for _, c := range round {
		for _, r := range c.rgds {
			if state, ready, _ := rgdState(t, d.dyn, r.GetName(), "Ready"); state != "Active" {
				msg, _ := ready["message"].(string)
				msg, _, _ = strings.Cut(msg, "\n")
				t.Logf("%s under %s: RGD %s is %s: %.200s", c.name, who, r.GetName(), state, msg)
			}
		}
	}
	for _, c := range round {
		if _, err := d.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace()}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		for _, u := range c.before {
			if err := d.create(u, c.namespace()); err != nil {
				t.Fatalf("%s: %s: %v", c.name, objectKey(u), err)
			}
		}
	}
	d.mapper.Reset()
	created := map[string]bool{}
	for _, c := range round {
		for _, u := range c.instances {
			in := u.DeepCopy()
			in.SetNamespace(c.namespace())
			// The kind of an Active RGD may take a moment to be
			// discovered.
			var err error
			waitFor(10*time.Second, func() bool {
				err = d.create(u, c.namespace())
				return !meta.IsNoMatchError(err)
			})
			if err != nil {
				t.Logf("%s under %s: instance %s not made: %v", c.name, who, objectKey(in), err)
				continue
			}
			created[objectKey(in)] = true
		}
	}
	// Settled: every instance has a state, and nothing changed over
	// three looks two seconds apart.
	var last snapshot
	same := 0
	deadline := time.Now().Add(150 * time.Second)
	for same < 3 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
		s := d.snapshot(round)
		if reflect.DeepEqual(s, last) && s.stated(created) {
			same++
		} else {
			same = 0
		}
		last = s
	}
	if same < 3 {
		t.Logf("%s: the instances did not settle in 150 s; compared as they were", who)
	}
	return last
}

// stated says whether every instance made has a status.state.
func (s snapshot) stated(made map[string]bool) bool {
	for key := range made {
		if state, _, _ := unstructured.NestedString(s.objects[key], "status", "state"); state == "" {
			return false
		}
	}
	return true
}

// kinds are the kinds whose objects a snapshot of round holds.
func kinds(round []*diffCase) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, c := range round {
		for _, r := range c.rgds {
			for _, gvk := range append(templateKinds(r), declaredGVK(r)) {
				if !seen[gvk] {
					seen[gvk] = true
					out = append(out, gvk)
				}
			}
		}
	}
	return out
}

func (d *differential) snapshot(round []*diffCase) snapshot {
	s := snapshot{rgds: map[string]any{}, objects: map[string]map[string]any{}, owner: map[string]string{}}
	instanceKinds := map[schema.GroupKind]bool{}
	for _, c := range round {
		for _, r := range c.rgds {
			instanceKinds[declaredGVK(r).GroupKind()] = true
			if u, err := d.dyn.Resource(rgdGVR).Get(context.Background(), r.GetName(), metav1.GetOptions{}); err == nil {
				s.rgds[r.GetName()] = normaliseRGDStatus(u)
			}
		}
	}
	var all []*unstructured.Unstructured
	for _, gvk := range kinds(round) {
		ri, _, err := d.resource(gvk)
		if err != nil {
			continue
		}
		list, err := ri.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range list.Items {
			u := &list.Items[i]
			// kro.run/owned marks the CRDs kro makes for RGDs too: a
			// child has an instance's labels.
			l := u.GetLabels()
			if l[desired.KroOwned] == "true" && l[desired.KroInstanceID] != "" || instanceKinds[u.GroupVersionKind().GroupKind()] {
				all = append(all, u)
			}
		}
	}
	// An object is of the case whose namespace its instance, or its
	// instance's instance, is in.
	byKey := map[string]*unstructured.Unstructured{}
	for _, u := range all {
		byKey[objectKey(u)] = u
	}
	caseOf := func(u *unstructured.Unstructured) string {
		for range 5 {
			for _, c := range round {
				if instanceKinds[u.GroupVersionKind().GroupKind()] && u.GetNamespace() == c.namespace() {
					return c.name
				}
			}
			l := u.GetLabels()
			gk := schema.GroupKind{Group: l[desired.KroInstanceGroup], Kind: l[desired.KroInstanceKind]}
			key := gk.String() + " " + l[desired.KroInstanceNamespace] + "/" + l[desired.KroInstanceName]
			next := byKey[key]
			if next == nil {
				return ""
			}
			u = next
		}
		return ""
	}
	for _, u := range all {
		key := objectKey(u)
		s.objects[key] = normalise(u, instanceKinds[u.GroupVersionKind().GroupKind()])
		s.owner[key] = caseOf(u)
	}
	return s
}

// teardown deletes the round's instances and waits until they and the
// objects kro.run/owned marks are gone, deletes the RGDs, stops the
// controller, and deletes the CRDs the RGDs made.
func (d *differential) teardown(round []*diffCase, stop func()) {
	t := d.t
	ctx := context.Background()
	for _, c := range round {
		for _, in := range c.instances {
			ri, namespaced, err := d.resource(in.GroupVersionKind())
			if err != nil {
				continue
			}
			var r dynamic.ResourceInterface = ri
			if namespaced {
				r = ri.Namespace(c.namespace())
			}
			if err := r.Delete(ctx, in.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", objectKey(in), err)
			}
		}
	}
	if !waitFor(120*time.Second, func() bool { return len(d.snapshot(round).objects) == 0 }) {
		t.Errorf("the instances' objects are still there two minutes after the instances were deleted: %v", slices.Sorted(maps.Keys(d.snapshot(round).objects)))
	}
	for _, c := range round {
		for _, r := range c.rgds {
			_ = d.dyn.Resource(rgdGVR).Delete(ctx, r.GetName(), metav1.DeleteOptions{})
		}
	}
	waitFor(60*time.Second, func() bool {
		for _, c := range round {
			for _, r := range c.rgds {
				if _, err := d.dyn.Resource(rgdGVR).Get(ctx, r.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false
				}
			}
		}
		return true
	})
	stop()
	crds := d.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	var names []string
	for _, c := range round {
		for _, r := range c.rgds {
			gvk := declaredGVK(r)
			if m, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
				names = append(names, m.Resource.Resource+"."+gvk.Group)
			}
		}
	}
	for _, n := range names {
		_ = crds.Delete(ctx, n, metav1.DeleteOptions{})
	}
	if !waitFor(60*time.Second, func() bool {
		for _, n := range names {
			if _, err := crds.Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	}) {
		t.Errorf("CRDs %v still there a minute after their deletion", names)
	}
	d.mapper.Reset()
}

// waitFor polls cond each half second until it holds or timeout passes,
// and says whether it held.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func objectYAML(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(data) // JSON is YAML
}

// TestDifferentialKro: every RGD of testdata/kro and of kro's examples/
// whose children are kinds the control plane serves is applied with its
// instances and reconciled by kro's controller (v0.9.4, as make kro
// builds it), then, on the same API server after kro's objects are gone,
// by resyncd: the RGD's status, the children (kind, namespace, name and
// every field, less what docs/graphs.md's "Differences from kro" lists)
// and the instances (spec and status) must be the same. It runs with
// RESYNCD_DIFFERENTIAL_REPORT set, the file the report per case goes to.
func TestDifferentialKro(t *testing.T) {
	reportPath := os.Getenv("RESYNCD_DIFFERENTIAL_REPORT")
	if reportPath == "" {
		t.Skip("about 4 minutes on 2 cores: make conformance runs it (RESYNCD_DIFFERENTIAL_REPORT=FILE)")
	}
	root := repoRoot(t)
	kro := filepath.Join(root, "bin", "kro")
	if _, err := os.Stat(kro); err != nil {
		t.Fatalf("kro's controller is not built (%v): make kro builds it", err)
	}
	out, err := exec.Command("go", "-C", filepath.Join(root, "tools", "kro"), "list", "-m", "-f", "{{.Dir}} {{.Version}}", "github.com/kubernetes-sigs/kro").Output()
	if err != nil {
		t.Fatalf("kro's module: %v", err)
	}
	kroDir, kroVersion, _ := strings.Cut(strings.TrimSpace(string(out)), " ")

	// A cluster of its own: Deployments roll out (readyWhen, status fields
	// that read a child's status), and the garbage collector and namespace
	// controller clean up after resyncd.
	logs, err := os.Create(filepath.Join(t.TempDir(), "control-plane.log"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := testenv.Start(testenv.Options{Cluster: true, Nodes: 2, Output: logs,
		CRDDirs: []string{filepath.Join(root, "deploy", "crds"), filepath.Join(root, "bin", "kro-crds")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	dc := discovery.NewDiscoveryClientForConfigOrDie(e.Config)
	d := &differential{t: t, dyn: dynamic.NewForConfigOrDie(e.Config), cs: kubernetes.NewForConfigOrDie(e.Config),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), dir: t.TempDir()}
	d.kubeconfig = filepath.Join(d.dir, "kubeconfig")
	if err := os.WriteFile(d.kubeconfig, e.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}

	cases := differentialCases(t, root, kroDir)
	if only := os.Getenv("RESYNCD_DIFFERENTIAL_CASES"); only != "" {
		re := regexp.MustCompile(only)
		cases = slices.DeleteFunc(cases, func(c *diffCase) bool { return !re.MatchString(c.name) })
	}
	// A case whose RGDs have a child of a kind neither the control plane
	// serves nor one of its RGDs declares is left out.
	for _, c := range cases {
		if c.skip != "" {
			continue
		}
		// An RGD kro's CRD refuses is neither's to serve.
		for _, r := range c.rgds {
			if _, err := d.dyn.Resource(rgdGVR).Create(context.Background(), r, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				c.skip = "the API server refuses the RGD by kro's CRD: " + err.Error()
			}
		}
		if c.skip != "" {
			continue
		}
		declared := map[schema.GroupKind]bool{}
		for _, r := range c.rgds {
			declared[declaredGVK(r).GroupKind()] = true
		}
		var missing []string
		for _, r := range c.rgds {
			for _, gvk := range templateKinds(r) {
				if _, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil && !declared[gvk.GroupKind()] && !slices.Contains(missing, gvk.GroupKind().String()) {
					missing = append(missing, gvk.GroupKind().String())
				}
			}
		}
		if len(missing) > 0 {
			// Nothing to reconcile, but kro and resyncd each say why
			// they do not serve the RGD.
			c.only = "children of kinds neither the control plane serves nor an RGD beside it declares: " + strings.Join(missing, ", ")
			c.instances, c.before = nil, nil
		}
	}

	results := map[string][]string{} // case → its differences
	reasons := map[string][]string{} // case → why it differs as documented
	for i, round := range rounds(cases) {
		var names []string
		for _, c := range round {
			names = append(names, c.name)
		}
		t.Logf("round %d: %s", i+1, strings.Join(names, " "))
		stopKro := startKro(t, kro, d.kubeconfig, filepath.Join(d.dir, "kro.log"), kroFlags...)
		underKro := d.phase("kro", round)
		d.teardown(round, stopKro)
		stopResyncd := d.startResyncd()
		underResyncd := d.phase("resyncd", round)
		d.teardown(round, stopResyncd)
		for _, c := range round {
			bothError := erred(c, underKro) && erred(c, underResyncd)
			for _, df := range compare(c, underKro, underResyncd) {
				if why := explained(c.name, df, bothError); why != "" {
					if !slices.Contains(reasons[c.name], why) {
						reasons[c.name] = append(reasons[c.name], why)
					}
					continue
				}
				results[c.name] = append(results[c.name], df)
			}
		}
	}

	var report strings.Builder
	fmt.Fprintf(&report, "| case | from | result |\n|---|---|---|\n")
	same, statusOnly, different, skipped := 0, 0, 0, 0
	for _, c := range cases {
		var result string
		switch {
		case c.skip != "":
			skipped++
			result = "skipped: " + c.skip
		case len(results[c.name]) == 0:
			same++
			result = "same"
			if c.only != "" {
				statusOnly++
				result = "the same RGD status (" + c.only + ")"
			}
			if len(reasons[c.name]) > 0 {
				result += ", but for what is documented: " + strings.Join(reasons[c.name], "; ")
			}
		default:
			different++
			result = "different: " + strings.Join(results[c.name], "; ")
			t.Errorf("%s (%s): kro and resyncd differ:\n  %s", c.name, c.source, strings.Join(results[c.name], "\n  "))
		}
		fmt.Fprintf(&report, "| %s | %s | %s |\n", c.name, c.source, strings.ReplaceAll(result, "|", "\\|"))
	}
	summary := fmt.Sprintf("%d cases: %d the same under kro %s (%s) and resyncd (%d of them RGDs alone, with no instance to make), %d different, %d skipped.",
		len(cases), same, kroVersion, strings.Join(kroFlags, " "), statusOnly, different, skipped)
	t.Log(summary)
	if path := reportPath; path != "" {
		head := "# Differential: the same RGDs under kro and under resyncd\n\n" +
			"`make conformance` runs `TestDifferentialKro` (daemon/differential_test.go): every RGD of testdata/kro and of " +
			"kro's examples/ (at the kro version tools/kro pins) whose children are kinds the local control plane serves is " +
			"applied with its instances on a local cluster (API server, controller-manager, scheduler, fake nodes) and " +
			"reconciled by kro's controller; once kro's objects are gone and kro is stopped, the same by resyncd. The RGD's status " +
			"(state, conditions, topologicalOrder, resources), the children (kind, namespace, name, every field) and the " +
			"instances (spec and status) are compared, less what docs/graphs.md lists under \"Differences from kro\" " +
			"(ownership labels and references, UIDs, times, messages). This file is written by that run; do not edit it by hand.\n\n" +
			"Run of " + time.Now().UTC().Format("2006-01-02") + ": **" + summary + "**\n\n"
		if err := os.WriteFile(path, []byte(head+report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// known are differences explained in docs/graphs.md ("Differences from
// kro"), or that any two runs have: a case whose differences all match is
// reported the same but for them, with the reason. case matches the
// case's name, diff the difference.
var known = []struct {
	cas, diff *regexp.Regexp
	why       string
}{
	{regexp.MustCompile(``), regexp.MustCompile(`status\.conditions\.(Ready|ResourcesReady): kro .False NotReady., resyncd .False \w+.$`),
		"a permanent error's reason in Ready and ResourcesReady where kro says NotReady"},
	{regexp.MustCompile(`^seeded-credentials$`), regexp.MustCompile(`^Secret \S+: data\.password: `),
		"random.seededString seeded by the instance's UID, another in each run"},
	{regexp.MustCompile(`^kubernetes-cel-functions$`), regexp.MustCompile(`env\[3\]\.value: |status\.deploymentConditions\[\d\]\.message: kro .ReplicaSet`),
		"RANDOM_SEEDED_STRING seeded by the instance's UID, and the ReplicaSet named after the template's hash"},
	{regexp.MustCompile(`^network-guard$`), regexp.MustCompile(`: status\.clusterIP: `),
		"a status field copying the Service's cluster IP, which the API server allocates"},
	{regexp.MustCompile(`^team-roster$`), regexp.MustCompile(`^RGD \S+ status\.|: made by resyncd only$`),
		"a status field without an expression (a constant): kro v0.9.4 refuses the RGD, resyncd serves it"},
}

// explained returns the reason known gives for difference d of case c,
// or "". A child made by kro only, of an instance in ERROR under both, is
// one kro applied beside another refused for good: resyncd holds the
// rest of a parent's writes until the next pass.
func explained(c, d string, bothError bool) string {
	for _, k := range known {
		if k.cas.MatchString(c) && k.diff.MatchString(d) {
			return k.why
		}
	}
	if bothError && strings.HasSuffix(d, ": made by kro only") {
		return "a child written beside one the API server refused for good: kro writes it, resyncd holds the parent's other writes until the next pass"
	}
	return ""
}

// compare lists how the objects of c and the status of its RGDs differ
// between the two snapshots.
func compare(c *diffCase, a, b snapshot) []string {
	var out []string
	for _, r := range c.rgds {
		var diffs []string
		differ("", a.rgds[r.GetName()], b.rgds[r.GetName()], &diffs)
		for _, df := range diffs {
			out = append(out, "RGD "+r.GetName()+" status."+df)
		}
	}
	keys := map[string]bool{}
	for k, owner := range a.owner {
		if owner == c.name {
			keys[k] = true
		}
	}
	for k, owner := range b.owner {
		if owner == c.name {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		ka, kb := a.objects[k], b.objects[k]
		switch {
		case ka == nil:
			out = append(out, k+": made by resyncd only")
		case kb == nil:
			out = append(out, k+": made by kro only")
		default:
			var diffs []string
			differ("", ka, kb, &diffs)
			for _, df := range diffs {
				out = append(out, k+": "+df)
			}
		}
	}
	return out
}

// erred says whether an instance of c is in state ERROR in s.
func erred(c *diffCase, s snapshot) bool {
	for key, obj := range s.objects {
		if state, _, _ := unstructured.NestedString(obj, "status", "state"); state == "ERROR" && s.owner[key] == c.name {
			return true
		}
	}
	return false
}

// kroFlags are the flags kro's controller runs with: its defaults, and
// the alpha gate of omit(), which resyncd has always.
var kroFlags = []string{"--feature-gates=CELOmitFunction=true"}

// startResyncd runs resyncd serving the cluster's RGDs, with guards as
// wide as kro's: children anywhere, cluster-scoped ones too.
func (d *differential) startResyncd() func() {
	t := d.t
	cfgPath := filepath.Join(d.dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(`metrics: {address: "`+testenv.FreeAddr(t)+`"}
health: {address: "`+testenv.FreeAddr(t)+`"}
log: {level: error}
resourceGraphDefinitions:
  enabled: true
  interval: 1s
  childNamespaces: ["*"]
  clusterScopedChildren: true
  externalNamespaces: ["*"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return startRun(t, cfgPath, d.kubeconfig)
}
