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
The state directory: every organization's analytics snapshots with their
refresh times (served at once after a restart, and not walked again before
their interval), every organization's analytics ledger (the requests sent
in the last hour, so that a restarted or crash-looping exporter does not
spend its hour again) and the gateway's job state. The root filesystem is
read-only, so it is always a volume: the claim of persistence, or an
emptyDir, which survives container restarts in the pod but not a new pod.
Not with the sandbox, whose simulated data, jobs and quota die with it (it
keeps them in /tmp). With the cluster (cluster.redis.address) the
snapshots, the ledger and the job state are in Redis: the directory keeps
only what each pod counts for itself, on an emptyDir, and no claim is made,
on one replica as on several.
*/}}
{{- define "mintlify-exporter.stateVolume" -}}
{{- if not .Values.mintlify.sandbox }}true{{ end }}
{{- end }}

{{/*
persistence, with what is set under gateway.persistence (its name before
the claim held the analytics too) taking precedence, key by key: a release
that turned the claim off there keeps it off. As YAML: fromYaml it.
*/}}
{{- define "mintlify-exporter.persistence" -}}
{{- $p := deepCopy .Values.persistence -}}
{{- range $k, $v := (default dict .Values.gateway.persistence) }}{{ $_ := set $p $k $v }}{{ end -}}
{{- toYaml $p -}}
{{- end }}

{{- define "mintlify-exporter.statePVC" -}}
{{- $p := include "mintlify-exporter.persistence" . | fromYaml -}}
{{- if and (include "mintlify-exporter.stateVolume" .) $p.enabled (not (include "mintlify-exporter.redis" .)) }}true{{ end }}
{{- end }}

{{- define "mintlify-exporter.pvcName" -}}
{{- $p := include "mintlify-exporter.persistence" . | fromYaml -}}
{{- default (printf "%s-state" (include "mintlify-exporter.fullname" .)) $p.existingClaim }}
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
    {{- with .api_key_expires }}
    api_key_expires: {{ . | quote }}
    {{- end }}
{{- end }}
projects:
  {{- toYaml .Values.config.projects | nindent 2 }}
{{- include "mintlify-exporter.clusterSection" . }}
{{- end }}
{{- end }}

{{/*
"true" with more than one replica: they need the cluster (a shared Redis),
get a PodDisruptionBudget and are spread over nodes.
*/}}
{{- define "mintlify-exporter.replicated" -}}
{{- if gt (int .Values.replicaCount) 1 }}true{{ end }}
{{- end }}

{{/*
"true" when a Redis is configured: an address, or a Sentinel master name.
*/}}
{{- define "mintlify-exporter.redis" -}}
{{- if or .Values.cluster.redis.address .Values.cluster.redis.sentinel.masterName }}true{{ end }}
{{- end }}

