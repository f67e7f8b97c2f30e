{{/*
Chart name, truncated to 63 characters (a DNS label).
*/}}
{{- define "convstream.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's resources: <release>-<chart>, or the release
name alone when it already contains the chart name.
*/}}
{{- define "convstream.fullname" -}}
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

{{/*
chart label: <name>-<version>.
*/}}
{{- define "convstream.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every resource.
*/}}
{{- define "convstream.labels" -}}
helm.sh/chart: {{ include "convstream.chart" . }}
{{ include "convstream.selectorLabels" . }}
app.kubernetes.io/version: {{ include "convstream.imageTag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: worker
app.kubernetes.io/part-of: convstream
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Selector labels: stable across upgrades, shared by the Deployment, Service,
PodDisruptionBudget and spread constraints.
*/}}
{{- define "convstream.selectorLabels" -}}
app.kubernetes.io/name: {{ include "convstream.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Name of the ServiceAccount the pods run as.
*/}}
{{- define "convstream.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "convstream.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Image tag: image.tag, or the chart's appVersion.
*/}}
{{- define "convstream.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/*
Name of the ConfigMap with the pipeline specs; empty when there is none.
*/}}
{{- define "convstream.pipelinesConfigMap" -}}
{{- if .Values.pipelinesExistingConfigMap }}
{{- .Values.pipelinesExistingConfigMap }}
{{- else if .Values.pipelines }}
{{- printf "%s-pipelines" (include "convstream.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
Full name of the bundled NATS chart's resources, computed the way that chart
does (its fullnameOverride, else <release>-nats or the release name).
*/}}
{{- define "convstream.natsFullname" -}}
{{- $nats := .Values.nats | default dict }}
{{- $override := get $nats "fullnameOverride" | default "" }}
{{- if $override }}
{{- $override | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := get $nats "nameOverride" | default "nats" }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
NATS URL given to the worker: natsConnection.url; else the bundled NATS
chart's Service when nats.enabled; else nats://nats:4222.
*/}}
{{- define "convstream.natsURL" -}}
{{- $nats := .Values.nats | default dict }}
{{- if .Values.natsConnection.url }}
{{- .Values.natsConnection.url }}
{{- else if get $nats "enabled" }}
{{- $ns := get $nats "namespaceOverride" | default "" }}
{{- if $ns }}
{{- printf "nats://%s.%s.svc:4222" (include "convstream.natsFullname" .) $ns }}
{{- else }}
{{- printf "nats://%s:4222" (include "convstream.natsFullname" .) }}
{{- end }}
{{- else }}
{{- print "nats://nats:4222" }}
{{- end }}
{{- end }}

