{{/*
Names, labels and the pieces every pod shares (image, Kafka settings, secrets, probes).
*/}}

{{- define "cerfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Release-scoped name prefix. At most 40 characters, so that "<prefix>-coordinator" and
the other component names stay within a 63-character DNS label.
*/}}
{{- define "cerfleet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "cerfleet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "cerfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cerfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cerfleet.labels" -}}
helm.sh/chart: {{ include "cerfleet.chart" . }}
{{ include "cerfleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: cerfleet
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: (dict "ctx" $ "component" "worker") */}}
{{- define "cerfleet.componentSelectorLabels" -}}
{{ include "cerfleet.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "cerfleet.componentLabels" -}}
{{ include "cerfleet.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "cerfleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "cerfleet.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "cerfleet.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* "true" when clients authenticate with SASL, empty otherwise. */}}
{{- define "cerfleet.sasl" -}}
{{- if hasPrefix "SASL_" .Values.kafka.securityProtocol -}}true{{- end -}}
{{- end -}}

{{/* "true" when clients talk TLS to the brokers, empty otherwise. */}}
{{- define "cerfleet.tls" -}}
{{- if has .Values.kafka.securityProtocol (list "SSL" "SASL_SSL") -}}true{{- end -}}
{{- end -}}

{{/* "true" when some TLS file comes from the existing Secret (and gets mounted). */}}
{{- define "cerfleet.tlsFiles" -}}
{{- $k := .Values.kafka.secretKeys -}}
{{- if and .Values.kafka.existingSecret (or $k.caCert $k.clientCert $k.clientKey) -}}true{{- end -}}
{{- end -}}

{{- define "cerfleet.tlsDir" -}}/etc/cerfleet/kafka-tls{{- end -}}

{{/*
librdkafka properties for every client, as the JSON CERFLEET_KAFKA takes. Secrets are
not in here: the password reaches the process through -X (see cerfleet.kafkaArgs).
*/}}
{{- define "cerfleet.kafkaProperties" -}}
{{- $k := .Values.kafka -}}
{{- $props := deepCopy $k.properties -}}
{{- $_ := set $props "security.protocol" $k.securityProtocol -}}
{{- if include "cerfleet.sasl" . -}}
{{- $_ := set $props "sasl.mechanism" $k.sasl.mechanism -}}
{{- end -}}
{{- if and $k.existingSecret $k.secretKeys.caCert -}}
{{- $_ := set $props "ssl.ca.location" (printf "%s/ca.crt" (include "cerfleet.tlsDir" .)) -}}
{{- end -}}
{{- if and $k.existingSecret $k.secretKeys.clientCert -}}
{{- $_ := set $props "ssl.certificate.location" (printf "%s/client.crt" (include "cerfleet.tlsDir" .)) -}}
{{- end -}}
{{- if and $k.existingSecret $k.secretKeys.clientKey -}}
{{- $_ := set $props "ssl.key.location" (printf "%s/client.key" (include "cerfleet.tlsDir" .)) -}}
{{- end -}}
{{- toJson $props -}}
{{- end -}}

{{/*
Fails rendering on combinations the schema cannot express.
*/}}
{{- define "cerfleet.validate" -}}
{{- $k := .Values.kafka -}}
{{- if include "cerfleet.sasl" . -}}
{{- if not $k.existingSecret -}}
{{- fail "kafka.securityProtocol SASL_* needs kafka.existingSecret holding the password" -}}
{{- end -}}
{{- if and (not $k.sasl.username) (not $k.secretKeys.saslUsername) -}}
{{- fail "SASL needs kafka.sasl.username or kafka.secretKeys.saslUsername" -}}
{{- end -}}
{{- if not $k.secretKeys.saslPassword -}}
{{- fail "SASL needs kafka.secretKeys.saslPassword" -}}
{{- end -}}
{{- end -}}
{{- if and (or $k.secretKeys.clientCert $k.secretKeys.clientKey) (not (and $k.secretKeys.clientCert $k.secretKeys.clientKey)) -}}
{{- fail "mutual TLS needs both kafka.secretKeys.clientCert and kafka.secretKeys.clientKey" -}}
{{- end -}}
{{- if and (include "cerfleet.tlsFiles" .) (not (include "cerfleet.tls" .)) -}}
{{- fail "TLS files are set in kafka.secretKeys but kafka.securityProtocol is not SSL or SASL_SSL" -}}
{{- end -}}
{{- $names := list -}}
{{- range .Values.queries -}}
{{- if has .name $names -}}
{{- fail (printf "queries: %q is listed twice" .name) -}}
{{- end -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- end -}}

{{/*
Environment shared by every cerfleet container: the FleetSettings fields. Container-
specific settings (group id, metrics port, ...) are added by each template.
*/}}
{{- define "cerfleet.fleetEnv" -}}
{{- $k := .Values.kafka -}}
- name: CERFLEET_BOOTSTRAP_SERVERS
  value: {{ $k.bootstrapServers | quote }}
- name: CERFLEET_KAFKA
  value: {{ include "cerfleet.kafkaProperties" . | quote }}
{{- with $k.consumer }}
- name: CERFLEET_CONSUMER
  value: {{ toJson . | quote }}
{{- end }}
{{- with $k.producer }}
- name: CERFLEET_PRODUCER
  value: {{ toJson . | quote }}
{{- end }}
- name: CERFLEET_REGISTRY_TOPIC
  value: {{ .Values.fleet.registryTopic | quote }}
- name: CERFLEET_KEYED_TOPIC_PREFIX
  value: {{ .Values.fleet.keyedTopicPrefix | quote }}
- name: CERFLEET_DEAD_LETTER_TOPIC
  value: {{ .Values.fleet.deadLetterTopic | quote }}
- name: CERFLEET_LOG_LEVEL
  value: {{ .Values.fleet.logLevel | quote }}
{{- if include "cerfleet.sasl" . }}
{{- if $k.sasl.username }}
- name: KAFKA_SASL_USERNAME
  value: {{ $k.sasl.username | quote }}
{{- else }}
- name: KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ $k.existingSecret }}
      key: {{ $k.secretKeys.saslUsername }}
{{- end }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $k.existingSecret }}
      key: {{ $k.secretKeys.saslPassword }}
{{- end }}
{{- end -}}

