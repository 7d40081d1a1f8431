{{/* Names are fixed (scaleplane-...): the webhook configurations and
ClusterRoles are cluster-wide, so one installation per cluster, and the
objects are those of config/default. */}}

{{- define "scaleplane.labels" -}}
app.kubernetes.io/name: scaleplane
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- /* The ServiceAccount the pods run as: serviceAccount.name, or the
chart's own when empty. */ -}}
{{- /* The release's name for its cluster-wide objects (ClusterRoles and
their bindings, webhook configurations) and its owner (webhook.owner, the
lease, webhook entry names): fullnameOverride, default scaleplane. A second
release beside the first sets its own, in its own namespace, with
crds.install false (docs/production.md). */ -}}
{{- define "scaleplane.fullname" -}}
{{- $n := default "scaleplane" .Values.fullnameOverride -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $n) }}{{ fail (printf "fullnameOverride %q: use a DNS label (lower case letters, digits, '-'), at most 40 characters" $n) }}{{ end -}}
{{- if gt (len $n) 40 }}{{ fail (printf "fullnameOverride %q: at most 40 characters (it prefixes the webhook configuration names)" $n) }}{{ end -}}
{{- $n -}}
{{- end }}

{{- define "scaleplane.serviceAccountName" -}}
{{- default "scaleplane-controller-manager" .Values.serviceAccount.name -}}
{{- end }}

{{- define "scaleplane.selectorLabels" -}}
app.kubernetes.io/name: scaleplane
app.kubernetes.io/component: manager
{{- end }}

{{- define "scaleplane.image" -}}
{{- $img := .Values.image -}}
{{- $registry := default $img.registry (dig "imageRegistry" "" (default dict .Values.global)) -}}
{{- $repository := $img.repository -}}
{{- if $registry }}{{ $repository = printf "%s/%s" (trimSuffix "/" $registry) $img.repository }}{{ end -}}
{{- if $img.digest -}}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" $img.digest) -}}
{{- fail (printf "image.digest %q: write it as sha256:<64 hex digits>" $img.digest) -}}
{{- end -}}
{{- printf "%s@%s" $repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (default .Chart.AppVersion $img.tag) -}}
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

{{/* GOMEMLIMIT, the Go runtime's soft memory limit: goMemLimit when set,
else 80% of resources.limits.memory (in MiB, rounded, for a limit in Mi or
Gi; in KiB for Ki; in bytes for a limit in bytes, k, M or G), else nothing.
The Go heap is most of what the container is charged, not all of it
(stacks, runtime metadata, the binary's pages): from 80% on the garbage
collector works harder, before the kernel's OOM killer acts at the limit
(docs/design.md). */}}
{{- define "scaleplane.goMemLimit" -}}
{{- $mem := "" -}}
{{- with .Values.resources }}{{ with .limits }}{{ $mem = toString (default "" .memory) }}{{ end }}{{ end -}}
{{- if .Values.goMemLimit -}}
{{- .Values.goMemLimit -}}
{{- else if regexMatch "^[0-9]+Mi$" $mem -}}
{{- printf "%dMiB" (div (add (mul (trimSuffix "Mi" $mem | atoi) 8) 5) 10) -}}
{{- else if regexMatch "^[0-9]+Gi$" $mem -}}
{{- printf "%dMiB" (div (add (mul (trimSuffix "Gi" $mem | atoi) 8192) 5) 10) -}}
{{- else if regexMatch "^[0-9]+Ki$" $mem -}}
{{- printf "%dKiB" (div (mul (trimSuffix "Ki" $mem | atoi) 4) 5) -}}
{{- else if regexMatch "^[0-9]+$" $mem -}}
{{- printf "%d" (div (mul ($mem | atoi) 4) 5) -}}
{{- else if regexMatch "^[0-9]+[kMG]$" $mem -}}
{{- $unit := get (dict "k" 1000 "M" 1000000 "G" 1000000000) (substr (sub (len $mem) 1 | int) (len $mem) $mem) -}}
{{- printf "%d" (div (mul (substr 0 (sub (len $mem) 1 | int) $mem | atoi) $unit 4) 5) -}}
{{- else if $mem -}}
{{- fail (printf "resources.limits.memory %q: set goMemLimit (GOMEMLIMIT, about 80%% of the limit, e.g. 800MiB), or write the limit in Mi or Gi" $mem) -}}
{{- end -}}
{{- end }}

