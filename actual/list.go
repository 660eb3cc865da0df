package actual

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Lister LISTs any resource in pages and decodes each page's items one at
// a time as the response arrives, so that a page is never held whole:
// neither its bytes nor its objects.
type Lister struct {
	client rest.Interface
}

// NewLister returns a Lister that reads through cfg, with the JSON
// content type of client-go's dynamic client.
func NewLister(cfg *rest.Config) (*Lister, error) {
	c := dynamic.ConfigFor(cfg)
	c.GroupVersion = nil
	c.APIPath = "/"
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("list client: %w", err)
	}
	return &Lister{client: rc}, nil
}

// Listed is what a LIST said of itself.
type Listed struct {
	// Kind is the kind of the items as the list names it
	// ("HttpServiceList" lists HttpService), known even when there are none.
	Kind string
	// Sharded is whether the API server said it applied the
	// shardSelector asked for (every page echoed it in
	// metadata.shardInfo): false when none was asked, when the server
	// ignored it and returned every object, and for custom resources,
	// whose lists do not echo it in Kubernetes 1.37.
	Sharded bool
}

// Each LISTs gvr in namespace ("" for all namespaces) in pages of pageSize,
// following the continue token, and calls fn for every object as it is
// decoded. Of opts it sends the label, field and shard selectors. A
// continue token that expired mid-way fails the LIST: nothing is read twice.
func (l *Lister) Each(ctx context.Context, gvr schema.GroupVersionResource, namespace string,
	opts metav1.ListOptions, pageSize int64, fn func(*unstructured.Unstructured) error) (Listed, error) {
	out := Listed{Sharded: opts.ShardSelector != ""}
	cont := ""
	for {
		req := l.client.Get().AbsPath(collectionPath(gvr, namespace)).Param("limit", strconv.FormatInt(pageSize, 10))
		if opts.LabelSelector != "" {
			req = req.Param("labelSelector", opts.LabelSelector)
		}
		if opts.FieldSelector != "" {
			req = req.Param("fieldSelector", opts.FieldSelector)
		}
		if opts.ShardSelector != "" {
			req = req.Param("shardSelector", opts.ShardSelector)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := req.Stream(ctx)
		if err != nil {
			return Listed{}, fmt.Errorf("list %s: %w", gvr, err)
		}
		var page listHead
		page, err = decodeList(body, fn)
		_ = body.Close()
		if err != nil {
			return Listed{}, fmt.Errorf("list %s: %w", gvr, err)
		}
		out.Kind, cont = strings.TrimSuffix(page.kind, "List"), page.cont
		out.Sharded = out.Sharded && page.shard == opts.ShardSelector
		if cont == "" {
			return out, nil
		}
	}
}

func collectionPath(gvr schema.GroupVersionResource, namespace string) string {
	p := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		p = "/api/" + gvr.Version
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	return p + "/" + gvr.Resource
}

// listHead is what a list says of itself.
type listHead struct {
	kind, apiVersion, cont string
	// shard is the shard selector the server says it applied.
	shard string
}

// decodeList reads one list response and calls fn for each item. Items of
// built-in types carry no kind; they get the list's, which the API server
// writes before the items.
func decodeList(r io.Reader, fn func(*unstructured.Unstructured) error) (listHead, error) {
	var h listHead
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	// Numbers as json.Number, made int64 or float64 below as unstructured
	// objects hold them: one scan of each item and one decode, where a
	// RawMessage and a second Unmarshal scanned it four times.
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return h, err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return h, err
		}
		switch key, _ := t.(string); key {
		case "kind":
			err = dec.Decode(&h.kind)
		case "apiVersion":
			err = dec.Decode(&h.apiVersion)
		case "metadata":
			var m metav1.ListMeta
			err = dec.Decode(&m)
			h.cont = m.Continue
			if m.ShardInfo != nil {
				h.shard = m.ShardInfo.Selector
			}
		case "items":
			err = decodeItems(dec, h, fn)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return h, err
		}
	}
	return h, expectDelim(dec, '}')
}

func decodeItems(dec *json.Decoder, h listHead, fn func(*unstructured.Unstructured) error) error {
	t, err := dec.Token()
	if err != nil || t == nil { // "items": null
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("items: got %v, want a list", t)
	}
	for dec.More() {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			return err
		}
		if err := convertNumbers(obj); err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" {
			if h.kind == "" {
				return errors.New("an item with no kind before the list's kind")
			}
			u.SetKind(strings.TrimSuffix(h.kind, "List"))
			u.SetAPIVersion(h.apiVersion)
		}
		if err := fn(u); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

// convertNumbers replaces, in place, every json.Number below x with an
// int64 when it is a whole number that fits, else a float64: what
// k8s.io/apimachinery/pkg/util/json gives unstructured objects.
func convertNumbers(x any) error {
	_, _, err := convert(x)
	return err
}

// convert returns what x becomes, and whether it is another value than x.
func convert(x any) (any, bool, error) {
	switch v := x.(type) {
	case json.Number:
		n, err := number(v)
		return n, true, err
	case map[string]any:
		for k, e := range v {
			c, changed, err := convert(e)
			if err != nil {
				return nil, false, err
			}
			if changed {
				v[k] = c
			}
		}
	case []any:
		for i, e := range v {
			c, changed, err := convert(e)
			if err != nil {
				return nil, false, err
			}
			if changed {
				v[i] = c
			}
		}
	}
	return x, false, nil
}

func number(n json.Number) (any, error) {
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", n, err)
	}
	return f, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("got %v, want %q", t, want)
	}
	return nil
}
