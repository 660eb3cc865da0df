package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/resyncd/resyncd/actual"
	"github.com/resyncd/resyncd/config"
	"github.com/resyncd/resyncd/desired"
)

// memWriter is an objectWriter that holds objects in memory, by resource,
// namespace and name, for tests of whole passes without an API server. It
// keeps what the engine relies on: a uid given on create, a
// resourceVersion bumped only when the content changed (an apply that
// changes nothing keeps it, which the engine's no-op memory needs), the
// field manager's managedFields entry as the server writes it (the
// applied fields, without the identity ones), create-only applies refused
// with a Conflict when the name is taken, deletes refused with a Conflict
// when the UID precondition fails, and the status subresource. Errors are
// injected per call, and every call is recorded in order.
//
// It is not an API server: an apply merges maps and replaces lists and
// scalars, and removes nothing resyncd stopped applying; there is no
// validation, admission, RBAC or garbage collection, and no release
// (patch). What only the server decides is tested against it.
type memWriter struct {
	manager string
	// before, when set, is called with each call before it is served,
	// outside the lock: how a test acts in the middle of a pass (stops it,
	// re-creates an object).
	before func(memCall)
	// admit, when set, changes each object before it is stored, as the
	// server's defaults and canonical forms would.
	admit func(*unstructured.Unstructured)

	mu      sync.Mutex
	objects map[memKey]*unstructured.Unstructured
	rv      int64
	uids    int
	faults  map[string][]error // by memCall.target
	calls   []memCall

	converter, deduced managedfields.TypeConverter
}

// memKey is where memWriter holds an object.
type memKey struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

// memCall is one call of the engine's on memWriter.
type memCall struct {
	// verb is the applier's name for it (WriteError.Verb), with
	// "create-only apply" for an apply with applyOptions.createOnly.
	verb string
	// object is Kind/namespace/name.
	object string
	err    error
}

// target is what errors are injected for: the verb and the object.
func (c memCall) target() string { return c.verb + " " + c.object }

// String is the call as tests compare it, with the reason of its error.
func (c memCall) String() string {
	if c.err != nil {
		return c.target() + ": " + string(apierrors.ReasonForError(c.err))
	}
	return c.target()
}

// stripped are the fields the API server leaves out of managedFields.
var stripped = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

func newMemWriter(manager string) *memWriter {
	return &memWriter{manager: manager, objects: map[memKey]*unstructured.Unstructured{}, faults: map[string][]error{},
		converter: builtinConverter(), deduced: managedfields.NewDeducedTypeConverter()}
}

// fail makes the next calls of verb on object (Kind/namespace/name) fail
// with errs, one each, in order; the calls after them are served.
func (w *memWriter) fail(verb, object string, errs ...error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := verb + " " + object
	w.faults[k] = append(w.faults[k], errs...)
}

// call runs before, records a call, and returns the error injected for
// it, wrapped as the applier wraps the server's, or the context's error
// if ctx ended, as a client's request would. It returns with w.mu held,
// so that the call recorded last is this one until the caller is done.
func (w *memWriter) call(ctx context.Context, verb string, gvr schema.GroupVersionResource, kind, ns, name string) error {
	c := memCall{verb: verb, object: kind + "/" + ns + "/" + name}
	if ns == "" {
		c.object = kind + "/" + name
	}
	if w.before != nil {
		w.before(c)
	}
	w.mu.Lock()
	if errs := w.faults[c.target()]; len(errs) > 0 {
		c.err, w.faults[c.target()] = errs[0], errs[1:]
	}
	if c.err == nil {
		c.err = ctx.Err()
	}
	w.calls = append(w.calls, c)
	return (&applier{}).fail(strings.TrimPrefix(verb, "create-only "), gvr, kind, ns, name, c.err)
}

// settled records err, the store's refusal, as the error of the call
// being served (w.mu held since call), and returns it wrapped.
func (w *memWriter) settled(verb string, gvr schema.GroupVersionResource, kind, ns, name string, err error) error {
	w.calls[len(w.calls)-1].err = err
	return (&applier{}).fail(verb, gvr, kind, ns, name, err)
}

