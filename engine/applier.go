package engine

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// applier makes every request of resyncd's that writes, and the reads a
// write needs: server-side applies of children and of parents' status,
// with one field manager and force, dry-run applies, deletes with a UID
// precondition, and the JSON patch that releases a child. Its errors are
// *WriteError.
type applier struct {
	client  dynamic.Interface
	manager string
}

// applyOptions say how to apply.
type applyOptions struct {
	// createOnly makes the API server refuse the apply, with a conflict,
	// when an object of the name exists.
	createOnly bool
	// dryRun applies without storing: the answer is what would be stored.
	dryRun bool
	// subresource is "status" for a parent's status.
	subresource string
}

// WriteError is a request of the applier that failed; it names the verb
// and the object, and wraps the API server's error.
type WriteError struct {
	// Verb is apply, dry-run apply, status apply, delete, get or release.
	Verb string
	// Object is Kind/namespace/name.
	Object string
	// Err is the error of the request.
	Err error
}

func (e *WriteError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Object, e.Verb, e.Err) }

// Unwrap returns the API server's error.
func (e *WriteError) Unwrap() error { return e.Err }

func (a *applier) fail(verb string, gvr schema.GroupVersionResource, kind, ns, name string, err error) error {
	if err == nil {
		return nil
	}
	if kind == "" {
		kind = gvr.Resource
	}
	id := kind + "/" + name
	if ns != "" {
		id = kind + "/" + ns + "/" + name
	}
	return &WriteError{Verb: verb, Object: id, Err: err}
}
