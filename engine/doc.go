// Package engine runs resyncd's passes: it compares the children that
// package desired renders with the live ones that package actual reads,
// plans the writes by priority and makes them with server-side apply under
// a rate limit and a budget; it never decides what a child should contain.
// It reads through a pageReader and writes through an objectWriter, so
// that planning is tested with pages from memory (plan_test.go) and only
// the writes need an API server.
package engine