func (w *memWriter) apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, opts applyOptions) (*unstructured.Unstructured, error) {
	verb := "apply"
	switch {
	case opts.dryRun:
		verb = "dry-run apply"
	case opts.subresource != "":
		verb = opts.subresource + " apply"
	case opts.createOnly:
		verb = "create-only apply"
	}
	kind, ns, name := obj.GetKind(), obj.GetNamespace(), obj.GetName()
	err := w.call(ctx, verb, gvr, kind, ns, name)
	defer w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	verb = strings.TrimPrefix(verb, "create-only ")
	k := memKey{gvr, ns, name}
	old := w.objects[k]
	var next *unstructured.Unstructured
	switch {
	case opts.subresource != "" && old == nil:
		return nil, w.settled(verb, gvr, kind, ns, name, apierrors.NewNotFound(gvr.GroupResource(), name))
	case opts.subresource != "":
		next = old.DeepCopy()
		st, _ := next.Object["status"].(map[string]any)
		next.Object["status"] = merged(st, obj.Object["status"].(map[string]any))
	case old != nil && opts.createOnly:
		return nil, w.settled(verb, gvr, kind, ns, name, apierrors.NewConflict(gvr.GroupResource(), name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again")))
	case old != nil:
		next = &unstructured.Unstructured{Object: merged(old.DeepCopy().Object, obj.Object)}
	default:
		next = obj.DeepCopy()
		w.uids++
		next.SetUID(types.UID(fmt.Sprintf("mem-uid-%d", w.uids)))
		next.SetGeneration(1)
	}
	if err := w.manage(next, obj, opts.subresource); err != nil {
		return nil, w.settled(verb, gvr, kind, ns, name, apierrors.NewBadRequest(err.Error()))
	}
	if w.admit != nil {
		w.admit(next)
	}
	if old != nil && reflect.DeepEqual(old.Object, next.Object) {
		return old.DeepCopy(), nil // the server's no-op: the same resourceVersion
	}
	if old != nil && !reflect.DeepEqual(withoutMeta(old), withoutMeta(next)) {
		next.SetGeneration(old.GetGeneration() + 1)
	}
	w.rv++
	next.SetResourceVersion(fmt.Sprint(w.rv))
	if !opts.dryRun {
		w.objects[k] = next
	}
	return next.DeepCopy(), nil
}

// manage sets next's managedFields entry of the field manager and
// subresource to the fields of applied, as the server does.
func (w *memWriter) manage(next, applied *unstructured.Unstructured, subresource string) error {
	c, deduced := w.converter, !clientgoscheme.Scheme.Recognizes(applied.GroupVersionKind())
	if deduced {
		c = w.deduced
	}
	tv, err := c.ObjectToTyped(applied.DeepCopy(), typed.AllowDuplicates)
	if err != nil {
		return err
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		return err
	}
	if deduced {
		// A custom resource's maps are not members of themselves in the
		// server's entry; its lists are atomic here, where the CRD's schema
		// may key them (conditions by type).
		set = set.Leaves()
	}
	js, err := set.Difference(stripped).ToJSON()
	if err != nil {
		return err
	}
	entry := metav1.ManagedFieldsEntry{Manager: w.manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: applied.GetAPIVersion(),
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(js)), Subresource: subresource}
	mfs := slices.DeleteFunc(next.GetManagedFields(), func(mf metav1.ManagedFieldsEntry) bool {
		return mf.Manager == w.manager && mf.Subresource == subresource
	})
	next.SetManagedFields(append(mfs, entry))
	return nil
}

func (w *memWriter) delete(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, uid types.UID) error {
	err := w.call(ctx, "delete", gvr, kind, ns, name)
	defer w.mu.Unlock()
	if err != nil {
		return err
	}
	k := memKey{gvr, ns, name}
	switch old := w.objects[k]; {
	case old == nil:
		return w.settled("delete", gvr, kind, ns, name, apierrors.NewNotFound(gvr.GroupResource(), name))
	case old.GetUID() != uid:
		return w.settled("delete", gvr, kind, ns, name, apierrors.NewConflict(gvr.GroupResource(), name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", uid, old.GetUID())))
	}
	delete(w.objects, k)
	return nil
}

func (w *memWriter) get(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string) (*unstructured.Unstructured, error) {
	err := w.call(ctx, "get", gvr, kind, ns, name)
	defer w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	u := w.objects[memKey{gvr, ns, name}]
	if u == nil {
		return nil, w.settled("get", gvr, kind, ns, name, apierrors.NewNotFound(gvr.GroupResource(), name))
	}
	return u.DeepCopy(), nil
}

// patch is not served: a release's JSON patch is the API server's to
// apply, and the real-server tests cover it.
func (w *memWriter) patch(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, _ []jsonPatchOp) error {
	err := w.call(ctx, "release", gvr, kind, ns, name)
	defer w.mu.Unlock()
	if err != nil {
		return err
	}
	return w.settled("release", gvr, kind, ns, name, apierrors.NewMethodNotSupported(gvr.GroupResource(), "patch"))
}

// merged is old with the fields of applied set: maps merge, lists and
// scalars are replaced.
func merged(old, applied map[string]any) map[string]any {
	if old == nil {
		old = map[string]any{}
	}
	for k, v := range applied {
		if am, ok := v.(map[string]any); ok {
			if om, ok := old[k].(map[string]any); ok {
				old[k] = merged(om, am)
				continue
			}
		}
		old[k] = runtime.DeepCopyJSONValue(v)
	}
	return old
}

// withoutMeta is u's content but metadata and status: what bumps the
// generation when it changes.
func withoutMeta(u *unstructured.Unstructured) map[string]any {
	m := maps.Clone(u.Object)
	delete(m, "metadata")
	delete(m, "status")
	return m
}

// put stores u as another client would create it: with a uid, a
// resourceVersion and generation 1, and no managedFields of resyncd's.
func (w *memWriter) put(gvr schema.GroupVersionResource, u *unstructured.Unstructured) *unstructured.Unstructured {
	w.mu.Lock()
	defer w.mu.Unlock()
	u = u.DeepCopy()
	w.uids++
	w.rv++
	u.SetUID(types.UID(fmt.Sprintf("mem-uid-%d", w.uids)))
	u.SetResourceVersion(fmt.Sprint(w.rv))
	if u.GetGeneration() == 0 {
		u.SetGeneration(1)
	}
	w.objects[memKey{gvr, u.GetNamespace(), u.GetName()}] = u
	return u.DeepCopy()
}

// edit changes a stored object as another writer would, bumping its
// resourceVersion (and its generation, if more than metadata and status
// changed); it fails the test if there is no such object.
func (w *memWriter) edit(t testing.TB, gvr schema.GroupVersionResource, ns, name string, f func(*unstructured.Unstructured)) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.objects[memKey{gvr, ns, name}]
	if old == nil {
		t.Fatalf("edit: no %s %s/%s", gvr.Resource, ns, name)
	}
	u := old.DeepCopy()
	f(u)
	if !reflect.DeepEqual(withoutMeta(old), withoutMeta(u)) {
		u.SetGeneration(old.GetGeneration() + 1)
	}
	w.rv++
	u.SetResourceVersion(fmt.Sprint(w.rv))
	w.objects[memKey{gvr, ns, name}] = u
}

// remove deletes a stored object as another client would.
func (w *memWriter) remove(gvr schema.GroupVersionResource, ns, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objects, memKey{gvr, ns, name})
}

// object returns a copy of a stored object, nil if there is none.
func (w *memWriter) object(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	w.mu.Lock()
	defer w.mu.Unlock()
	if u := w.objects[memKey{gvr, ns, name}]; u != nil {
		return u.DeepCopy()
	}
	return nil
}

// names lists the stored objects of gvr as namespace/name, sorted.
func (w *memWriter) names(gvr schema.GroupVersionResource) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k := range w.objects {
		if k.gvr == gvr {
			out = append(out, k.namespace+"/"+k.name)
		}
	}
	slices.Sort(out)
	return out
}

