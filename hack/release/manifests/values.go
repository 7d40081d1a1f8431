package manifests

import (
	"strings"

	"github.com/scaleplane/scaleplane/profile"
)

// EveryOption sets every value the chart has to something other than its
// default: the chart tests check each reached its object, the server
// dry-run test (hack/release/e2e) applies what it renders.
func EveryOption() map[string]any {
	profiles := []any{}
	for _, p := range profile.Samples() {
		profiles = append(profiles, map[string]any{
			"target":       map[string]any{"apiVersion": p.Target.APIVersion, "kind": p.Target.Kind, "resource": p.Target.Resource},
			"replicasPath": p.ReplicasPath, "scaleConfig": map[string]any{"path": p.ScaleConfig.Path},
		})
	}
	return map[string]any{
		"image":            map[string]any{"repository": "registry.example/scaleplane", "digest": "sha256:" + strings.Repeat("ab", 32), "pullPolicy": "Always"},
		"imagePullSecrets": []any{map[string]any{"name": "registry-credentials"}},
		"replicas":         3,
		"profiles":         profiles,
		"webhook": map[string]any{
			"timeoutSeconds":     5,
			"namespaceSelector":  map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"kube-system"}}}},
			"objectSelector":     map[string]any{"matchLabels": map[string]any{"scaleplane.io/managed": "true"}},
			"excludedNamespaces": []any{"kube-system", "ops"},
			"failurePolicy":      map[string]any{"mutate": "Fail", "validate": "Fail", "scale": "Ignore"},
		},
		"crds": map[string]any{"install": true, "keep": false},
		"autoscaler": map[string]any{"pollingIntervalSeconds": 30, "prometheusURL": "https://prometheus.monitoring.svc:9090",
			"queries":        map[string]any{"maxLength": 2048, "timeoutSeconds": 5},
			"externalScaler": map[string]any{"bindAddress": ":9090"}},
		"metricsStore": map[string]any{"scrapeIntervalSeconds": 10, "retentionSeconds": 3600, "maxSeries": 50000,
			"limits": map[string]any{"maxStoreBytes": 64 << 20, "sampleLimit": 20000, "labelLimit": 40, "maxSeriesPerNamespace": 5000}},
		"servers": map[string]any{"webhook": map[string]any{"maxInFlight": 200}},
		"certificates": map[string]any{"mode": "cert-manager", "certManager": map[string]any{
			"issuerRef":   map[string]any{"name": "platform-ca", "kind": "ClusterIssuer"},
			"ipAddresses": []any{"127.0.0.1"},
		}},
		"gitOps": map[string]any{"enabled": true},
		"rbac": map[string]any{"extraRules": []any{map[string]any{
			"apiGroups": []any{"apps"}, "resources": []any{"deployments"}, "verbs": []any{"get", "list", "watch"},
		}}},
		"resources":           map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "256Mi"}, "limits": map[string]any{"memory": "1Gi"}},
		"goMemLimit":          "700MiB",
		"podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": 2},
		"affinity": map[string]any{"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
			"topologyKey":   "kubernetes.io/hostname",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "scaleplane"}},
		}}}},
		"topologySpreadConstraints": []any{map[string]any{
			"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "scaleplane"}},
		}},
		"priorityClassName": "system-cluster-critical",
		"nodeSelector":      map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":       []any{map[string]any{"key": "CriticalAddonsOnly", "operator": "Exists"}},
		"podAnnotations":    map[string]any{"example.com/team": "platform"},
		"podLabels":         map[string]any{"example.com/tier": "control-plane"},
		"extraArgs":         []any{"--zap-log-level=debug"},
		"commonLabels":      map[string]any{"example.com/cost-center": "platform"},
		"serviceAccount":    map[string]any{"create": true, "name": "scaleplane-sa", "annotations": map[string]any{"iam.example.com/role": "scaleplane"}},
		"podSecurityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 65532, "fsGroup": 65532,
			"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		"securityContext": map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
			"capabilities": map[string]any{"drop": []any{"ALL"}}, "runAsNonRoot": true},
		"env":                  []any{map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy.example:3128"}},
		"leaderElection":       map[string]any{"enabled": true},
		"logging":              map[string]any{"level": "info"},
		"readinessProbe":       map[string]any{"httpGet": map[string]any{"path": "/readyz", "port": "probes"}, "periodSeconds": 3},
		"livenessProbe":        map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": "probes"}, "periodSeconds": 30},
		"strategy":             map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 0, "maxSurge": 2}},
		"revisionHistoryLimit": 3,
		"networkPolicy": map[string]any{"enabled": true,
			"metricsFrom": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}}},
		"extraObjects": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "{{ .Release.Name }}-extra", "namespace": "{{ .Release.Namespace }}"}, "data": map[string]any{"k": "v"}}},
		"global": map[string]any{"imageRegistry": "mirror.example"},
		"metrics": map[string]any{
			"certManager": map[string]any{"enabled": true},
			"serviceMonitor": map[string]any{"enabled": true, "interval": "15s", "labels": map[string]any{"release": "prometheus"},
				"prometheusServiceAccount": map[string]any{"name": "prometheus-k8s", "namespace": "monitoring"}},
			"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
			"dashboard":      map[string]any{"enabled": true, "labels": map[string]any{"grafana_dashboard": "1"}},
		},
	}
}
