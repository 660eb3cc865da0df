package desired

// The finalizer and labels kro puts on a ResourceGraphDefinition's
// instances and their children, which resyncd writes on the instances of
// an RGD it serves and reads on the children it takes over from kro.
const (
	KroFinalizer         = "kro.run/finalizer"
	KroOwned             = "kro.run/owned"
	KroRGDName           = "kro.run/resource-graph-definition-name"
	KroRGDID             = "kro.run/resource-graph-definition-id"
	KroInstanceID        = "kro.run/instance-id"
	KroInstanceName      = "kro.run/instance-name"
	KroInstanceNamespace = "kro.run/instance-namespace"
	KroInstanceGroup     = "kro.run/instance-group"
	KroInstanceVersion   = "kro.run/instance-version"
	KroInstanceKind      = "kro.run/instance-kind"
	KroNodeID            = "kro.run/node-id"
	KroCollectionIndex   = "kro.run/collection-index"
	KroCollectionSize    = "kro.run/collection-size"
)