// log returns the calls made since the last log, in order.
func (w *memWriter) log() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, len(w.calls))
	for i, c := range w.calls {
		out[i] = c.String()
	}
	w.calls = nil
	return out
}

// memReader is the pageReader of a memWriter's objects, all in one page,
// in the API server's order (by namespace, then name).
type memReader struct {
	w     *memWriter
	kinds map[schema.GroupVersionResource]string
}

func (r memReader) list(gvr schema.GroupVersionResource, namespaces []string, sel labels.Selector, fn func(*unstructured.Unstructured) error) error {
	r.w.mu.Lock()
	var page []*unstructured.Unstructured
	for k, u := range r.w.objects {
		if k.gvr == gvr && (len(namespaces) == 0 || slices.Contains(namespaces, k.namespace)) && sel.Matches(labels.Set(u.GetLabels())) {
			page = append(page, u.DeepCopy())
		}
	}
	r.w.mu.Unlock()
	slices.SortFunc(page, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	for _, u := range page {
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

// Parents and Children ignore the scope's shard selector, as an API
// server without sharded LISTs does.
func (r memReader) Parents(_ context.Context, gvr schema.GroupVersionResource, scope actual.Scope, fn func(*unstructured.Unstructured) error) (actual.Listed, error) {
	kind, err := r.Kind(gvr)
	if err != nil {
		return actual.Listed{}, err
	}
	return actual.Listed{Kind: kind}, r.list(gvr, scope.Namespaces, labels.Everything(), fn)
}

func (r memReader) Children(_ context.Context, gvr schema.GroupVersionResource, scope actual.Scope, selector string, fn func(*unstructured.Unstructured) error) (actual.Listed, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return actual.Listed{}, err
	}
	return actual.Listed{}, r.list(gvr, scope.Namespaces, sel, fn)
}

func (r memReader) Kind(gvr schema.GroupVersionResource) (string, error) {
	if k, ok := r.kinds[gvr]; ok {
		return k, nil
	}
	return "", apierrors.NewNotFound(gvr.GroupResource(), "")
}

// memPass is an engine whose passes read and write a memWriter's objects,
// with a clock the test moves.
type memPass struct {
	t      testing.TB
	engine *Engine
	w      *memWriter
	now    time.Time
}

// memEpoch is when a memPass's clock starts.
var memEpoch = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// newMemPass returns the engine of cfg on a memWriter with nothing stored.
func newMemPass(t testing.TB, cfg *config.Config) *memPass {
	t.Helper()
	return newMemPassOn(t, cfg, newMemWriter(cfg.FieldManager), nil)
}

// newMemPassOn returns the engine of cfg, limited to shard s when it is
// not nil, on w.
func newMemPassOn(t testing.TB, cfg *config.Config, w *memWriter, s Shard) *memPass {
	t.Helper()
	p := &memPass{t: t, w: w, now: memEpoch}
	r := memReader{w: p.w, kinds: map[schema.GroupVersionResource]string{httpServices: "HttpService"}}
	e, err := newEngine(SettingsFrom(cfg), r, p.w, Options{Renderers: desired.DefaultRegistry(), Shard: s,
		Log: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)), Now: func() time.Time { return p.now }})
	if err != nil {
		t.Fatal(err)
	}
	p.engine = e
	return p
}

