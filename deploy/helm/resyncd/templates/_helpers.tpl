{{/* The chart name, or nameOverride. */}}
{{- define "resyncd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects. */}}
{{- define "resyncd.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "resyncd.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "resyncd.labels" -}}
helm.sh/chart: {{ include "resyncd.chart" . }}
{{ include "resyncd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "resyncd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "resyncd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "resyncd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "resyncd.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Whether resyncd writes the configured resources' objects in the cluster it
is installed in: always as a target, else unless clusters are listed and
each names a kubeconfig Secret.
*/}}
{{- define "resyncd.managesHere" -}}
{{- $here := or .Values.target.enabled (not .Values.clusters) }}
{{- range .Values.clusters }}{{ if not .secretName }}{{ $here = true }}{{ end }}{{ end }}
{{- if $here }}true{{ end }}
{{- end }}

{{/*
The resources of config.resources watched in the cluster the chart is
installed in, as JSON: a resource that lists clusters is watched here when
one of them has no kubeconfig Secret (the cluster resyncd runs in), or, as
a target, when it lists target.clusterName (every one when that is empty).
*/}}
{{- define "resyncd.resourcesHere" -}}
{{- $here := list }}
{{- if .Values.target.enabled }}
{{- if .Values.target.clusterName }}{{ $here = list .Values.target.clusterName }}{{ end }}
{{- else if not .Values.clusters }}
{{- $here = list "local" }}
{{- else }}
{{- range .Values.clusters }}{{ if not .secretName }}{{ $here = append $here .name }}{{ end }}{{ end }}
{{- end }}
{{- $out := list }}
{{- range include "resyncd.resources" . | fromJsonArray }}
{{- $in := or (not .clusters) (and $.Values.target.enabled (not $.Values.target.clusterName)) }}
{{- range .clusters }}{{ if has . $here }}{{ $in = true }}{{ end }}{{ end }}
{{- if $in }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- $out | toJson }}
{{- end }}

{{/*
config.resources, as JSON, with the group, version and resource each
leaves out filled in from the parent kind its graph declares in
spec.schema (group default kro.run, version spec.schema.apiVersion,
resource the plural of the lowercased kind), or from the CRD file it names
in crd (a file of graphs): the RBAC is granted on those, and resyncd,
given them in its configuration, checks them against its own reading of
the graph and refuses to start on a plural the chart spelled otherwise.
*/}}
{{- define "resyncd.resources" -}}
{{- $out := list }}
{{- $files := .Values.graphs | default dict }}
{{- range .Values.config.resources }}
{{- $r := deepCopy . }}
{{- $schema := dict }}
{{- with $r.graph }}{{ $schema = ((index $files . | default dict).spec | default dict).schema | default dict }}{{ end }}
{{- if $schema.kind }}
{{- if not (hasKey $r "group") }}{{ $_ := set $r "group" ($schema.group | default "kro.run") }}{{ end }}
{{- if not $r.version }}{{ $_ := set $r "version" ($schema.apiVersion | default "") }}{{ end }}
{{- if not $r.resource }}{{ $_ := set $r "resource" (include "resyncd.plural" (lower $schema.kind)) }}{{ end }}
{{- else if $r.crd }}
{{- $spec := (index $files $r.crd | default dict).spec | default dict }}
{{- if not (hasKey $r "group") }}{{ $_ := set $r "group" ($spec.group | default "") }}{{ end }}
{{- if not $r.resource }}{{ $_ := set $r "resource" (($spec.names | default dict).plural | default "") }}{{ end }}
{{- if not $r.version }}
{{- range $spec.versions }}{{ if .storage }}{{ $_ := set $r "version" .name }}{{ end }}{{ end }}
{{- end }}
{{- end }}
{{- $out = append $out $r }}
{{- end }}
{{- $out | toJson }}
{{- end }}

{{/*
The plural of a lowercased kind by the regular English rules (kro's
irregular ones, person → people, are not here: give resource then).
*/}}
{{- define "resyncd.plural" -}}
{{- if regexMatch "(s|x|z|ch|sh)$" . }}{{ printf "%ses" . }}
{{- else if regexMatch "[^aeiou]y$" . }}{{ printf "%sies" (trimSuffix "y" .) }}
{{- else }}{{ printf "%ss" . }}
{{- end }}
{{- end }}

{{/*
The names of the CRDs of the watched resources here that set installCRD:
resource.group, as the CRD of a graph's spec.schema is named, or the
metadata.name of the crd file.
*/}}
{{- define "resyncd.installedCRDs" -}}
{{- $names := list }}
{{- range include "resyncd.resourcesHere" . | fromJsonArray }}
{{- if .installCRD }}
{{- $name := printf "%s.%s" .resource .group }}
{{- with .crd }}{{ $name = ((index ($.Values.graphs | default dict) . | default dict).metadata | default dict).name | default $name }}{{ end }}
{{- $names = append $names $name }}
{{- end }}
{{- end }}
{{- $names | uniq | sortAlpha | toJson }}
{{- end }}

{{/*
GOMEMLIMIT in bytes: goMemLimitPercent of the container's memory limit
(resources.limits.memory, in Ki, Mi, Gi, Ti, k, M, G, T or bytes); empty
without a limit, or with goMemLimitPercent 0.
*/}}
{{- define "resyncd.goMemLimit" -}}
{{- $limit := ((.Values.resources | default dict).limits | default dict).memory | default "" | toString }}
{{- $pct := int (.Values.goMemLimitPercent | default 0) }}
{{- if and $limit (gt $pct 0) }}
{{- $units := dict "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 }}
{{- $num := regexFind "^[0-9]+" $limit }}
{{- $suffix := trimPrefix $num $limit }}
{{- if and $num (or (eq $suffix "") (hasKey $units $suffix)) }}
{{- $mult := 1 }}{{ if $suffix }}{{ $mult = index $units $suffix }}{{ end }}
{{- div (mul (int64 $num) $mult $pct) 100 }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The ring (sharding): as config.sharding.enabled says, and when it says
nothing, on with more than one replica unless the config asks for leader
election instead. Fails when the config asks for both: resyncd refuses
them together.
*/}}
{{- define "resyncd.sharding" -}}
{{- $sh := default dict .Values.config.sharding }}
{{- $le := default dict .Values.config.leaderElection }}
{{- $on := $sh.enabled }}
{{- if kindIs "invalid" $on }}{{ $on = and (gt (int .Values.replicaCount) 1) (not $le.enabled) }}{{ end }}
{{- if and $on $le.enabled }}
{{- fail "config.sharding.enabled and config.leaderElection.enabled are both true: the replicas either share the work (sharding) or one of them does it all (leader election); set one of them to false" }}
{{- end }}
{{- if $on }}true{{ end }}
{{- end }}

{{/*
Leader election: with more than one replica, or when the config asks, unless
the replicas share the work in the ring.
*/}}
{{- define "resyncd.leaderElection" -}}
{{- $le := default dict .Values.config.leaderElection }}
{{- if and (or (gt (int .Values.replicaCount) 1) $le.enabled) (not (include "resyncd.sharding" .)) }}true{{ end }}
{{- end }}

{{/*
The resyncd configuration: .Values.config with what the chart decides —
leader election or the ring, their Leases (namespace and name: the ring's
are named and labelled after leaseName), the listen addresses, the log
settings. The ring's identity is left empty: each replica is then its pod's
name, $POD_NAME. Without the ring no sharding key is rendered, and no
clusterSecrets key when it lists nothing.
*/}}
{{- define "resyncd.config" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $le := deepCopy (default dict $cfg.leaderElection) }}
{{- $_ := set $le "enabled" (eq (include "resyncd.leaderElection" .) "true") }}
{{- $_ := set $le "namespace" .Release.Namespace }}
{{- $_ := set $le "leaseName" (include "resyncd.fullname" .) }}
{{- $_ := set $cfg "leaderElection" $le }}
{{- if include "resyncd.sharding" . }}
{{- $sh := deepCopy (default dict $cfg.sharding) }}
{{- $_ := set $sh "enabled" true }}
{{- $_ := set $cfg "sharding" $sh }}
{{- else }}
{{- $_ := unset $cfg "sharding" }}
{{- end }}
{{- if not $cfg.clusterSecrets }}{{ $_ := unset $cfg "clusterSecrets" }}{{ end }}
{{- if not ($cfg.resourceGraphDefinitions | default dict).enabled }}{{ $_ := unset $cfg "resourceGraphDefinitions" }}{{ end }}
{{- $_ := set $cfg "resources" (include "resyncd.resources" . | fromJsonArray) }}
{{- $_ := set $cfg "metrics" (dict "address" (printf ":%d" (int .Values.metrics.service.port)) "secure" (.Values.metrics.secure | default false)) }}
{{- $_ := set $cfg "health" (dict "address" (printf ":%d" (int .Values.healthPort))) }}
{{- $_ := set $cfg "log" (dict "level" .Values.logLevel "format" .Values.logFormat) }}
{{- with .Values.clusters }}
{{- $clusters := list }}
{{- range . }}
{{- $c := dict "name" .name }}
{{- if .secretName }}{{ $_ := set $c "kubeconfig" (printf "/etc/resyncd-clusters/%s/%s" .name (.key | default "kubeconfig")) }}{{ end }}
{{- with .context }}{{ $_ := set $c "context" . }}{{ end }}
{{- with .apply }}{{ $_ := set $c "apply" . }}{{ end }}
{{- if .allowCredentialPlugins }}{{ $_ := set $c "allowCredentialPlugins" true }}{{ end }}
{{- $clusters = append $clusters $c }}
{{- end }}
{{- $_ := set $cfg "clusters" $clusters }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/*
The graph templates of config.resources, checked as resyncd checks them:
every graph named is in .Values.graphs, every template sets apiVersion and
kind without expressions, no template is of a built-in kind resyncd cannot
write (kinds.yaml unwritable: create-only, subresources), and a template of
a cluster-scoped kind (kinds.yaml clusterScoped, or rbac.customKinds with
clusterScoped: true) only for a resource that sets clusterScopedChildren:
true. Renders nothing; fails with a message
naming the graph, the template and the kind.
*/}}
{{- define "resyncd.checkGraphs" -}}
{{- $kinds := include "resyncd.kinds" . | fromYaml }}
{{- $why := dict
  "cluster-scoped" "is cluster-scoped and read-only"
  "create-only" "takes only create: it is not an object resyncd can apply and keep in sync"
  "subresource" "is a subresource, not an object resyncd can apply" }}
{{- range $i, $r := .Values.config.resources }}
{{- with $r.crd }}
{{- if not (hasKey ($.Values.graphs | default dict) .) }}
{{- fail (printf "config.resources[%d].crd: %q is not a file of graphs; add the CRD under graphs" $i .) }}
{{- end }}
{{- end }}
{{- with $r.graph }}
{{- if not (hasKey ($.Values.graphs | default dict) .) }}
{{- fail (printf "config.resources[%d].graph: %q is not a file of graphs; add it under graphs" $i .) }}
{{- end }}
{{- $file := . }}
{{- range $j, $res := ((index $.Values.graphs . | default dict).spec | default dict).resources | default list }}
{{- with $res.template }}
{{- $gk := include "resyncd.templateKind" (dict "template" . "where" (printf "graphs[%q] spec.resources[%d] (id %s)" $file $j ($res.id | default "?"))) }}
{{- with index $kinds.unwritable $gk }}
{{- fail (printf "graphs[%q] spec.resources[%d] (id %s): kind %s %s; resyncd cannot write it and the chart grants it nothing: remove the template" $file $j ($res.id | default "?") $gk (index $why .)) }}
{{- end }}
{{- if and (index $kinds.clusterScoped $gk) (not $r.clusterScopedChildren) }}
{{- fail (printf "graphs[%q] spec.resources[%d] (id %s): kind %s is cluster-scoped, and config.resources[%d] does not set clusterScopedChildren: true; resyncd would refuse every one and the chart grants it nothing: set it, or remove the template" $file $j ($res.id | default "?") $gk $i) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
kinds.yaml, with the cluster-scoped kinds of rbac.customKinds (clusterScoped:
true) added to its clusterScoped table: the chart treats those as it treats
Kubernetes' own.
*/}}
{{- define "resyncd.kinds" -}}
{{- $kinds := .Files.Get "kinds.yaml" | fromYaml }}
{{- range .Values.rbac.customKinds | default list }}
{{- if .clusterScoped }}{{ $_ := set $kinds.clusterScoped (printf "%s.%s" .kind .group) .resource }}{{ end }}
{{- end }}
{{- toYaml $kinds }}
{{- end }}

{{/*
The Kind.group (Kind alone in the core group) of a graph template, as
kinds.yaml and rbac.customKinds spell it. Fails, naming .where, when
apiVersion or kind is missing or an expression.
*/}}
{{- define "resyncd.templateKind" -}}
{{- $av := .template.apiVersion | default "" | toString }}
{{- $kind := .template.kind | default "" | toString }}
{{- if or (not $av) (not $kind) (contains "${" (print $av $kind)) }}
{{- fail (printf "%s: the template must set apiVersion and kind, without expressions: they say what resyncd lists and may write" .where) }}
{{- end }}
{{- if contains "/" $av }}{{ printf "%s.%s" $kind (first (splitList "/" $av)) }}{{ else }}{{ $kind }}{{ end }}
{{- end }}

{{/*
The child resources of one watched resource, added to the dict .children
as "group/resource": for the built-in httpservice renderer its kinds (as
desired.HTTPService.ChildTypes lists them), for a graph the kind of every
template in .graphs, its resource from kinds.yaml for a built-in kind or
from .customKinds (rbac.customKinds) for a custom one. A custom kind
without a resource fails, naming the graph and the kind: a guessed plural
can be wrong without anyone noticing (the grant is then on a resource
that does not exist, and every write is forbidden).
*/}}
{{- define "resyncd.childResources" -}}
{{- $children := .children }}
{{- if eq (.resource.renderer | default "") "httpservice" }}
{{- $_ := set $children "apps/deployments" true }}
{{- $_ := set $children "/services" true }}
{{- $_ := set $children "autoscaling/horizontalpodautoscalers" true }}
{{- end }}
{{- with .resource.graph }}
{{- $file := . }}
{{- $custom := dict }}
{{- range $.customKinds }}{{ $_ := set $custom (printf "%s.%s" .kind .group) .resource }}{{ end }}
{{- range $j, $res := ((index $.graphs . | default dict).spec | default dict).resources | default list }}
{{- with $res.template }}
{{- $where := printf "graphs[%q] spec.resources[%d] (id %s)" $file $j ($res.id | default "?") }}
{{- $gk := include "resyncd.templateKind" (dict "template" . "where" $where) }}
{{- if not (index $.kinds.clusterScoped $gk) }}
{{- $group := "" }}
{{- if contains "/" (toString .apiVersion) }}{{ $group = first (splitList "/" (toString .apiVersion)) }}{{ end }}
{{- $resource := index $.kinds.namespaced $gk | default (index $custom $gk) }}
{{- if not $resource }}
{{- fail (printf "%s: kind %s (%s) is not a built-in kind the chart knows: give its resource, the plural the API server serves (kubectl api-resources), in rbac.customKinds: [{group: %s, kind: %s, resource: ...}]" $where .kind .apiVersion ($group | quote) .kind) }}
{{- end }}
{{- $_ := set $children (printf "%s/%s" $group $resource) true }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The child resources, "group/resource", that the resources watched here may
place outside their parents' namespaces in any namespace, as JSON: the
cluster-scoped kinds of a resource with clusterScopedChildren: true, and
the kinds of templates that set metadata.namespace of a resource whose
childNamespaces has a glob ("team-*", "*"). resyncd reads and writes those
in every namespace (the ClusterRole <release>-outside). Where
childNamespaces names namespaces only, resyncd reads those kinds there and
in the watched namespaces, and Roles grant them (resyncd.outsideGrants);
nothing else is granted beyond the watched namespaces.
*/}}
{{- define "resyncd.outsideResources" -}}
{{- $kinds := include "resyncd.kinds" . | fromYaml }}
{{- $custom := dict }}
{{- range .Values.rbac.customKinds | default list }}{{ $_ := set $custom (printf "%s.%s" .kind .group) .resource }}{{ end }}
{{- $out := dict }}
{{- range include "resyncd.resourcesHere" . | fromJsonArray }}
{{- $r := . }}
{{- with $r.graph }}
{{- $file := . }}
{{- range $j, $res := ((index ($.Values.graphs | default dict) . | default dict).spec | default dict).resources | default list }}
{{- with $res.template }}
{{- $gk := include "resyncd.templateKind" (dict "template" . "where" (printf "graphs[%q] spec.resources[%d] (id %s)" $file $j ($res.id | default "?"))) }}
{{- $group := "" }}
{{- if contains "/" (toString .apiVersion) }}{{ $group = first (splitList "/" (toString .apiVersion)) }}{{ end }}
{{- $cluster := index $kinds.clusterScoped $gk }}
{{- if and $cluster $r.clusterScopedChildren }}
{{- $_ := set $out (printf "%s/%s" $group $cluster) true }}
{{- else if and (not $cluster) (hasKey (.metadata | default dict) "namespace") (include "resyncd.childNamespacesGlob" $r) }}
{{- $_ := set $out (printf "%s/%s" $group (index $kinds.namespaced $gk | default (index $custom $gk))) true }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- $out | toJson }}
{{- end }}

