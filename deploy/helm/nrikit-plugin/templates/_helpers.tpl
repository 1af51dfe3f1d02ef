{{/* The objects' name: nri-plugin-NAME, as the kustomize overlays name them. */}}
{{- define "nrikit-plugin.name" -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString .Values.plugin.name)) -}}
{{- fail "plugin.name must be a lower-case DNS label (the plugin's name)" -}}
{{- end -}}
{{- printf "nri-plugin-%s" .Values.plugin.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "nrikit-plugin.namespace" -}}
{{- default .Release.Namespace .Values.namespace -}}
{{- end -}}

{{/* The plugin index as two digits. */}}
{{- define "nrikit-plugin.index" -}}
{{- $i := int .Values.plugin.index -}}
{{- if or (lt $i 0) (gt $i 99) -}}
{{- fail "plugin.index must be 0-99" -}}
{{- end -}}
{{- printf "%02d" $i -}}
{{- end -}}

{{- define "nrikit-plugin.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "nrikit-plugin.labels" -}}
app.kubernetes.io/name: {{ include "nrikit-plugin.name" . }}
app.kubernetes.io/part-of: nrikit
app.kubernetes.io/component: nri-plugin
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "nrikit-plugin.selector" -}}
app.kubernetes.io/name: {{ include "nrikit-plugin.name" . }}
{{- end -}}
