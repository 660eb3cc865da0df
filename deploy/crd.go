package deploy

import _ "embed"

//go:embed crds/resyncd.io_httpservices.yaml
var crd []byte

// CRD returns the HttpService CustomResourceDefinition,
// crds/resyncd.io_httpservices.yaml.
func CRD() []byte { return crd }
