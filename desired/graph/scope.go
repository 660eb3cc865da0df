package graph

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// builtinClusterScoped are the cluster-scoped kinds of Kubernetes itself,
// by group and kind: what a graph loaded with no cluster (Options.
// ClusterScoped nil) takes as cluster-scoped. Any other kind is taken as
// namespaced there; loaded against an API server, discovery decides.
var builtinClusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Kind: "ComponentStatus"}:  true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
}

// Placement says where the children of one template may be placed when
// that is not only their parent's namespace.
type Placement struct {
	// ID is the resource's id; Line its line in the file.
	ID   string
	Line int
	// APIVersion and Kind are the template's.
	APIVersion, Kind string
	// ClusterScoped says the kind is cluster-scoped: its children are in
	// no namespace.
	ClusterScoped bool
	// Namespace is the template's metadata.namespace as written, at
	// NamespaceLine: a name, or a string with expressions (Expression),
	// which may give any namespace.
	Namespace     string
	NamespaceLine int
	Expression    bool
}

// Where names the template, as messages do: resources[id] (Kind).
func (p Placement) Where() string { return fmt.Sprintf("resources[%s] (%s)", p.ID, p.Kind) }

// String says where the children go, for `resyncd validate`.
func (p Placement) String() string {
	switch {
	case p.ClusterScoped:
		return p.Where() + ": cluster-scoped"
	case p.Expression:
		return fmt.Sprintf("%s: in the namespace %s gives", p.Where(), p.Namespace)
	default:
		return fmt.Sprintf("%s: in namespace %s", p.Where(), p.Namespace)
	}
}

// Placements lists, in the file's apply order, the templates whose
// children may be outside their parent's namespace: of a cluster-scoped
// kind, or setting metadata.namespace. A literal namespace is outside
// unless a parent lives there too: it is listed as well.
func (r *Renderer) Placements() []Placement {
	var out []Placement
	for _, res := range r.resources {
		if res.external != nil || !res.clusterScoped && res.namespace == "" {
			continue // an external reference is read, never placed
		}
		out = append(out, Placement{ID: res.id, Line: res.line, APIVersion: res.apiVersion, Kind: res.kind, ClusterScoped: res.clusterScoped,
			Namespace: res.namespace, NamespaceLine: res.nsLine, Expression: strings.Contains(res.namespace, "${")})
	}
	return out
}

// placeResources marks the cluster-scoped kinds and checks what the
// templates say of namespaces: a cluster-scoped kind takes none, a
// namespace written out must be a namespace's name.
func placeResources(f *file, clusterScoped func(schema.GroupVersionKind) bool, ps *problems) {
	if clusterScoped == nil {
		clusterScoped = func(gvk schema.GroupVersionKind) bool { return builtinClusterScoped[gvk.GroupKind()] }
	}
	for _, res := range f.resources {
		gv, err := schema.ParseGroupVersion(res.apiVersion)
		if err != nil || res.external != nil {
			continue // reported where the kinds are resolved; an external reference is checked as one
		}
		res.clusterScoped = clusterScoped(gv.WithKind(res.kind))
		where := res.where() + ".template.metadata.namespace"
		switch {
		case res.namespace == "":
		case res.clusterScoped:
			ps.add(res.nsLine, where, "%s is cluster-scoped: its objects have no namespace; remove it", res.kind)
		case !strings.Contains(res.namespace, "${"):
			if errs := validation.IsDNS1123Label(res.namespace); len(errs) > 0 {
				ps.add(res.nsLine, where, "%q is not a namespace name: %s", res.namespace, strings.Join(errs, "; "))
			}
		}
	}
}