{{/*
SASL credentials as -X flags: Kubernetes expands $(VAR) in args from the container's
environment, so the password never appears in the pod spec, and unlike a JSON
CERFLEET_KAFKA value it needs no escaping whatever characters it holds.
*/}}
{{- define "cerfleet.kafkaArgs" -}}
{{- if include "cerfleet.sasl" . }}
- -X
- sasl.username=$(KAFKA_SASL_USERNAME)
- -X
- sasl.password=$(KAFKA_SASL_PASSWORD)
{{- end }}
{{- end -}}

{{- define "cerfleet.tlsVolumeMount" -}}
{{- if include "cerfleet.tlsFiles" . }}
- name: kafka-tls
  mountPath: {{ include "cerfleet.tlsDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{- define "cerfleet.tlsVolume" -}}
{{- if include "cerfleet.tlsFiles" . }}
{{- $k := .Values.kafka.secretKeys }}
- name: kafka-tls
  secret:
    secretName: {{ .Values.kafka.existingSecret }}
    # Readable by the pod's fsGroup, not by the world.
    defaultMode: 0440
    items:
      {{- if $k.caCert }}
      - key: {{ $k.caCert }}
        path: ca.crt
      {{- end }}
      {{- if $k.clientCert }}
      - key: {{ $k.clientCert }}
        path: client.crt
      {{- end }}
      {{- if $k.clientKey }}
      - key: {{ $k.clientKey }}
        path: client.key
      {{- end }}
{{- end }}
{{- end -}}

{{/* readOnlyRootFilesystem: the one writable place, for anything that wants a temp file. */}}
{{- define "cerfleet.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{- define "cerfleet.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/*
Probes on /healthz at the metrics port: 503 until the process has read the registry and
joined its group, then 200 unless it failed. One endpoint serves all three.
*/}}
{{- define "cerfleet.probes" -}}
{{- $p := .Values.probes -}}
startupProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: {{ $p.startup.periodSeconds }}
  timeoutSeconds: {{ $p.startup.timeoutSeconds }}
  failureThreshold: {{ $p.startup.failureThreshold }}
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: {{ $p.liveness.periodSeconds }}
  timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
  failureThreshold: {{ $p.liveness.failureThreshold }}
readinessProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: {{ $p.readiness.periodSeconds }}
  timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
  failureThreshold: {{ $p.readiness.failureThreshold }}
{{- end -}}

{{/* The backfill Job's pod spec (a Job's, or a CronJob's job template's). */}}
{{- define "cerfleet.backfillPod" -}}
{{- $b := .Values.backfill -}}
{{- $repository := default .Values.image.repository $b.image.repository -}}
{{- $tag := default (printf "%s-spark" .Chart.AppVersion) $b.image.tag -}}
# Never rather than OnFailure: each attempt keeps its own pod, and its log. A retried
# backfill publishes under a new run id; what consumers read of a failed one was never
# committed (per-task transactions).
restartPolicy: Never
serviceAccountName: {{ include "cerfleet.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.serviceAccount.automountServiceAccountToken }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
containers:
  - name: backfill
    # The image's `spark` target: the same cerfleet with a JRE and pyspark.
    image: {{ printf "%s:%s" $repository $tag | quote }}
    imagePullPolicy: {{ .Values.image.pullPolicy }}
    args:
      - backfill
      - --query
      - {{ $b.query | quote }}
      {{- if $b.archive }}
      - --archive
      - {{ $b.archive | quote }}
      {{- else }}
      - --from-kafka
      {{- end }}
      {{- with $b.since }}
      - --since
      - {{ . | quote }}
      {{- end }}
      {{- with $b.until }}
      - --until
      - {{ . | quote }}
      {{- end }}
      {{- with $b.output }}
      - --output
      - {{ . | quote }}
      - --mode
      - {{ $b.mode | quote }}
      {{- end }}
      {{- with $b.outputTopic }}
      - --output-topic
      - {{ . | quote }}
      {{- end }}
      - --master
      - {{ $b.master | quote }}
      {{- with $b.deployMode }}
      - --deploy-mode
      - {{ . | quote }}
      {{- end }}
      - --driver-memory
      - {{ $b.driverMemory | quote }}
      {{- with $b.executorMemory }}
      - --executor-memory
      - {{ . | quote }}
      {{- end }}
      {{- range $key, $value := $b.sparkConf }}
      - --spark-conf
      - {{ printf "%s=%v" $key $value | quote }}
      {{- end }}
      {{- range $b.extraArgs }}
      - {{ . | quote }}
      {{- end }}
      {{- include "cerfleet.kafkaArgs" . | nindent 6 }}
    env:
      {{- include "cerfleet.fleetEnv" . | nindent 6 }}
      # Shuffle and spill files: a volume of their own, as large as the data needs.
      - name: SPARK_LOCAL_DIRS
        value: /var/spark-local
    securityContext:
      {{- toYaml .Values.securityContext | nindent 6 }}
    resources:
      {{- toYaml $b.resources | nindent 6 }}
    volumeMounts:
      {{- include "cerfleet.tmpVolumeMount" . | nindent 6 }}
      - name: spark-local
        mountPath: /var/spark-local
      {{- with (include "cerfleet.tlsVolumeMount" . | trim) }}{{ . | nindent 6 }}{{ end }}
volumes:
  {{- include "cerfleet.tmpVolume" . | nindent 2 }}
  - name: spark-local
    emptyDir:
      sizeLimit: {{ $b.scratchSize }}
  {{- with (include "cerfleet.tlsVolume" . | trim) }}{{ . | nindent 2 }}{{ end }}
{{- end -}}