{{/*
Whether a watched resource's children may leave for a namespace no list
names: its childNamespaces has a glob, or it watches every namespace (its
children, wherever they are, are read and granted cluster-wide already).
*/}}
{{- define "resyncd.childNamespacesGlob" -}}
{{- if .childNamespaces }}
{{- $glob := not .namespaces }}
{{- range .childNamespaces }}{{ if regexMatch "[*?\\[\\\\]" (toString .) }}{{ $glob = true }}{{ end }}{{ end }}
{{- if $glob }}true{{ end }}
{{- end }}
{{- end }}

{{/*
The grants of the children that may leave their parents' namespaces for
namespaces childNamespaces names (no glob), as a JSON list of {ns, key}:
get, list, create, patch and delete of the kind ("group/resource") of
each template that sets metadata.namespace, in each of those namespaces,
by a Role there — resyncd LISTs those kinds in the watched namespaces and
these, never cluster-wide.
*/}}
{{- define "resyncd.outsideGrants" -}}
{{- $kinds := include "resyncd.kinds" . | fromYaml }}
{{- $custom := dict }}
{{- range .Values.rbac.customKinds | default list }}{{ $_ := set $custom (printf "%s.%s" .kind .group) .resource }}{{ end }}
{{- $out := list }}
{{- range include "resyncd.resourcesHere" . | fromJsonArray }}
{{- $r := . }}
{{- if and $r.childNamespaces (not (include "resyncd.childNamespacesGlob" $r)) }}
{{- with $r.graph }}
{{- $file := . }}
{{- range $j, $res := ((index ($.Values.graphs | default dict) . | default dict).spec | default dict).resources | default list }}
{{- with $res.template }}
{{- $gk := include "resyncd.templateKind" (dict "template" . "where" (printf "graphs[%q] spec.resources[%d] (id %s)" $file $j ($res.id | default "?"))) }}
{{- $group := "" }}
{{- if contains "/" (toString .apiVersion) }}{{ $group = first (splitList "/" (toString .apiVersion)) }}{{ end }}
{{- if and (not (index $kinds.clusterScoped $gk)) (hasKey (.metadata | default dict) "namespace") }}
{{- $key := printf "%s/%s" $group (index $kinds.namespaced $gk | default (index $custom $gk)) }}
{{- range $r.childNamespaces }}{{ $out = append $out (dict "ns" (toString .) "key" $key) }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- $out | toJson }}
{{- end }}

