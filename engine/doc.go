// Package engine runs resyncd's passes: it compares the children that
// package desired renders with the live ones that package actual reads,
// plans the writes by priority and makes them with server-side apply under
// a rate limit and a budget; it never decides what a child should contain.
// It reads through a pageReader and writes through an objectWriter, so
// that planning can be tested with pages from memory (plan_test.go); the
// package's tests start an API server for the rest.
package engine
