// Package actual reads live state from the API server — paged LISTs through
// the dynamic client, and the OpenAPI schemas it publishes — and decides
// nothing about it.
package actual
