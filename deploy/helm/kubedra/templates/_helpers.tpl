{{/* The chart's name, and the release-qualified prefix of every namespaced and RBAC object's name. */}}
{{- define "kubedra.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kubedra.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "kubedra.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "kubedra.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "kubedra.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "kubedra.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component (driver, exporter): never change after install. */}}
{{- define "kubedra.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubedra.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "kubedra.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "kubedra.driverName" -}}{{ include "kubedra.fullname" . }}-driver{{- end }}

{{/* The DRA driver name the driver publishes under (spec.driver of its ResourceSlices, as NVIDIA's driver): the
admission policy lets the driver's pods write no other driver's slices. */}}
{{- define "kubedra.draDriver" -}}gpu.nvidia.com{{- end }}
{{- define "kubedra.exporterName" -}}{{ include "kubedra.fullname" . }}-exporter{{- end }}

{{/* The rules of the one ClusterRole in a deploy/ RBAC file (files/ links to it): one source for both. */}}
{{- define "kubedra.clusterRoleRules" -}}
{{- $rules := list }}
{{- range splitList "\n---\n" (.root.Files.Get .file) }}
{{- $doc := fromYaml . }}
{{- if eq (get $doc "kind") "ClusterRole" }}
{{- $rules = $doc.rules }}
{{- end }}
{{- end }}
{{- if not $rules }}
{{- fail (printf "%s holds no ClusterRole rules" .file) }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{/* The cluster's Kubernetes release as 1.NN, for the exporter's --kubernetes-version when kubedra knows it. */}}
{{- define "kubedra.exporterKubernetesVersion" -}}
{{- if .Values.exporter.kubernetesVersion }}
{{- .Values.exporter.kubernetesVersion }}
{{- else }}
{{- $release := printf "%s.%s" .Capabilities.KubeVersion.Major (trimSuffix "+" .Capabilities.KubeVersion.Minor) }}
{{- if has $release (list "1.34" "1.35" "1.36" "1.37") }}{{ $release }}{{ end }}
{{- end }}
{{- end }}
