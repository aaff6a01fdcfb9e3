{{/* The chart's name, overridable. */}}
{{- define "hoist.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of the release's objects: the release name, suffixed with the chart name unless it already contains it. */}}
{{- define "hoist.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "hoist.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hoist.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hoist.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "hoist.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: controller
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "hoist.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "hoist.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* image reference: repository[:tag][@digest]; the tag defaults to the chart's appVersion */}}
{{- define "hoist.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* which shard a controller Deployment's pods serve ("" for the default shard): part of each Deployment's selector, so no two select the same pods */}}
{{- define "hoist.shardLabel" -}}
hoist.rukpak.io/shard: {{ . | quote }}
{{- end -}}

{{/* the Secret holding the webhook secrets (keys github, gitlab, generic) */}}
{{- define "hoist.webhookSecret" -}}
{{- default (printf "%s-webhook" (include "hoist.fullname" .)) .Values.webhook.secretName -}}
{{- end -}}

{{/*
rbac.clusterAdmin=false: the core group's top-level resources the controller may write for
BundleDeployments without a ServiceAccount. Named one by one: "*" would hold every subresource too.
*/}}
{{- define "hoist.rbac.coreResources" -}}
["configmaps", "endpoints", "limitranges", "namespaces", "persistentvolumeclaims", "persistentvolumes", "pods", "podtemplates", "replicationcontrollers", "resourcequotas", "secrets", "serviceaccounts", "services"]
{{- end -}}

{{/*
rbac.clusterAdmin=false: the built-in API groups whose every resource (subresources included) the
controller may write, and rbac.extraApiGroups. Not the core group (its subresources hold exec,
attach, port-forward, proxies and token requests), authentication/authorization (reviews),
coordination (other controllers' Leases), internal.apiserver, storagemigration.
*/}}
{{- define "hoist.rbac.builtinGroups" -}}
{{- $groups := list "admissionregistration.k8s.io" "apiextensions.k8s.io" "apiregistration.k8s.io" "apps" "autoscaling" "batch" "certificates.k8s.io" "discovery.k8s.io" "flowcontrol.apiserver.k8s.io" "networking.k8s.io" "node.k8s.io" "policy" "rbac.authorization.k8s.io" "resource.k8s.io" "scheduling.k8s.io" "storage.k8s.io" -}}
{{- concat $groups (.Values.rbac.extraApiGroups | default list) | uniq | toJson -}}
{{- end -}}