{{/* GitOps mode (gitOps.enabled): scaleplane writes no webhook
configuration or cert-manager object, so the chart holds them all; the
self-signed CA is made in the cluster and cannot be in them. */}}
{{- define "scaleplane.gitOps" -}}
{{- if .Values.gitOps.enabled -}}
{{- if not (include "scaleplane.certManager" .) -}}
{{- fail "gitOps.enabled needs certificates.mode: cert-manager: scaleplane would have to write its self-signed CA into the webhook configurations, which GitOps mode leaves to the chart" -}}
{{- end -}}
true
{{- end -}}
{{- end }}

{{/* A profile's webhook entry: its group (core for none), version,
resource, entry name and dispatcher path, as package webhooks names them. */}}
{{- define "scaleplane.entry" -}}
{{- $t := required "every profile needs target" .profile.target -}}
{{- $gv := splitList "/" (required "every profile needs target.apiVersion" $t.apiVersion) -}}
{{- $group := ternary "" (first $gv) (eq (len $gv) 1) -}}
{{- $version := last $gv -}}
{{- $resource := required "in GitOps mode every profile needs target.resource (the chart cannot ask the API server)" $t.resource -}}
{{- $g := default "core" $group -}}
group: {{ $group | quote }}
version: {{ $version }}
resource: {{ $resource }}
name: {{ printf "%s.%s.%s.%s.scaleplane.io" $resource $version $g (include "scaleplane.fullname" .root) }}
path: {{ printf "%s/%s/%s" $g $version $resource }}
{{- /* A built-in kind (no dot in its group, or a k8s.io group, as
profile.BuiltIn says) gets no webhook entry. */}}
builtIn: {{ or (not (contains "." $group)) (eq $group "k8s.io") (hasSuffix ".k8s.io" $group) }}
{{- end }}

{{/* What every entry shares: the Service, the policies, the selectors. */}}
{{- define "scaleplane.entryCommon" -}}
admissionReviewVersions: [v1]
clientConfig:
  service:
    name: scaleplane-webhook-service
    namespace: {{ .root.Release.Namespace }}
    path: {{ .path }}
    port: 443
failurePolicy: {{ .policy }}
matchPolicy: Equivalent
name: {{ .name }}
namespaceSelector: {{ include "scaleplane.namespaceSelector" .root | nindent 2 }}
objectSelector: {{ toYaml (default dict .root.Values.webhook.objectSelector) | nindent 2 }}
sideEffects: None
timeoutSeconds: {{ .root.Values.webhook.timeoutSeconds }}
{{- end }}

{{- define "scaleplane.rule" -}}
apiGroups: [{{ .e.group | quote }}]
apiVersions: [{{ .e.version }}]
operations: {{ toYaml .ops | nindent 2 }}
resources: [{{ .resource }}]
scope: "*"
{{- end }}

{{- /* The namespace selector of every entry, as webhooks.NamespaceSelector
makes it: the user's selector, then kubernetes.io/metadata.name NotIn the
excluded namespaces plus the release namespace (what the binary adds), then
the break-glass label. */ -}}
{{- define "scaleplane.namespaceSelector" -}}
{{- $s := deepCopy (default dict .Values.webhook.namespaceSelector) -}}
{{- $excluded := default list .Values.webhook.excludedNamespaces -}}
{{- if not (has .Release.Namespace $excluded) }}{{ $excluded = append $excluded .Release.Namespace }}{{ end -}}
{{- $exprs := default list $s.matchExpressions -}}
{{- $exprs = append $exprs (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" $excluded) -}}
{{- $exprs = append $exprs (dict "key" "scaleplane.io/admission" "operator" "NotIn" "values" (list "disabled")) -}}
{{- $_ := set $s "matchExpressions" $exprs -}}
{{- toYaml $s -}}
{{- end }}
