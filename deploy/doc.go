// Package deploy holds what is installed into a cluster — the HttpService CRD
// and, beside it, the Helm chart — and embeds the CRD for the programs that
// install it; it holds no logic of resyncd.
package deploy