{{/*
Refuses values that would start replicas without shared state, or cluster
settings the exporter would refuse at start (the pods would crash-loop).
*/}}
{{- define "mintlify-exporter.checkCluster" -}}
{{- $r := .Values.cluster.redis }}
{{- if lt (int .Values.replicaCount) 0 }}
{{- fail (printf "replicaCount=%v: want 0 or more" .Values.replicaCount) }}
{{- end }}
{{- if and (include "mintlify-exporter.replicated" .) (not (include "mintlify-exporter.redis" .)) }}
{{- fail (printf "replicaCount=%v needs cluster.redis.address: without a shared Redis each replica pays its analytics requests from a budget of its own, together spending the organization's 100 requests per hour several times over, and keeps its own state files; set cluster.redis.address to an existing Redis or Valkey (the chart installs none), or replicaCount=1" .Values.replicaCount) }}
{{- end }}
{{- /* The gateway on replicas: one runs it on the job state in Redis, the
others forward /api/ to it at the URL it advertises, by default
http://POD_IP:PORT (the pod's first non-loopback address and the listen
port), plain HTTP, which a TLS listener refuses. */}}
{{- if and (include "mintlify-exporter.replicated" .) .Values.gateway.enabled .Values.webConfig.tls }}
{{- fail (printf "replicaCount=%v with gateway.enabled and webConfig.tls: the replicas forward agent job requests to the one running the gateway over plain HTTP at its pod address (the exporter's default --cluster.advertise-url), which a TLS listener refuses; set replicaCount=1 (with the cluster the gateway keeps its jobs in Redis), or install the gateway as a release of its own with replicaCount=1 and the same cluster.redis settings beside the replicas" .Values.replicaCount) }}
{{- end }}
{{- if and (include "mintlify-exporter.redis" .) .Values.gateway.enabled (not .Values.cluster.forwardSecret.existingSecret) }}
{{- fail "gateway.enabled with cluster.redis.address needs cluster.forwardSecret.existingSecret: the replicas forward agent job requests only to one that proves it knows a secret they share outside Redis; create it (kubectl create secret generic mintlify-forward --from-literal=secret=\"$(head -c 32 /dev/urandom | base64)\") and name it here" }}
{{- end }}
{{- $s := $r.sentinel }}
{{- if and $r.address $s.masterName }}
{{- fail "cluster.redis.address and cluster.redis.sentinel.masterName: give one (with Sentinel the sentinels name the primary)" }}
{{- end }}
{{- if and $s.masterName (not $s.addresses) }}
{{- fail "cluster.redis.sentinel.masterName needs cluster.redis.sentinel.addresses: every sentinel's host:port" }}
{{- end }}
{{- range $s.addresses }}
{{- if not (regexMatch "^[^:/ ]+:[0-9]+$|^\\[[0-9a-fA-F:.]+\\]:[0-9]+$" .) }}
{{- fail (printf "cluster.redis.sentinel.addresses: %q: want host:port" .) }}
{{- end }}
{{- end }}
{{- if not (include "mintlify-exporter.redis" .) }}
{{- if or $r.username $r.passwordSecret.name $r.tls.enabled $r.tls.caSecret.name $r.tls.clientCertSecret.name $r.tls.serverName $r.tls.insecureSkipVerify $s.addresses $s.username $s.passwordSecret.name }}
{{- fail "cluster.redis settings without cluster.redis.address: set the address (host:port) of the Redis or Valkey, or leave the other cluster.redis settings out" }}
{{- end }}
{{- else if $r.address }}
{{- if not (regexMatch "^[^:/ ]+:[0-9]+$|^\\[[0-9a-fA-F:.]+\\]:[0-9]+$" $r.address) }}
{{- fail (printf "cluster.redis.address %q: want host:port" $r.address) }}
{{- end }}
{{- if and (not $r.tls.enabled) (or $r.tls.caSecret.name $r.tls.clientCertSecret.name $r.tls.serverName $r.tls.insecureSkipVerify) }}
{{- fail "cluster.redis.tls settings need cluster.redis.tls.enabled=true" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Where the cluster's secrets are mounted: the password file, the CA and the
client certificate ("" when not configured).
*/}}
{{- define "mintlify-exporter.redisPasswordFile" -}}
{{- with .Values.cluster.redis.passwordSecret }}{{ if .name }}/etc/mintlify_exporter/redis/{{ .key | default "password" }}{{ end }}{{ end }}
{{- end }}
{{- define "mintlify-exporter.sentinelPasswordFile" -}}
{{- with .Values.cluster.redis.sentinel.passwordSecret }}{{ if .name }}/etc/mintlify_exporter/redis-sentinel/{{ .key | default "password" }}{{ end }}{{ end }}
{{- end }}
{{- define "mintlify-exporter.forwardSecretFile" -}}
{{- if and (include "mintlify-exporter.redis" .) .Values.gateway.enabled }}{{ with .Values.cluster.forwardSecret }}{{ if .existingSecret }}/etc/mintlify_exporter/forward/{{ .key | default "secret" }}{{ end }}{{ end }}{{ end }}
{{- end }}
{{- define "mintlify-exporter.redisCAFile" -}}
{{- with .Values.cluster.redis.tls.caSecret }}{{ if .name }}/etc/mintlify_exporter/redis-ca/{{ .key | default "ca.crt" }}{{ end }}{{ end }}
{{- end }}
{{- define "mintlify-exporter.redisCertFile" -}}
{{- with .Values.cluster.redis.tls.clientCertSecret }}{{ if .name }}/etc/mintlify_exporter/redis-client/{{ .certKey | default "tls.crt" }}{{ end }}{{ end }}
{{- end }}
{{- define "mintlify-exporter.redisKeyFile" -}}
{{- with .Values.cluster.redis.tls.clientCertSecret }}{{ if .name }}/etc/mintlify_exporter/redis-client/{{ .keyKey | default "tls.key" }}{{ end }}{{ end }}
{{- end }}

