// Package desired turns a parent object into the child objects it should
// have and into the status it should show; it is pure — no client, no I/O,
// no clock but the one passed in.
package desired