{{/*
The reads the external references of the graphs of the watched resources
need, as a JSON list of {ns, key}: get and list of the kind ("group/resource")
in namespace ns, "" for every namespace (the ClusterRole). A resource that
watches every namespace reads everywhere; otherwise a reference reads in its
literal namespace, or, with none or one given by an expression, in the
namespaces the resource watches; one given by an expression also in each
namespace the resource's externalNamespaces names, and, for a glob there,
cluster-wide; a selector without a namespace, or a cluster-scoped kind,
reads cluster-wide. A kind's resource comes from
kinds.yaml or rbac.customKinds, as a template's does; never written, so a
kind resyncd cannot write may be read. Fails, naming the graph and the
reference, for a kind the chart does not know.
*/}}
{{- define "resyncd.externalGrants" -}}
{{- $kinds := .Files.Get "kinds.yaml" | fromYaml }}
{{- $custom := dict }}
{{- range (.Values.rbac.customKinds | default list) }}{{ $_ := set $custom (printf "%s.%s" .kind .group) .resource }}{{ end }}
{{- $out := list }}
{{- range include "resyncd.resourcesHere" . | fromJsonArray }}
{{- $r := . }}
{{- with $r.graph }}
{{- $file := . }}
{{- range $j, $res := ((index ($.Values.graphs | default dict) . | default dict).spec | default dict).resources | default list }}
{{- with $res.externalRef }}
{{- $where := printf "graphs[%q] spec.resources[%d] (id %s) externalRef" $file $j ($res.id | default "?") }}
{{- $gk := include "resyncd.templateKind" (dict "template" . "where" $where) }}
{{- $group := "" }}
{{- if contains "/" (toString .apiVersion) }}{{ $group = first (splitList "/" (toString .apiVersion)) }}{{ end }}
{{- $resource := index $kinds.namespaced $gk | default (index $custom $gk) }}
{{- if not $resource }}
{{- fail (printf "%s: kind %s (%s) is not a namespaced built-in kind the chart knows: give its resource, the plural the API server serves (kubectl api-resources), in rbac.customKinds: [{group: %s, kind: %s, resource: ...}]" $where .kind .apiVersion ($group | quote) .kind) }}
{{- end }}
{{- $md := .metadata | default dict }}
{{- $ns := toString ($md.namespace | default "") }}
{{- $targets := list }}
{{- if or (not $r.namespaces) (eq (index $kinds.unwritable $gk | default "") "cluster-scoped") (and (hasKey $md "selector") (not $ns)) }}
{{- $targets = list "" }}
{{- else if and $ns (not (contains "${" $ns)) }}
{{- $targets = list $ns }}
{{- else }}
{{- $targets = $r.namespaces }}
{{- if contains "${" $ns }}
{{- range $r.externalNamespaces | default list }}
{{- if regexMatch "[*?\\[]" . }}{{ $targets = append $targets "" }}{{ else }}{{ $targets = append $targets . }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- range $targets }}{{ $out = append $out (dict "ns" . "key" (printf "%s/%s" $group $resource)) }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- $out | toJson }}
{{- end }}

