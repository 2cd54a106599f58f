{{/*
The manager's image: the tag defaults to the chart's appVersion, so a chart release pins the
image it was tested with.
*/}}
{{- define "pykueue.image" -}}
{{- $image := .Values.controllerManager.manager.image -}}
{{ $image.repository }}:{{ $image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/*
The Configuration pykueue reads: Kueue's whole-file string when given, else the managerConfig
fields; then the fields that must agree with the pods, Services and certificates of this chart.
*/}}
{{- define "pykueue.configuration" -}}
{{- $mc := .Values.managerConfig -}}
{{- $config := dict -}}
{{- if $mc.controllerManagerConfigYaml -}}
{{- $config = fromYaml $mc.controllerManagerConfigYaml -}}
{{- if hasKey $config "Error" -}}
{{- fail (printf "managerConfig.controllerManagerConfigYaml is not a YAML map: %s" (get $config "Error")) -}}
{{- end -}}
{{- else -}}
{{- $config = omit (deepCopy $mc) "controllerManagerConfigYaml" -}}
{{- end -}}
{{- /* A pasted v1beta1 file keeps its version: its fields mean what they meant there. */ -}}
{{- $config = merge $config (dict "apiVersion" "config.kueue.x-k8s.io/v1beta2" "kind" "Configuration") -}}
{{- $_ := set $config "namespace" "pykueue-system" -}}
{{- $_ = set $config "health" (mergeOverwrite (get $config "health" | default dict)
      (dict "healthProbeBindAddress" ":8081")) -}}
{{- $_ = set $config "metrics" (mergeOverwrite (get $config "metrics" | default dict)
      (dict "bindAddress" ":8443")) -}}
{{- $_ = set $config "webhook" (mergeOverwrite (get $config "webhook" | default dict)
      (dict "port" 9443 "certDir" "/tmp/k8s-webhook-server/serving-certs")) -}}
{{- $_ = set $config "internalCertManagement" (dict "enable" true
      "webhookServiceName" "pykueue-webhook-service" "webhookSecretName" "pykueue-webhook-server-cert") -}}
{{- $_ = set $config "visibilityServer" (mergeOverwrite (get $config "visibilityServer" | default dict)
      (dict "bindPort" 8082)) -}}
{{- if .Values.dashboard.enabled -}}
{{- $_ = set $config "dashboard" (dict "bindAddress" (printf ":%d" (int .Values.dashboard.port))) -}}
{{- else -}}
{{- $_ = unset $config "dashboard" -}}
{{- end -}}
{{- /* Kueue's own default, written out as manifests/ write it. */ -}}
{{- if not (hasKey $config "managedJobsNamespaceSelector") -}}
{{- $_ = set $config "managedJobsNamespaceSelector" (dict "matchExpressions" (list (dict
      "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" (list "kube-system" "pykueue-system")))) -}}
{{- end -}}
{{- with .Values.controllerManager.featureGates -}}
{{- $gates := get $config "featureGates" | default dict -}}
{{- range . -}}
{{- $_ = set $gates .name .enabled -}}
{{- end -}}
{{- $_ = set $config "featureGates" $gates -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{/* nodeSelector, affinity, tolerations and the like of a pod spec, from one values map. */}}
{{- define "pykueue.placement" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .affinity }}
affinity:
  {{- toYaml .affinity | nindent 2 }}
{{- else if .spreadLabels }}
{{- /* No affinity given: replicas prefer different nodes (a one-node cluster still runs them). */}}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- toYaml .spreadLabels | nindent 12 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
