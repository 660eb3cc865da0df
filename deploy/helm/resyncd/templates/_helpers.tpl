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
{{- range .Values.config.resources }}
{{- $in := or (not .clusters) (and $.Values.target.enabled (not $.Values.target.clusterName)) }}
{{- range .clusters }}{{ if has . $here }}{{ $in = true }}{{ end }}{{ end }}
{{- if $in }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- $out | toJson }}
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

{{/* Leader election: on with more than one replica, or when the config asks. */}}
{{- define "resyncd.leaderElection" -}}
{{- $le := default dict .Values.config.leaderElection }}
{{- if or (gt (int .Values.replicaCount) 1) $le.enabled }}true{{ end }}
{{- end }}

{{/*
The resyncd configuration: .Values.config with what the chart decides —
leader election, its Lease, the listen addresses, the log settings.
*/}}
{{- define "resyncd.config" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $le := deepCopy (default dict $cfg.leaderElection) }}
{{- $_ := set $le "enabled" (eq (include "resyncd.leaderElection" .) "true") }}
{{- $_ := set $le "namespace" .Release.Namespace }}
{{- $_ := set $le "leaseName" (include "resyncd.fullname" .) }}
{{- $_ := set $cfg "leaderElection" $le }}
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
{{- $clusters = append $clusters $c }}
{{- end }}
{{- $_ := set $cfg "clusters" $clusters }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/*
The child resources of one watched resource, added to the dict .children
as "group/resource": for the built-in httpservice renderer its kinds (as
desired.HTTPService.ChildTypes lists them), for a graph the kind of every
template in .Values.graphs, its resource guessed as kubectl guesses the
plural of a kind it does not know.
*/}}
{{- define "resyncd.childResources" -}}
{{- $children := .children }}
{{- if eq (.resource.renderer | default "") "httpservice" }}
{{- $_ := set $children "apps/deployments" true }}
{{- $_ := set $children "/services" true }}
{{- $_ := set $children "autoscaling/horizontalpodautoscalers" true }}
{{- end }}
{{- with .resource.graph }}
{{- $graph := index $.graphs . | default dict }}
{{- range (($graph.spec | default dict).resources | default list) }}
{{- $av := .template.apiVersion | default "" }}
{{- $group := "" }}
{{- if contains "/" $av }}{{ $group = first (splitList "/" $av) }}{{ end }}
{{- $kind := lower (.template.kind | default "") }}
{{- $plural := printf "%ss" $kind }}
{{- if hasSuffix "s" $kind }}{{ $plural = printf "%ses" $kind }}
{{- else if hasSuffix "y" $kind }}{{ $plural = printf "%sies" (trimSuffix "y" $kind) }}{{ end }}
{{- $_ := set $children (printf "%s/%s" $group $plural) true }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The namespaces of every watched resource, as a JSON list, when each lists
its own; an empty list when any watches all namespaces.
*/}}
{{- define "resyncd.watchedNamespaces" -}}
{{- $all := list }}
{{- $scoped := true }}
{{- range include "resyncd.resourcesHere" . | fromJsonArray }}
{{- if not .namespaces }}
{{- $scoped = false }}
{{- end }}
{{- range .namespaces }}
{{- $all = append $all . }}
{{- end }}
{{- end }}
{{- if $scoped }}
{{- $all | uniq | sortAlpha | toJson }}
{{- else }}
{{- list | toJson }}
{{- end }}
{{- end }}

{{/*
The RBAC rules of the watched resources in one namespace ("" for all):
the parents that watch it, the children of their renderers and graphs,
Events.
*/}}
{{- define "resyncd.rules" -}}
{{- $seen := dict }}
{{- $children := dict }}
{{- range include "resyncd.resourcesHere" .root | fromJsonArray }}
{{- if or (eq $.namespace "") (has $.namespace (default list .namespaces)) }}
{{- include "resyncd.childResources" (dict "children" $children "resource" . "graphs" ($.root.Values.graphs | default dict)) }}
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
{{- range $key := keys $children | sortAlpha }}
{{- $parts := splitList "/" $key }}
- apiGroups: [{{ first $parts | quote }}]
  resources: [{{ last $parts | quote }}]
  verbs: ["get", "list", "create", "patch", "delete"]
{{- end }}
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