{{/*
The RBAC rules of the watched resources in one namespace, or of those that
watch every namespace (namespace ""): the parents, the children of their
renderers and graphs, Events.
*/}}
{{- define "resyncd.rules" -}}
{{- $seen := dict }}
{{- $children := dict }}
{{- $kinds := include "resyncd.kinds" .root | fromYaml }}
{{- range include "resyncd.resourcesHere" .root | fromJsonArray }}
{{- if or (and (eq $.namespace "") (not .namespaces)) (and $.namespace (has $.namespace (default list .namespaces))) }}
{{- include "resyncd.childResources" (dict "children" $children "resource" . "graphs" ($.root.Values.graphs | default dict) "kinds" $kinds "customKinds" ($.root.Values.rbac.customKinds | default list)) }}
{{- $key := printf "%s/%s" (.group | default "") .resource }}
{{- if not (hasKey $seen $key) }}
{{- $_ := set $seen $key true }}
- apiGroups: [{{ .group | default "" | quote }}]
  resources: [{{ .resource | quote }}]
  verbs: ["list"]
- apiGroups: [{{ .group | default "" | quote }}]
  resources: [{{ printf "%s/status" .resource | quote }}]
  verbs: ["patch"]
{{- end }}
{{- end }}
{{- end }}
{{- range include "resyncd.outsideGrants" .root | fromJsonArray }}
{{- if eq .ns $.namespace }}{{ $_ := set $children .key true }}{{ end }}
{{- end }}
{{- range $key := keys $children | sortAlpha }}
{{- $parts := splitList "/" $key }}
- apiGroups: [{{ first $parts | quote }}]
  resources: [{{ last $parts | quote }}]
  verbs: ["get", "list", "create", "patch", "delete"]
{{- end }}
{{- $reads := dict }}
{{- range include "resyncd.externalGrants" .root | fromJsonArray }}
{{- if and (eq .ns $.namespace) (not (hasKey $children .key)) }}{{ $_ := set $reads .key true }}{{ end }}
{{- end }}
{{- range $key := keys $reads | sortAlpha }}
{{- $parts := splitList "/" $key }}
- apiGroups: [{{ first $parts | quote }}]
  resources: [{{ last $parts | quote }}]
  verbs: ["get", "list"]
{{- end }}
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
