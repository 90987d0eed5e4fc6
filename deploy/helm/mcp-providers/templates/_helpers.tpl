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

{{/* The variables the Redis password and URL reach the server by, from redis.existingSecret. */}}
{{- define "mcp-providers.redisPasswordEnv" -}}MCP_PROVIDERS_REDIS_PASSWORD{{- end }}
{{- define "mcp-providers.redisUrlEnv" -}}MCP_PROVIDERS_REDIS_URL{{- end }}

{{/* "true" when the chart writes a [cluster] table: redis.url, or the URL from redis.existingSecret. */}}
{{- define "mcp-providers.redisOn" -}}
{{- if or .Values.redis.url (and .Values.redis.existingSecret .Values.redis.urlKey) }}true{{ end }}
{{- end }}

{{/* The most replicas there may be: replicaCount, or autoscaling.maxReplicas. */}}
{{- define "mcp-providers.mostReplicas" -}}
{{- if .Values.autoscaling.enabled }}{{ int .Values.autoscaling.maxReplicas }}{{ else }}{{ int .Values.replicaCount }}{{ end }}
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "mcp-providers.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}{{ default (include "mcp-providers.fullname" .) .Values.serviceAccount.name }}{{ else }}{{ default "default" .Values.serviceAccount.name }}{{ end }}
{{- end }}

{{/*
The config file the chart writes: config.toml, plus the [cluster] table from `redis`. Refuses a
[cluster] table in both places (TOML forbids a table twice) and several replicas without Redis.
*/}}
{{- define "mcp-providers.configToml" -}}
{{- $toml := .Values.config.toml | default "" }}
{{- $hasCluster := regexMatch `(?m)^\s*\[cluster\]` $toml }}
{{- $redisOn := include "mcp-providers.redisOn" . }}
{{- $secret := .Values.redis.existingSecret }}
{{- if and (or .Values.redis.passwordKey .Values.redis.urlKey) (not $secret) }}
{{- fail "redis.passwordKey and redis.urlKey name keys of redis.existingSecret: set redis.existingSecret to the Secret's name" }}
{{- end }}
{{- if and $secret (not .Values.redis.passwordKey) (not .Values.redis.urlKey) }}
{{- fail "redis.existingSecret is set: name the key holding Redis's password (redis.passwordKey) or its whole URL (redis.urlKey)" }}
{{- end }}
{{- if and .Values.redis.url .Values.redis.urlKey }}
{{- fail "redis.url and redis.urlKey are both set: the URL comes from one place (leave redis.url empty to take it from the Secret)" }}
{{- end }}
{{- if and $redisOn $hasCluster }}
{{- fail "redis.url is set and config.toml has a [cluster] table too: keep one (the chart writes [cluster] from redis.url and redis.keyPrefix)" }}
{{- end }}
{{- $most := int (include "mcp-providers.mostReplicas" .) }}
{{- if and (gt $most 1) (not $redisOn) (not $hasCluster) }}
{{- fail (printf "replicaCount %d needs Redis to share live state: set redis.url and redis.keyPrefix (or a [cluster] table in config.toml, or replicaCount 1)" $most) }}
{{- end }}
{{- $toml | trimSuffix "\n" }}
{{- if $redisOn }}
{{- /* Credentials first: the other messages show the URL. */}}
{{- if contains "@" .Values.redis.url }}
{{- fail "redis.url carries credentials, and the chart's ConfigMap is not secret: put the password in a Secret (redis.existingSecret with redis.passwordKey)" }}
{{- end }}
{{- if and .Values.redis.url (not (regexMatch `^rediss?://` .Values.redis.url)) }}
{{- fail (printf "redis.url %q must start with redis:// or rediss:// (TLS)" .Values.redis.url) }}
{{- end }}
{{- if not (regexMatch `^[A-Za-z0-9_.:-]{1,64}$` (.Values.redis.keyPrefix | default "")) }}
{{- fail "redis.keyPrefix is required with redis.url (1-64 letters, digits, _ . : -): it names this deployment's keys and channel in Redis, another one for every other deployment on the same Redis (docs/deploy.md)" }}
{{- end }}
{{- if $toml }}{{ "\n" }}{{ end }}
[cluster]
{{- if .Values.redis.url }}
redis_url = {{ .Values.redis.url | quote }}
{{- else }}
redis_url_env = {{ include "mcp-providers.redisUrlEnv" . | quote }}
{{- end }}
{{- if and $secret .Values.redis.passwordKey }}
password_env = {{ include "mcp-providers.redisPasswordEnv" . | quote }}
{{- end }}
key_prefix = {{ .Values.redis.keyPrefix | quote }}
lease_seconds = {{ .Values.redis.leaseSeconds }}
{{- end }}
{{- end }}
