{{/* The chart's name, cut to 28 characters (see fullname). */}}
{{- define "mcp-providers.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 28 | trimSuffix "-" }}
{{- end }}

{{/*
The release's object names. At most 28 characters: a pod is <fullname>-<ordinal>, and its name is
the replica's name in its session ids (MCP_PROVIDERS_REPLICA), which the server takes up to 32.
*/}}
{{- define "mcp-providers.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 28 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 28 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 28 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcp-providers.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-providers.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mcp-providers.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "mcp-providers.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Where the config file is mounted, and its path ($MCP_PROVIDERS_CONFIG). */}}
{{- define "mcp-providers.configDir" -}}/etc/mcp-providers{{- end }}

{{/*
The config file the chart writes: config.toml, plus the [cluster] table from `redis`. Refuses a
[cluster] table in both places (TOML forbids a table twice) and several replicas without Redis.
*/}}
{{- define "mcp-providers.configToml" -}}
{{- $toml := .Values.config.toml | default "" }}
{{- $hasCluster := regexMatch `(?m)^\s*\[cluster\]` $toml }}
{{- if and .Values.redis.url $hasCluster }}
{{- fail "redis.url is set and config.toml has a [cluster] table too: keep one (the chart writes [cluster] from redis.url and redis.keyPrefix)" }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.redis.url) (not $hasCluster) }}
{{- fail (printf "replicaCount %d needs Redis to share live state: set redis.url and redis.keyPrefix (or a [cluster] table in config.toml, or replicaCount 1)" (int .Values.replicaCount)) }}
{{- end }}
{{- $toml | trimSuffix "\n" }}
{{- if .Values.redis.url }}
{{- /* Credentials first: the other messages show the URL. */}}
{{- if contains "@" .Values.redis.url }}
{{- fail "redis.url carries credentials, and the chart's ConfigMap is not secret: put the whole config in a Secret (config.existingSecret)" }}
{{- end }}
{{- if not (regexMatch `^rediss?://` .Values.redis.url) }}
{{- fail (printf "redis.url %q must start with redis:// or rediss:// (TLS)" .Values.redis.url) }}
{{- end }}
{{- if not (regexMatch `^[A-Za-z0-9_.:-]{1,64}$` (.Values.redis.keyPrefix | default "")) }}
{{- fail "redis.keyPrefix is required with redis.url (1-64 letters, digits, _ . : -): it names this deployment's keys and channel in Redis, another one for every other deployment on the same Redis (docs/deploy.md)" }}
{{- end }}
{{- if $toml }}{{ "\n" }}{{ end }}
[cluster]
redis_url = {{ .Values.redis.url | quote }}
key_prefix = {{ .Values.redis.keyPrefix | quote }}
lease_seconds = {{ .Values.redis.leaseSeconds }}
{{- end }}
{{- end }}