// sync runs one pass and returns the first resource's report; the pass
// must not fail.
func (p *memPass) sync() ResourceReport {
	p.t.Helper()
	rep, err := p.engine.SyncOnce(p.t.Context())
	if err != nil {
		p.t.Fatalf("SyncOnce: %v", err)
	}
	return rep.Resources[0]
}

// parent stores an HttpService.
func (p *memPass) parent(ns, name string, spec map[string]any) {
	p.w.put(httpServices, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resyncd.io/v1alpha1", "kind": "HttpService",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}})
}

// samples stores the HttpServices of a file of testdata/samples.
func (p *memPass) samples(file string) {
	p.t.Helper()
	f, err := os.Open("../testdata/samples/" + file)
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	docs := yaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var js []byte
		if err == nil {
			js, err = sigsyaml.YAMLToJSON(doc)
		}
		u := &unstructured.Unstructured{}
		if err == nil && strings.TrimSpace(string(js)) != "null" {
			// As the API server decodes it: whole numbers as int64.
			err = u.UnmarshalJSON(js)
		}
		if err != nil {
			p.t.Fatalf("%s: %v", file, err)
		}
		if u.GetKind() == "HttpService" {
			p.w.put(httpServices, u)
		}
	}
}

// condition is "Status/Reason" of the condition of type typ of the
// stored parent ns/name.
func (p *memPass) condition(ns, name, typ string) string {
	p.t.Helper()
	u := p.w.object(httpServices, ns, name)
	if u == nil {
		p.t.Fatalf("no HttpService %s/%s", ns, name)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return fmt.Sprintf("%s/%s", m["status"], m["reason"])
		}
	}
	return ""
}

// booked is what a report says of a pass's writes, without the counts
// of children by state.
type booked struct {
	Created, Updated, Deleted, Statuses, NoOps, Superseded  int
	Deferred, Withheld, Blocked, Failed, Transient, Stalled int
}

func bookedIn(r ResourceReport) booked {
	return booked{Created: r.Created, Updated: r.Updated, Deleted: r.Deleted, Statuses: r.Statuses, NoOps: r.NoOps, Superseded: r.Superseded,
		Deferred: r.Deferred, Withheld: r.Withheld, Blocked: r.Blocked, Failed: r.Failed, Transient: r.Transient, Stalled: r.Stalled}
}

