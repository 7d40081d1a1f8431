{{/* Names are fixed (scaleplane-...): the webhook configurations and
ClusterRoles are cluster-wide, so one installation per cluster, and the
objects are those of config/default. */}}

{{- define "scaleplane.labels" -}}
app.kubernetes.io/name: scaleplane
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{- define "scaleplane.selectorLabels" -}}
app.kubernetes.io/name: scaleplane
app.kubernetes.io/component: manager
{{- end }}

{{- define "scaleplane.image" -}}
{{- $img := .Values.image -}}
{{- if $img.digest -}}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" $img.digest) -}}
{{- fail (printf "image.digest %q: write it as sha256:<64 hex digits>" $img.digest) -}}
{{- end -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end }}

{{- define "scaleplane.certManager" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}true{{ else if eq .Values.certificates.mode "self-signed" }}{{ else -}}
{{- fail (printf "certificates.mode %q: use self-signed or cert-manager" .Values.certificates.mode) -}}
{{- end -}}
{{- end }}

{{/* The issuer of the chart's Certificates: the user's, or the CA Issuer
the chart bootstraps. */}}
{{- define "scaleplane.issuerRef" -}}
{{- if .Values.certificates.certManager.issuerRef -}}
{{- $ref := .Values.certificates.certManager.issuerRef -}}
name: {{ required "certificates.certManager.issuerRef.name is required" $ref.name }}
kind: {{ default "Issuer" $ref.kind }}
group: {{ default "cert-manager.io" $ref.group }}
{{- else -}}
name: scaleplane-ca-issuer
kind: Issuer
group: cert-manager.io
{{- end -}}
{{- end }}
