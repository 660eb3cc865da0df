package deploy

import _ "embed"

// CRD is the HttpService CustomResourceDefinition, crds/resyncd.io_httpservices.yaml.
//
//go:embed crds/resyncd.io_httpservices.yaml
var CRD []byte