{{/*
Fails rendering on contradictory values; renders nothing otherwise.
*/}}
{{- define "convstream.validate" -}}
{{- $c := .Values.natsConnection }}
{{- $auth := list }}
{{- if $c.credentials.existingSecret }}{{ $auth = append $auth "natsConnection.credentials" }}{{ end }}
{{- if $c.userPassword.existingSecret }}{{ $auth = append $auth "natsConnection.userPassword" }}{{ end }}
{{- if $c.token.existingSecret }}{{ $auth = append $auth "natsConnection.token" }}{{ end }}
{{- if gt (len $auth) 1 }}
{{- fail (printf "convstream: set at most one NATS authentication method, got %s" (join ", " $auth)) }}
{{- end }}
{{- if and $c.tls.existingSecret (or (and $c.tls.certKey (not $c.tls.keyKey)) (and $c.tls.keyKey (not $c.tls.certKey))) }}
{{- fail "convstream: natsConnection.tls.certKey and natsConnection.tls.keyKey go together: set both (mutual TLS) or neither" }}
{{- end }}
{{- if and $c.tls.existingSecret (not (or $c.tls.caKey $c.tls.certKey)) }}
{{- fail "convstream: natsConnection.tls.existingSecret is set but caKey, certKey and keyKey are all empty" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (lt (int .Values.autoscaling.maxReplicas) (int .Values.autoscaling.minReplicas)) }}
{{- fail "convstream: autoscaling.maxReplicas is below autoscaling.minReplicas" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (not (or .Values.autoscaling.targetCPUUtilizationPercentage .Values.autoscaling.targetMemoryUtilizationPercentage)) }}
{{- fail "convstream: autoscaling is enabled without a CPU or memory target" }}
{{- end }}
{{- if and .Values.pipelines .Values.pipelinesExistingConfigMap }}
{{- fail "convstream: set pipelines or pipelinesExistingConfigMap, not both" }}
{{- end }}
{{- range $name, $_ := .Values.pipelines }}
{{- if not (regexMatch "^[A-Za-z0-9_.-]{1,200}$" $name) }}
{{- fail (printf "convstream: pipeline name %q must match [A-Za-z0-9_.-]{1,200}: it becomes a file name" $name) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
convstream.bytes: a size value as a whole number of bytes, for the
worker's flags. Takes (dict "name" "worker.cacheBytes" "value" $v). A
size is a plain integer (YAML number or string) or a quantity in the
worker's flags' syntax (cmd/worker/testdata/sizes.tsv, which the chart's
TestSizeSyntax and the worker's TestSizes both read): decimal k, M, G, T,
P (also kB, KB, MB, GB, TB, PB) or binary Ki, Mi, Gi, Ti, Pi (also KiB,
MiB, GiB, TiB, PiB), as Kubernetes reads quantities, with a decimal point
allowed when the result is whole (1.5Gi). Anything else fails the render,
naming the value.
*/}}
{{- define "convstream.bytes" -}}
{{- $name := .name }}
{{- $v := .value }}
{{- $bad := printf "convstream: %s=%v is not a size: want bytes (e.g. 1048576) or a Kubernetes quantity such as 512Mi, 2Gi, 64Ki or 1G" $name $v }}
{{- if or (kindIs "float64" $v) (kindIs "int64" $v) (kindIs "int" $v) }}
{{- $f := float64 $v }}
{{- if or (lt $f 0.0) (ne (floor $f) $f) }}{{ fail $bad }}{{ end }}
{{- printf "%.0f" $f }}
{{- else if kindIs "string" $v }}
{{- $s := trim $v }}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?(B|k|kB|KB|M|MB|G|GB|T|TB|P|PB|Ki|KiB|Mi|MiB|Gi|GiB|Ti|TiB|Pi|PiB)?$" $s) }}{{ fail $bad }}{{ end }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $s }}
{{- $unit := trimPrefix $num $s | trimSuffix "B" }}
{{- $scale := dict "" 1 "k" 1000 "K" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "P" 1000000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "Pi" 1125899906842624 }}
{{- if contains "." $num }}
{{- $f := mulf (float64 $num) (get $scale $unit) }}
{{- if ne (floor $f) $f }}{{ fail $bad }}{{ end }}
{{- printf "%.0f" $f }}
{{- else }}
{{- mul (int64 $num) (get $scale $unit) }}
{{- end }}
{{- else }}
{{- fail $bad }}
{{- end }}
{{- end }}

{{/*
Command-line flags of the worker, one YAML list item a line. Limits and
replicas are always passed; optional JetStream settings only when set.
*/}}
{{- define "convstream.args" -}}
{{- $c := .Values.natsConnection }}
{{- $js := .Values.jetstream }}
{{- $w := .Values.worker }}
{{- $args := list }}
{{- $args = append $args (printf "--nats-url=%s" (include "convstream.natsURL" .)) }}
{{- $args = append $args (printf "--subject-prefix=%s" .Values.subjectPrefix) }}
{{- $args = append $args (printf "--http=0.0.0.0:%d" (int .Values.http.port)) }}
{{- if $c.credentials.existingSecret }}
{{- $args = append $args (printf "--nats-creds=/etc/convstream/nats/creds/%s" $c.credentials.key) }}
{{- end }}
{{- if $c.tls.existingSecret }}
{{- if $c.tls.caKey }}
{{- $args = append $args (printf "--nats-tls-ca=/etc/convstream/nats/tls/%s" $c.tls.caKey) }}
{{- end }}
{{- if $c.tls.certKey }}
{{- $args = append $args (printf "--nats-tls-cert=/etc/convstream/nats/tls/%s" $c.tls.certKey) }}
{{- $args = append $args (printf "--nats-tls-key=/etc/convstream/nats/tls/%s" $c.tls.keyKey) }}
{{- end }}
{{- end }}
{{- $args = append $args (printf "--stream-replicas=%d" (int $js.streamReplicas)) }}
{{- $args = append $args (printf "--bucket-replicas=%d" (int $js.bucketReplicas)) }}
{{- if ne (toString (default "" $js.streamMaxBytes)) "" }}{{ $args = append $args (printf "--stream-max-bytes=%s" (include "convstream.bytes" (dict "name" "jetstream.streamMaxBytes" "value" $js.streamMaxBytes))) }}{{ end }}
{{- with $js.streamMaxAge }}{{ $args = append $args (printf "--stream-max-age=%v" .) }}{{ end }}
{{- with $js.duplicateWindow }}{{ $args = append $args (printf "--duplicate-window=%v" .) }}{{ end }}
{{- with $js.placementCluster }}{{ $args = append $args (printf "--placement-cluster=%v" .) }}{{ end }}
{{- with $js.placementTags }}{{ $args = append $args (printf "--placement-tags=%s" (join "," .)) }}{{ end }}
{{- if gt (int $js.partitions) 0 }}{{ $args = append $args (printf "--partitions=%d" (int $js.partitions)) }}{{ end }}
{{- with $js.pinnedTTL }}{{ $args = append $args (printf "--pinned-ttl=%v" .) }}{{ end }}
{{- with $js.watchIdle }}{{ $args = append $args (printf "--watch-idle=%v" .) }}{{ end }}
{{- with $js.snapshotInterval }}{{ $args = append $args (printf "--snapshot-interval=%v" .) }}{{ end }}
{{- with $js.snapshotMaxInterval }}{{ $args = append $args (printf "--snapshot-max-interval=%v" .) }}{{ end }}
{{- if and (hasKey $js "headsConfirmedFrom") (ne (toString $js.headsConfirmedFrom) "") (ne (toString $js.headsConfirmedFrom) "<nil>") }}{{ $args = append $args (printf "--heads-confirmed-from=%s" (include "convstream.bytes" (dict "name" "jetstream.headsConfirmedFrom" "value" $js.headsConfirmedFrom))) }}{{ end }}
{{- with $js.storeStallLimit }}{{ $args = append $args (printf "--store-stall-limit=%v" .) }}{{ end }}
{{- if and (hasKey $js "checkpoints") (not $js.checkpoints) }}{{ $args = append $args "--checkpoints=false" }}{{ end }}
{{- if $js.reconcile }}{{ $args = append $args "--reconcile" }}{{ end }}
{{- $args = append $args (printf "--max-event-bytes=%s" (include "convstream.bytes" (dict "name" "worker.maxEventBytes" "value" $w.maxEventBytes))) }}
{{- $args = append $args (printf "--max-messages=%d" (int64 $w.maxMessages)) }}
{{- $args = append $args (printf "--max-snapshot-bytes=%s" (include "convstream.bytes" (dict "name" "worker.maxSnapshotBytes" "value" $w.maxSnapshotBytes))) }}
{{- $args = append $args (printf "--cache-conversations=%d" (int64 $w.cacheConversations)) }}
{{- $args = append $args (printf "--cache-bytes=%s" (include "convstream.bytes" (dict "name" "worker.cacheBytes" "value" $w.cacheBytes))) }}
{{- with $w.cacheIdle }}{{ $args = append $args (printf "--cache-idle=%v" .) }}{{ end }}
{{- with $w.cacheTTL }}{{ $args = append $args (printf "--cache-ttl=%v" .) }}{{ end }}
{{- if include "convstream.pipelinesConfigMap" . }}
{{- $args = append $args "--pipelines-dir=/etc/convstream/pipelines" }}
{{- end }}
{{- range $w.extraArgs }}{{ $args = append $args (toString .) }}{{ end }}
{{- toYaml $args }}
{{- end }}

{{/*
OTEL_RESOURCE_ATTRIBUTES: the pod's identity, the version, then the user's
attributes (sorted by key).
*/}}
{{- define "convstream.otelResourceAttributes" -}}
{{- $attrs := list "k8s.namespace.name=$(POD_NAMESPACE)" "k8s.pod.name=$(POD_NAME)" "k8s.node.name=$(NODE_NAME)" (printf "service.version=%s" (include "convstream.imageTag" .)) }}
{{- range $k, $v := .Values.otel.resourceAttributes }}
{{- $attrs = append $attrs (printf "%s=%v" $k $v) }}
{{- end }}
{{- join "," $attrs }}
{{- end }}

{{/*
The orchestrator's labels: a name of its own, so that no selector of the
workers finds its pods.
*/}}
{{- define "convstream.orchestratorSelectorLabels" -}}
app.kubernetes.io/name: {{ include "convstream.name" . }}-orchestrator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "convstream.orchestratorLabels" -}}
helm.sh/chart: {{ include "convstream.chart" . }}
{{ include "convstream.orchestratorSelectorLabels" . }}
app.kubernetes.io/version: {{ include "convstream.imageTag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: orchestrator
app.kubernetes.io/part-of: convstream
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
