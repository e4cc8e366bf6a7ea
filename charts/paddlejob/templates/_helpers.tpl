{{/*
Names. The operator looks its objects up by these names (the webhook
configurations it injects its CA into, the webhook Service its certificate
is for, the Secret it keeps the certificate in), and they match
config/default: one release per cluster.
*/}}
{{- define "paddlejob.name" -}}paddlejob-operator{{- end }}
{{- define "paddlejob.serviceAccountName" -}}paddlejob-operator{{- end }}
{{- define "paddlejob.webhookServiceName" -}}paddlejob-webhook-service{{- end }}
{{- define "paddlejob.certificateName" -}}paddlejob-webhook{{- end }}
{{- define "paddlejob.certificateSecretName" -}}paddlejob-webhook-cert-manager{{- end }}
{{- define "paddlejob.selfIssuedSecretName" -}}paddlejob-webhook-certs{{- end }}

{{- define "paddlejob.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels: the Deployment's pods and the Services' selectors. */}}
{{- define "paddlejob.selectorLabels" -}}
app.kubernetes.io/name: {{ include "paddlejob.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "paddlejob.labels" -}}
helm.sh/chart: {{ include "paddlejob.chart" . }}
{{ include "paddlejob.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "paddlejob.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/* The webhook is served with cert-manager's certificate. */}}
{{- define "paddlejob.certManager" -}}
{{- if and .Values.webhook.enabled .Values.webhook.certManager.enabled }}true{{ end }}
{{- end }}

{{/* The webhook is served with the certificate the operator issues. */}}
{{- define "paddlejob.selfIssued" -}}
{{- if and .Values.webhook.enabled (not .Values.webhook.certManager.enabled) }}true{{ end }}
{{- end }}
