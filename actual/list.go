package actual

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"
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
//
// It reads with json-iterator's Iterator, which structured-merge-diff
// links already: one scan of the stream, every value made as it is read,
// numbers int64 when whole and in range, else float64, as
// k8s.io/apimachinery/pkg/util/json gives unstructured objects.
// encoding/json's Decoder scanned each item twice and its json.Numbers
// were walked a third time.
func decodeList(r io.Reader, fn func(*unstructured.Unstructured) error) (listHead, error) {
	var h listHead
	iter := jsoniter.Parse(jsoniter.ConfigDefault, r, 64<<10)
	if next := iter.WhatIsNext(); next != jsoniter.ObjectValue {
		return h, fmt.Errorf("a list: got %s, want an object", valueName(next))
	}
	var err error
	done := iter.ReadMapCB(func(iter *jsoniter.Iterator, key string) bool {
		switch key {
		case "kind":
			h.kind = iter.ReadString()
		case "apiVersion":
			h.apiVersion = iter.ReadString()
		case "metadata":
			h.cont, h.shard = readListMeta(iter)
		case "items":
			err = decodeItems(iter, h, fn)
		default:
			iter.Skip()
		}
		return err == nil && iter.Error == nil
	})
	if err != nil {
		return h, err
	}
	return h, iterError(iter, done)
}

// readListMeta reads a list's metadata: its continue token and the shard
// selector the server says it applied.
func readListMeta(iter *jsoniter.Iterator) (cont, shard string) {
	iter.ReadMapCB(func(iter *jsoniter.Iterator, key string) bool {
		switch key {
		case "continue":
			cont = iter.ReadString()
		case "shardInfo":
			iter.ReadMapCB(func(iter *jsoniter.Iterator, key string) bool {
				if key == "selector" {
					shard = iter.ReadString()
				} else {
					iter.Skip()
				}
				return iter.Error == nil
			})
		default:
			iter.Skip()
		}
		return iter.Error == nil
	})
	return cont, shard
}

func decodeItems(iter *jsoniter.Iterator, h listHead, fn func(*unstructured.Unstructured) error) error {
	if iter.ReadNil() { // "items": null
		return nil
	}
	if next := iter.WhatIsNext(); next != jsoniter.ArrayValue {
		return fmt.Errorf("items: got %s, want a list", valueName(next))
	}
	var err error
	done := iter.ReadArrayCB(func(iter *jsoniter.Iterator) bool {
		if next := iter.WhatIsNext(); next != jsoniter.ObjectValue {
			err = fmt.Errorf("an item: got %s, want an object", valueName(next))
			return false
		}
		obj, _ := readValue(iter).(map[string]any)
		if iter.Error != nil {
			return false
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" {
			if h.kind == "" {
				err = errors.New("an item with no kind before the list's kind")
				return false
			}
			u.SetKind(strings.TrimSuffix(h.kind, "List"))
			u.SetAPIVersion(h.apiVersion)
		}
		err = fn(u)
		return err == nil
	})
	if err != nil {
		return err
	}
	return iterError(iter, done)
}

// readValue reads the next value as unstructured objects hold it.
func readValue(iter *jsoniter.Iterator) any {
	switch iter.WhatIsNext() {
	case jsoniter.StringValue:
		return iter.ReadString()
	case jsoniter.NumberValue:
		n, err := number(iter.ReadNumber())
		if err != nil {
			iter.ReportError("number", err.Error())
		}
		return n
	case jsoniter.NilValue:
		iter.ReadNil()
		return nil
	case jsoniter.BoolValue:
		return iter.ReadBool()
	case jsoniter.ArrayValue:
		arr := []any{}
		iter.ReadArrayCB(func(iter *jsoniter.Iterator) bool {
			arr = append(arr, readValue(iter))
			return iter.Error == nil
		})
		return arr
	case jsoniter.ObjectValue:
		obj := map[string]any{}
		iter.ReadMapCB(func(iter *jsoniter.Iterator, key string) bool {
			obj[key] = readValue(iter)
			return iter.Error == nil
		})
		return obj
	default:
		iter.ReportError("value", "not JSON")
		return nil
	}
}

func number(n json.Number) (any, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", n, err)
	}
	return f, nil
}

// iterError is what stopped iter before the value it read was done: a
// value read whole never reaches the end of the stream, so that ends it
// too soon.
func iterError(iter *jsoniter.Iterator, done bool) error {
	switch {
	case errors.Is(iter.Error, io.EOF):
		return io.ErrUnexpectedEOF
	case iter.Error != nil:
		return iter.Error
	case !done:
		return io.ErrUnexpectedEOF
	}
	return nil
}

func valueName(t jsoniter.ValueType) string {
	switch t {
	case jsoniter.StringValue:
		return "a string"
	case jsoniter.NumberValue:
		return "a number"
	case jsoniter.NilValue:
		return "null"
	case jsoniter.BoolValue:
		return "a boolean"
	case jsoniter.ArrayValue:
		return "a list"
	case jsoniter.ObjectValue:
		return "an object"
	}
	return "no JSON value"
}