// parentsWritten lists, in order, the parents (named as their children
// are) that the calls wrote to, each once, skipping reads.
func parentsWritten(calls []string) []string {
	var out []string
	for _, c := range writesOf(calls) {
		call, _, _ := strings.Cut(c, ": ")
		obj := call[strings.LastIndex(call, "/")+1:]
		if !slices.Contains(out, obj) {
			out = append(out, obj)
		}
	}
	return out
}

// TestMemWriterMatchesServer: for the children and the status of an
// HttpService, memWriter's managedFields entry of resyncd's is the one
// the API server writes, so that what the engine reads of its own fields
// (owner.owned) comes out the same from either.
func TestMemWriterMatchesServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig("memfields"))
	h.namespace("memfields")
	spec := map[string]any{"image": "nginx", "port": int64(8080), "replicas": int64(2),
		"env":         []any{map[string]any{"name": "A", "value": "1"}},
		"resources":   map[string]any{"requests": map[string]any{"cpu": "100m"}},
		"autoscaling": map[string]any{"minReplicas": int64(2), "maxReplicas": int64(4)}}
	parent := h.createParent("memfields", "web", spec)
	w := newMemWriter("resyncd")
	w.put(httpServices, parent) // the uid differs; ownerReferences carry the server's
	rs := h.engine.resources[0]
	g, err := h.engine.render(rs, parent, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	gvrOf := map[string]schema.GroupVersionResource{"Deployment": deployments, "Service": services, "HorizontalPodAutoscaler": hpas}
	status := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "resyncd.io/v1alpha1", "kind": "HttpService",
		"metadata": map[string]any{"name": "web", "namespace": "memfields"},
		"status": map[string]any{"observedGeneration": int64(1), "url": "http://web.memfields.svc:80", "replicas": int64(0),
			"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "DeploymentMissing", "message": "not yet",
				"lastTransitionTime": "2026-12-01T10:00:00Z", "observedGeneration": int64(1)}}}}}
	writes := []struct {
		gvr  schema.GroupVersionResource
		obj  *unstructured.Unstructured
		opts applyOptions
	}{{httpServices, status, applyOptions{subresource: "status"}}}
	for _, d := range g.Children {
		writes = append(writes, struct {
			gvr  schema.GroupVersionResource
			obj  *unstructured.Unstructured
			opts applyOptions
		}{gvrOf[d.GetKind()], d, applyOptions{createOnly: true}})
	}
	for _, wr := range writes {
		real, err := h.engine.writer.apply(t.Context(), wr.gvr, wr.obj.DeepCopy(), wr.opts)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := w.apply(t.Context(), wr.gvr, wr.obj.DeepCopy(), wr.opts)
		if err != nil {
			t.Fatal(err)
		}
		id := objectID(wr.obj) + " " + wr.opts.subresource
		if wr.opts.subresource != "" {
			// The status fields the engine reads (ownedStatusFields): the
			// CRD's schema keys the conditions, memWriter's does not.
			got, want := ownedStatusFields(mem, "resyncd"), ownedStatusFields(real, "resyncd")
			if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" || len(want) != 4 {
				t.Errorf("%s: status fields owned (-server +memWriter):\n%s", id, diff)
			}
			continue
		}
		rs, ms := fieldsOf(t, real, wr.opts.subresource), fieldsOf(t, mem, wr.opts.subresource)
		if !rs.Equals(ms) {
			t.Errorf("%s: managedFields differ:\nserver:    %s\nmemWriter: %s", id, rs, ms)
		}
		rf, err := h.engine.owner.fingerprints(real)
		if err != nil {
			t.Fatal(err)
		}
		mf, err := h.engine.owner.fingerprints(mem)
		if err != nil {
			t.Fatal(err)
		}
		if !rf.owned || rf.fingerprint != mf.fingerprint {
			t.Errorf("%s: resyncd's fields read back differ between the server and memWriter", id)
		}
	}
}

// fieldsOf is the set of fields of u's managedFields entry of resyncd's
// apply to subresource.
func fieldsOf(t *testing.T, u *unstructured.Unstructured, subresource string) *fieldpath.Set {
	t.Helper()
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == "resyncd" && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == subresource {
			set := &fieldpath.Set{}
			if err := set.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
				t.Fatal(err)
			}
			return set
		}
	}
	t.Fatalf("%s: no managedFields entry of resyncd's for %q", objectID(u), subresource)
	return nil
}
