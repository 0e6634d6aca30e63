{{- define "mintlify-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mintlify-exporter.fullname" -}}
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

{{- define "mintlify-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mintlify-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mintlify-exporter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "mintlify-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The state directory: the gateway's job state and every organization's
analytics ledger (the requests sent in the last hour, so that a restarted
or crash-looping exporter does not spend its hour again). The root
filesystem is read-only, so it is always a volume: the gateway's claim, or
an emptyDir, which survives container restarts in the pod. Not with the
sandbox, whose simulated jobs and quota die with it (it keeps both in /tmp).
*/}}
{{- define "mintlify-exporter.stateVolume" -}}
{{- if not .Values.mintlify.sandbox }}true{{ end }}
{{- end }}

{{- define "mintlify-exporter.statePVC" -}}
{{- if and (include "mintlify-exporter.stateVolume" .) .Values.gateway.enabled .Values.gateway.persistence.enabled }}true{{ end }}
{{- end }}

{{- define "mintlify-exporter.pvcName" -}}
{{- default (printf "%s-state" (include "mintlify-exporter.fullname" .)) .Values.gateway.persistence.existingClaim }}
{{- end }}

{{- define "mintlify-exporter.scheme" -}}
{{- if .Values.webConfig.tls }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/*
The --config.file the values describe (config.projects), "" for the flag
route. Each organization's key is its Secret, mounted as a file under
/etc/mintlify_exporter/keys/NAME/ (never an environment variable); the
sandbox reads no key.
*/}}
{{- define "mintlify-exporter.configFile" -}}
{{- if .Values.config.projects }}
{{- if .Values.mintlify.projects }}
{{- fail "set config.projects (the configuration file) or mintlify.projects (flags), not both" }}
{{- end }}
{{- if not .Values.config.organizations }}
{{- fail "config.projects needs config.organizations: each with a name and the existingSecret holding its API key" }}
{{- end }}
organizations:
{{- range .Values.config.organizations }}
  - name: {{ required "config.organizations[].name is required" .name | quote }}
    {{- if $.Values.mintlify.sandbox }}
    api_key_env: MINTLIFY_API_KEY # the sandbox reads no key
    {{- else }}
    {{- $secret := required (printf "config.organizations: %s needs existingSecret, the Secret holding its API key" .name) .existingSecret }}
    api_key_file: {{ printf "/etc/mintlify_exporter/keys/%s/%s" .name (.secretKey | default "api-key") | quote }}
    {{- end }}
    {{- with .analytics_budget }}
    analytics_budget: {{ . }}
    {{- end }}
{{- end }}
projects:
  {{- toYaml .Values.config.projects | nindent 2 }}
{{- end }}
{{- end }}
