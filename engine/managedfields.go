package engine

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// fingerprint identifies the content of the fields resyncd owns: the
// first 128 bits of the SHA-256 of its JSON. The memory keeps one or two a
// child between passes; half the digest is as unlikely to collide by
// chance, and a collision made on purpose would have to come from whoever
// writes both the parent and the live child.
type fingerprint [16]byte

// owner extracts, from a live object's managedFields, the fields one field
// manager set with apply (tier 1 of drift detection), and puts desired
// objects in the same form, so that the two compare with no request.
type owner struct {
	manager   string
	converter managedfields.TypeConverter
	// deduced reads the kinds client-go does not know (custom resources a
	// graph makes) from their content: maps and scalars as they are, lists
	// as atomic.
	deduced managedfields.TypeConverter
}

// ParseSchemas parses the schemas tier 1 reads managedFields with now, if
// no Engine has yet. A process that calls it first thing takes the parse's
// passing peak of about 10 MiB of heap while little else is resident, not
// on top of everything it has loaded by its first Engine.
func ParseSchemas() { builtinConverter() }

func newOwner(manager string) *owner {
	return &owner{manager: manager, converter: builtinConverter(), deduced: managedfields.NewDeducedTypeConverter()}
}

// builtinConverter reads client-go's schemas of the built-in kinds once a
// process. Parsing them allocates about 25 MB, a third of it live at once:
// at the collector's default pace the heap would grow to twice that and the
// process would keep those pages for good, so the parse runs with the
// collector at a tenth of its pace and then returns what it freed to the
// operating system.
var builtinConverter = sync.OnceValue(func() managedfields.TypeConverter {
	pace := debug.SetGCPercent(10)
	defer func() {
		debug.SetGCPercent(pace)
		debug.FreeOSMemory()
	}()
	return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
})

// owned returns the fields of live that o.manager applied, in the form of
// normalize; ok is false when it applied none.
func (o *owner) owned(live *unstructured.Unstructured) (_ map[string]any, ok bool, _ error) {
	var entry *metav1.ManagedFieldsEntry
	for i, mf := range live.GetManagedFields() {
		if mf.Manager == o.manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" {
			entry = &live.GetManagedFields()[i]
			break
		}
	}
	if entry == nil || entry.FieldsV1 == nil {
		return nil, false, nil
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(entry.FieldsV1.GetRawReader()); err != nil {
		return nil, false, fmt.Errorf("%s: managedFields of %s: %w", objectID(live), o.manager, err)
	}
	tv, err := o.typed(live)
	if err != nil {
		return nil, false, err
	}
	m, err := asMap(tv.ExtractItems(set.Leaves()))
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", objectID(live), err)
	}
	stripIdentity(m)
	dropEmptyMaps(m)
	return m, true, nil
}

// normalize returns desired as the schema sees it, without the identity
// fields that managedFields never list.
func (o *owner) normalize(desired *unstructured.Unstructured) (map[string]any, error) {
	// The typed value shares desired's maps: work on a copy.
	tv, err := o.typed(desired.DeepCopy())
	if err != nil {
		return nil, err
	}
	m, err := asMap(tv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", objectID(desired), err)
	}
	stripIdentity(m)
	dropEmptyMaps(m)
	return m, nil
}

// project returns live's values at the fields desired sets: what applying
// desired would change, as kubectl diff shows it.
func (o *owner) project(live, desired *unstructured.Unstructured) (map[string]any, error) {
	dtv, err := o.typed(desired.DeepCopy())
	if err != nil {
		return nil, err
	}
	set, err := dtv.ToFieldSet()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", objectID(desired), err)
	}
	ltv, err := o.typed(live)
	if err != nil {
		return nil, err
	}
	m, err := asMap(ltv.ExtractItems(set.Leaves()))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", objectID(live), err)
	}
	stripIdentity(m)
	return m, nil
}

func (o *owner) typed(u *unstructured.Unstructured) (*typed.TypedValue, error) {
	c := o.converter
	if !clientgoscheme.Scheme.Recognizes(u.GroupVersionKind()) {
		c = o.deduced
	}
	tv, err := c.ObjectToTyped(u, typed.AllowDuplicates)
	if err != nil {
		return nil, fmt.Errorf("%s: read against its schema: %w", objectID(u), err)
	}
	return tv, nil
}

func asMap(tv *typed.TypedValue) (map[string]any, error) {
	m, ok := tv.AsValue().Unstructured().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("extracted fields are not an object")
	}
	return m, nil
}

// stripIdentity removes what names an object rather than describes it.
func stripIdentity(m map[string]any) {
	delete(m, "apiVersion")
	delete(m, "kind")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "name")
		delete(md, "namespace")
		if len(md) == 0 {
			delete(m, "metadata")
		}
	}
}

// dropEmptyMaps removes, at any depth of m's maps, the fields whose value
// is an empty map, and then those left empty by that: the API server
// stores a ConfigMap's `data: {}` as no data at all, while managedFields
// still list the field, so the two sides compare equal only without them.
func dropEmptyMaps(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			dropEmptyMaps(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		}
	}
}

// fingerprintOf hashes m's JSON; encoding/json sorts map keys, so equal
// content gives an equal fingerprint.
func fingerprintOf(m map[string]any) (fingerprint, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return fingerprint{}, err
	}
	sum := sha256.Sum256(b)
	return fingerprint(sum[:len(fingerprint{})]), nil
}

// objectID formats an object as Kind/namespace/name for messages.
func objectID(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + "/" + u.GetName()
	}
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// ownedStatusFields returns the top-level fields of p's status that the
// field manager applied through the status subresource.
func ownedStatusFields(p *unstructured.Unstructured, manager string) []string {
	for _, mf := range p.GetManagedFields() {
		if mf.Manager != manager || mf.Subresource != "status" || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status map[string]json.RawMessage `json:"f:status"`
		}
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			return nil
		}
		out := make([]string, 0, len(fields.Status))
		for k := range fields.Status {
			if name, ok := strings.CutPrefix(k, "f:"); ok {
				out = append(out, intern(name)) // the same few names for every parent
			}
		}
		return out
	}
	return nil
}