{{/*
The configuration file's cluster: section (the config route), the same
settings as the --cluster.redis-* flags of the flag route.
*/}}
{{- define "mintlify-exporter.clusterSection" -}}
{{- $r := .Values.cluster.redis }}
{{- if include "mintlify-exporter.redis" . }}
cluster:
  {{- with $r.address }}
  address: {{ . | quote }}
  {{- end }}
  {{- with $r.sentinel.masterName }}
  sentinel:
    master_name: {{ . | quote }}
    addresses: {{ toJson $r.sentinel.addresses }}
    {{- with $r.sentinel.username }}
    username: {{ . | quote }}
    {{- end }}
    {{- with include "mintlify-exporter.sentinelPasswordFile" $ }}
    password_file: {{ . | quote }}
    {{- end }}
  {{- end }}
  {{- if ne (toString $r.waitReplicas) "" }}
  wait_replicas: {{ int $r.waitReplicas }}
  {{- end }}
  {{- with $r.waitTimeout }}
  wait_timeout: {{ . | quote }}
  {{- end }}
  {{- with $r.username }}
  username: {{ . | quote }}
  {{- end }}
  {{- with include "mintlify-exporter.redisPasswordFile" . }}
  password_file: {{ . | quote }}
  {{- end }}
  {{- with include "mintlify-exporter.forwardSecretFile" . }}
  forward_secret_file: {{ . | quote }}
  {{- end }}
  {{- with $r.db }}
  db: {{ int . }}
  {{- end }}
  {{- with $r.keyPrefix }}
  key_prefix: {{ . | quote }}
  {{- end }}
  {{- with $r.timeout }}
  timeout: {{ . | quote }}
  {{- end }}
  {{- if $r.tls.enabled }}
  tls:
    enabled: true
    {{- with include "mintlify-exporter.redisCAFile" . }}
    ca_file: {{ . | quote }}
    {{- end }}
    {{- with include "mintlify-exporter.redisCertFile" . }}
    cert_file: {{ . | quote }}
    key_file: {{ include "mintlify-exporter.redisKeyFile" $ | quote }}
    {{- end }}
    {{- with $r.tls.serverName }}
    server_name: {{ . | quote }}
    {{- end }}
    {{- if $r.tls.insecureSkipVerify }}
    insecure_skip_verify: true
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}

{{/*
The same settings as --cluster.redis-* flags (the flag route), quoted: a
key prefix may end in a colon.
*/}}
{{- define "mintlify-exporter.clusterArgs" -}}
{{- $r := .Values.cluster.redis }}
{{- if include "mintlify-exporter.redis" . }}
{{- with $r.address }}
- {{ printf "--cluster.redis-address=%s" . | quote }}
{{- end }}
{{- with $r.sentinel.masterName }}
- {{ printf "--cluster.redis-sentinel-master-name=%s" . | quote }}
{{- range $r.sentinel.addresses }}
- {{ printf "--cluster.redis-sentinel-address=%s" . | quote }}
{{- end }}
{{- with $r.sentinel.username }}
- {{ printf "--cluster.redis-sentinel-username=%s" . | quote }}
{{- end }}
{{- with include "mintlify-exporter.sentinelPasswordFile" $ }}
- {{ printf "--cluster.redis-sentinel-password-file=%s" . | quote }}
{{- end }}
{{- end }}
{{- if ne (toString $r.waitReplicas) "" }}
- {{ printf "--cluster.redis-wait-replicas=%d" (int $r.waitReplicas) | quote }}
{{- end }}
{{- with $r.waitTimeout }}
- {{ printf "--cluster.redis-wait-timeout=%s" . | quote }}
{{- end }}
{{- with $r.username }}
- {{ printf "--cluster.redis-username=%s" . | quote }}
{{- end }}
{{- with include "mintlify-exporter.redisPasswordFile" . }}
- {{ printf "--cluster.redis-password-file=%s" . | quote }}
{{- end }}
{{- with include "mintlify-exporter.forwardSecretFile" . }}
- {{ printf "--cluster.forward-secret-file=%s" . | quote }}
{{- end }}
{{- with $r.db }}
- {{ printf "--cluster.redis-db=%d" (int .) | quote }}
{{- end }}
{{- with $r.keyPrefix }}
- {{ printf "--cluster.redis-key-prefix=%s" . | quote }}
{{- end }}
{{- with $r.timeout }}
- {{ printf "--cluster.redis-timeout=%s" . | quote }}
{{- end }}
{{- if $r.tls.enabled }}
- --cluster.redis-tls
{{- with include "mintlify-exporter.redisCAFile" . }}
- {{ printf "--cluster.redis-tls-ca-file=%s" . | quote }}
{{- end }}
{{- with include "mintlify-exporter.redisCertFile" . }}
- {{ printf "--cluster.redis-tls-cert-file=%s" . | quote }}
- {{ printf "--cluster.redis-tls-key-file=%s" (include "mintlify-exporter.redisKeyFile" $) | quote }}
{{- end }}
{{- with $r.tls.serverName }}
- {{ printf "--cluster.redis-tls-server-name=%s" . | quote }}
{{- end }}
{{- if $r.tls.insecureSkipVerify }}
- --cluster.redis-tls-insecure-skip-verify
{{- end }}
{{- end }}
{{- end }}
{{- end }}
