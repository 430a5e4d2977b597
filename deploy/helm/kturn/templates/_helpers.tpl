{{/*
Names and labels shared by the templates. Object names derive from the release name (release
"kturn": kturn-operator, kturn-config-discovery, kturn-auth); the Dataplane is always "default",
the name the operator looks for.
*/}}

{{- define "kturn.operator.name" -}}
{{ .Release.Name }}-operator
{{- end }}

{{- define "kturn.cds.name" -}}
{{ .Release.Name }}-config-discovery
{{- end }}

{{- define "kturn.auth.name" -}}
{{ .Release.Name }}-auth
{{- end }}

{{/* The config discovery address the dataplane pods and kturn-auth dial: the CDS Service. */}}
{{- define "kturn.cds.address" -}}
{{ include "kturn.cds.name" . }}.{{ .Release.Namespace }}.svc:{{ .Values.operator.cds.port }}
{{- end }}

{{- define "kturn.operator.image" -}}
{{ .Values.operator.image.repository }}:{{ .Values.operator.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "kturn.auth.image" -}}
{{ .Values.auth.image.repository }}:{{ .Values.auth.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "kturn.dataplane.image" -}}
{{ .Values.dataplane.image.repository }}:{{ .Values.dataplane.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Labels on every object of the release. */}}
{{- define "kturn.labels" -}}
app.kubernetes.io/name: kturn
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: kturn
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{/* Selector labels: never change them, a Deployment's selector is immutable. */}}
{{- define "kturn.operator.selectorLabels" -}}
app.kubernetes.io/name: kturn
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "kturn.auth.selectorLabels" -}}
app.kubernetes.io/name: kturn
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: auth
{{- end }}

{{/* The extra pod labels of the values (operator.podLabels, auth.podLabels) that name no label
the chart sets itself (kturn.labels and `own`): those select the pods, so they win. */}}
{{- define "kturn.podLabels" -}}
{{- $taken := merge (include "kturn.labels" .context | fromYaml) .own -}}
{{- $extra := dict -}}
{{- range $key, $value := .extra -}}
{{- if not (hasKey $taken $key) -}}
{{- $_ := set $extra $key ($value | toString) -}}
{{- end -}}
{{- end -}}
{{- if $extra -}}
{{- toYaml $extra -}}
{{- end -}}
{{- end }}
