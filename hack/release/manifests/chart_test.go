package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func render(t testing.TB, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	c, err := LoadChart(filepath.Join(repoRoot(t), ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := RenderChart(c, values, Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestChartLint runs Helm's linter (Chart.yaml, values against
// values.schema.json, every template rendered and parsed) with the default
// values and with every option set.
func TestChartLint(t *testing.T) {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range map[string]map[string]any{"defaults": nil, "every option": EveryOption()} {
		t.Run(name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(filepath.Join(repoRoot(t), ChartDir), values, Namespace, kv)
			var msgs []string
			for _, m := range l.Messages {
				msgs = append(msgs, m.Error())
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m.Error())
				}
			}
			t.Logf("helm lint: %d messages (%d info): %v", len(l.Messages), len(msgs), msgs)
		})
	}
}

// TestChartDefaultsAreConfigDefault: with default values the
// chart installs config/default's objects. Compared after dropping Helm's
// labels; the intended differences, normalized here, are:
//   - the Namespace: config/default creates it, the chart leaves it to
//     `helm install --create-namespace` (Helm would otherwise delete the
//     namespace, and everything in it, on uninstall);
//   - the configuration's ConfigMap is scaleplane-config-<content hash>
//     in kustomize and scaleplane-config plus a checksum annotation on the
//     pod template in the chart (both roll the pods when it changes); its
//     content is compared after decoding, as scaleplane reads it;
//   - the image: kustomize's placeholder tag :latest, the chart's
//     appVersion; `make release` pins both by digest;
//   - the CRDs' helm.sh/resource-policy: keep (crds.keep), which only
//     means something to helm uninstall.
func TestChartDefaultsAreConfigDefault(t *testing.T) {
	kobjs, err := Kustomize(filepath.Join(repoRoot(t), DefaultDir))
	if err != nil {
		t.Fatal(err)
	}
	hobjs := render(t, nil)
	want := normalize(t, kobjs, "kustomize")
	got := normalize(t, hobjs, "chart")
	if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
		t.Errorf("objects (-config/default +chart):\n%s", diff)
	}
	for k, w := range want {
		if g, ok := got[k]; ok {
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("%s (-config/default +chart):\n%s", k, diff)
			}
		}
	}
	t.Logf("%d objects equal: %v", len(want), keys(want))
}

var hashSuffix = regexp.MustCompile(`^(scaleplane-config)-[a-z0-9]{10}$`)

// normalize keys objects by kind/namespace/name and removes the intended
// differences listed on TestChartDefaultsAreConfigDefault.
func normalize(t *testing.T, objs []*unstructured.Unstructured, source string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		o = o.DeepCopy()
		if o.GetKind() == "Namespace" {
			continue
		}
		labels := o.GetLabels()
		for _, helm := range []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"} {
			delete(labels, helm)
		}
		o.SetLabels(labels)
		if m := hashSuffix.FindStringSubmatch(o.GetName()); m != nil && o.GetKind() == "ConfigMap" {
			o.SetName(m[1])
		}
		switch o.GetKind() {
		case "ConfigMap":
			if o.GetName() == "scaleplane-config" {
				data, _, _ := unstructured.NestedString(o.Object, "data", "scaleplane-config.yaml")
				c, _, err := configv1alpha2.Parse([]byte(data))
				if err != nil {
					t.Fatalf("%s configuration does not load: %v", source, err)
				}
				o.Object["data"] = map[string]any{"scaleplane-config.yaml": fmt.Sprintf("%+v", *c)}
			}
		case "CustomResourceDefinition":
			// crds.keep: the chart keeps its CRDs on uninstall; kustomize
			// has no uninstall to keep them from.
			annotations := o.GetAnnotations()
			delete(annotations, "helm.sh/resource-policy")
			o.SetAnnotations(annotations)
		case "Deployment":
			unstructured.RemoveNestedField(o.Object, "spec", "template", "metadata", "annotations", "checksum/config")
			if ann, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "metadata", "annotations"); len(ann) == 0 {
				unstructured.RemoveNestedField(o.Object, "spec", "template", "metadata", "annotations")
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				c.(map[string]any)["image"] = "IMAGE"
			}
			_ = unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
			volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			for _, v := range volumes {
				if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
					if m := hashSuffix.FindStringSubmatch(fmt.Sprint(cm["name"])); m != nil {
						cm["name"] = m[1]
					}
				}
			}
			_ = unstructured.SetNestedSlice(o.Object, volumes, "spec", "template", "spec", "volumes")
		}
		if len(o.GetLabels()) == 0 {
			unstructured.RemoveNestedField(o.Object, "metadata", "labels")
		}
		out[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o.Object
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestChartEveryOption renders every option and checks that
// each reached the object it is for.
func TestChartEveryOption(t *testing.T) {
	objs := render(t, EveryOption())
	dep := Find(objs, "Deployment", ManagerName)
	if dep == nil {
		t.Fatalf("no Deployment in %v", Kinds(objs))
	}
	spec := func(path ...string) any {
		v, _, _ := unstructured.NestedFieldNoCopy(dep.Object, append([]string{"spec", "template", "spec"}, path...)...)
		return v
	}
	container := spec("containers").([]any)[0].(map[string]any)
	checks := map[string][2]any{
		"replicas":          {int64(3), dep.Object["spec"].(map[string]any)["replicas"]},
		"image":             {"mirror.example/registry.example/scaleplane@sha256:" + strings.Repeat("ab", 32), container["image"]},
		"pull policy":       {"Always", container["imagePullPolicy"]},
		"priority class":    {"system-cluster-critical", spec("priorityClassName")},
		"node selector":     {map[string]any{"kubernetes.io/os": "linux"}, spec("nodeSelector")},
		"resources":         {map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "256Mi"}, "limits": map[string]any{"memory": "1Gi"}}, container["resources"]},
		"GOMEMLIMIT":        {"700MiB", envValue(container, "GOMEMLIMIT")},
		"topology spread":   {"DoNotSchedule", spec("topologySpreadConstraints").([]any)[0].(map[string]any)["whenUnsatisfiable"]},
		"anti-affinity":     {true, spec("affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution") != nil},
		"tolerations":       {"CriticalAddonsOnly", spec("tolerations").([]any)[0].(map[string]any)["key"]},
		"pod label":         {"control-plane", nested(dep, "spec", "template", "metadata", "labels", "example.com/tier")},
		"pod annotation":    {"platform", nested(dep, "spec", "template", "metadata", "annotations", "example.com/team")},
		"args":              {[]any{"--config=/etc/scaleplane/scaleplane-config.yaml", "--leader-elect", "--zap-log-level=info", "--cert-mode=cert-manager", "--cert-manager-issuer=ClusterIssuer/platform-ca", "--gitops", "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs", "--zap-log-level=debug"}, container["args"]},
		"PDB minAvailable":  {int64(2), nested(Find(objs, "PodDisruptionBudget", ManagerName), "spec", "minAvailable")},
		"webhook injection": {Namespace + "/scaleplane-serving-cert", Find(objs, "MutatingWebhookConfiguration", "scaleplane-mutating-webhook-configuration").GetAnnotations()["cert-manager.io/inject-ca-from"]},
		"serving issuer":    {"platform-ca", nested(Find(objs, "Certificate", "scaleplane-serving-cert"), "spec", "issuerRef", "name")},
		"serving IP SAN":    {[]any{"127.0.0.1"}, nested(Find(objs, "Certificate", "scaleplane-serving-cert"), "spec", "ipAddresses")},
		"metrics cert":      {"scaleplane-metrics-server-cert", nested(Find(objs, "Certificate", "scaleplane-metrics-cert"), "spec", "secretName")},
		"own issuers":       {true, Find(objs, "Issuer", "scaleplane-ca-issuer") == nil},
		"monitor interval":  {"15s", nested(Find(objs, "ServiceMonitor", ManagerName), "spec", "endpoints").([]any)[0].(map[string]any)["interval"]},
		"monitor CA":        {"scaleplane-metrics-server-cert", nested(Find(objs, "ServiceMonitor", ManagerName), "spec", "endpoints").([]any)[0].(map[string]any)["tlsConfig"].(map[string]any)["ca"].(map[string]any)["secret"].(map[string]any)["name"]},
		"reader binding":    {"prometheus-k8s", nested(Find(objs, "ClusterRoleBinding", "scaleplane-metrics-reader-prometheus"), "subjects").([]any)[0].(map[string]any)["name"]},
		"rule labels":       {"prometheus", Find(objs, "PrometheusRule", "scaleplane").GetLabels()["release"]},
		"dashboard":         {true, nested(Find(objs, "ConfigMap", "scaleplane-grafana-dashboard"), "data", "scaleplane.json") != nil},
		"CRDs not kept":     {nil, nested(Find(objs, "CustomResourceDefinition", "scalings.scaleplane.io"), "metadata", "annotations", "helm.sh/resource-policy")},
		"common label":      {"platform", dep.GetLabels()["example.com/cost-center"]},
		"service account":   {"scaleplane-sa", spec("serviceAccountName")},
		"SA annotation":     {"scaleplane", nested(Find(objs, "ServiceAccount", "scaleplane-sa"), "metadata", "annotations", "iam.example.com/role")},
		"SA bound":          {"scaleplane-sa", nested(Find(objs, "ClusterRoleBinding", "scaleplane-manager-rolebinding"), "subjects").([]any)[0].(map[string]any)["name"]},
		"pod fsGroup":       {int64(65532), spec("securityContext", "fsGroup")},
		"container user":    {true, container["securityContext"].(map[string]any)["runAsNonRoot"]},
		"proxy env":         {"http://proxy.example:3128", envValue(container, "HTTPS_PROXY")},
		"readiness period":  {int64(3), container["readinessProbe"].(map[string]any)["periodSeconds"]},
		"liveness period":   {int64(30), container["livenessProbe"].(map[string]any)["periodSeconds"]},
		"surge":             {int64(2), nested(dep, "spec", "strategy", "rollingUpdate", "maxSurge")},
		"history":           {int64(3), nested(dep, "spec", "revisionHistoryLimit")},
		"network policy":    {"monitoring", nested(Find(objs, "NetworkPolicy", ManagerName), "spec", "ingress").([]any)[1].(map[string]any)["from"].([]any)[0].(map[string]any)["namespaceSelector"].(map[string]any)["matchLabels"].(map[string]any)["kubernetes.io/metadata.name"]},
		"extra object":      {"v", nested(Find(objs, "ConfigMap", "scaleplane-extra"), "data", "k")},
	}
	checks["pull secrets"] = [2]any{[]any{map[string]any{"name": "registry-credentials"}}, nested(Find(objs, "ServiceAccount", "scaleplane-sa"), "imagePullSecrets")}
	for name, c := range checks {
		if diff := cmp.Diff(c[0], c[1]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	// The configuration carries every profile and setting.
	cm := Find(objs, "ConfigMap", "scaleplane-config")
	data, _, _ := unstructured.NestedString(cm.Object, "data", "scaleplane-config.yaml")
	cfg, _, err := configv1alpha2.Parse([]byte(data))
	if err != nil {
		t.Fatalf("rendered configuration does not load: %v\n%s", err, data)
	}
	gotCfg := map[string]any{
		"profiles": len(cfg.Profiles), "timeout": cfg.Webhook.TimeoutSeconds, "polling": cfg.Autoscaler.PollingIntervalSeconds,
		"prometheus": cfg.Autoscaler.PrometheusURL, "scrape": cfg.Metrics.ScrapeIntervalSeconds, "retention": cfg.Metrics.RetentionSeconds,
		"maxSeries": cfg.Metrics.MaxSeries, "nsSelector": cfg.Webhook.NamespaceSelector != nil, "objSelector": cfg.Webhook.ObjectSelector.MatchLabels["scaleplane.io/managed"],
		"maxLength": cfg.Autoscaler.Queries.MaxLength, "queryTimeout": cfg.Autoscaler.Queries.TimeoutSeconds, "externalScaler": cfg.Autoscaler.ExternalScaler.BindAddress,
		"maxStoreBytes": cfg.Metrics.MaxStoreBytes, "sampleLimit": cfg.Metrics.SampleLimit, "labelLimit": cfg.Metrics.LabelLimit, "perNamespace": cfg.Metrics.MaxSeriesPerNamespace,
		"webhookInFlight": cfg.Servers.Webhook.MaxInFlight,
		"excluded":        cfg.Webhook.ExcludedNamespaces, "failurePolicy": cfg.Webhook.FailurePolicy,
	}
	wantCfg := map[string]any{
		"profiles": 3, "timeout": int32(5), "polling": int32(30), "prometheus": "https://prometheus.monitoring.svc:9090",
		"scrape": int32(10), "retention": int32(3600), "maxSeries": 50000, "nsSelector": true, "objSelector": "true",
		"maxLength": 2048, "queryTimeout": int32(5), "externalScaler": ":9090",
		"maxStoreBytes": int64(64 << 20), "sampleLimit": 20000, "labelLimit": 40, "perNamespace": 5000,
		"webhookInFlight": int32(200),
		"excluded":        []string{"kube-system", "ops"}, "failurePolicy": configv1alpha2.FailurePolicies{Mutate: "Fail", Validate: "Fail", Scale: "Ignore"},
	}
	if diff := cmp.Diff(wantCfg, gotCfg); diff != "" {
		t.Errorf("configuration (-want +got):\n%s", diff)
	}
	// Each profiled kind gets its four rules, then the extra rule.
	role := Find(objs, "ClusterRole", "scaleplane-profiled-kinds-role")
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var resources []string
	for _, r := range rules {
		for _, res := range r.(map[string]any)["resources"].([]any) {
			resources = append(resources, res.(string))
		}
	}
	wantRes := []string{
		"rackedclusters", "rackedclusters/status", "rackedclusters/scale", "rackedclusters/finalizers",
		"samplefunctions", "samplefunctions/status", "samplefunctions/scale", "samplefunctions/finalizers",
		"workergroups", "workergroups/status", "workergroups/scale", "workergroups/finalizers",
		"deployments",
	}
	if diff := cmp.Diff(wantRes, resources); diff != "" {
		t.Errorf("profiled kinds' rules (-want +got):\n%s", diff)
	}
	t.Logf("every option: %d objects: %v", len(objs), Kinds(objs))
}

// envValue is the value of a container's environment variable, nil when
// it has none.
func envValue(container map[string]any, name string) any {
	env, _ := container["env"].([]any)
	for _, e := range env {
		if m := e.(map[string]any); m["name"] == name {
			return m["value"]
		}
	}
	return nil
}

// TestChartGoMemLimit: without goMemLimit, the chart sets GOMEMLIMIT
// to 80% of resources.limits.memory, as config/manager does for its 512Mi
// (410MiB), in whatever unit the limit is written; no limit, no GOMEMLIMIT;
// a limit it cannot read fails the render saying to set goMemLimit.
func TestChartGoMemLimit(t *testing.T) {
	c, err := LoadChart(filepath.Join(repoRoot(t), ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		limit any
		want  any
	}{
		{"512Mi", "410MiB"},
		{"1Gi", "819MiB"},
		{"2Gi", "1638MiB"},
		{"300Mi", "240MiB"},
		{"524288Ki", "419430KiB"},
		{"536870912", "429496729"},
		{"512M", "409600000"},
		{"1G", "800000000"},
		{nil, nil},
		{"0.5Gi", "error: set goMemLimit"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			// A null removes the default's limit.
			limits := map[string]any{"memory": tc.limit}
			objs, err := RenderChart(c, map[string]any{"resources": map[string]any{"limits": limits}}, Namespace)
			var got any
			if err != nil {
				got = "error: " + err.Error()
				if s := got.(string); strings.Contains(s, "set goMemLimit") {
					got = "error: set goMemLimit"
				}
			} else {
				dep := Find(objs, "Deployment", ManagerName)
				containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
				got = envValue(containers[0].(map[string]any), "GOMEMLIMIT")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GOMEMLIMIT for a limit of %v (-want +got):\n%s", tc.limit, diff)
			}
		})
	}
}

func nested(o *unstructured.Unstructured, path ...string) any {
	if o == nil {
		return fmt.Sprintf("<no object for %v>", path)
	}
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	return v
}

// TestChartRefusesBadValues: values that cannot work fail the
// render with what to change, instead of installing something broken.
func TestChartRefusesBadValues(t *testing.T) {
	c, err := LoadChart(filepath.Join(repoRoot(t), ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"digest not a sha256", map[string]any{"image": map[string]any{"digest": "latest"}}, "/image/digest"},
		{"unknown certificate mode", map[string]any{"certificates": map[string]any{"mode": "letsencrypt"}}, "/certificates/mode"},
		{"no replica", map[string]any{"replicas": 0}, "replicas"},
		{"PDB blocking every drain", map[string]any{"replicas": 2, "podDisruptionBudget": map[string]any{"minAvailable": 2}}, "podDisruptionBudget.minAvailable"},
		{"profile without a resource", map[string]any{"profiles": []any{map[string]any{"target": map[string]any{"apiVersion": "example.com/v1", "kind": "Thing"}, "scaleConfig": map[string]any{"path": ".spec.scaleConfig"}}}}, "profiles"},
		{"webhook timeout above the API server's 30 s", map[string]any{"webhook": map[string]any{"timeoutSeconds": 31}}, "timeoutSeconds"},
		{"misspelt value", map[string]any{"replica": 3}, "replica"},
		{"issuerRef without a name", map[string]any{"certificates": map[string]any{"mode": "cert-manager", "certManager": map[string]any{"issuerRef": map[string]any{"kind": "ClusterIssuer"}}}}, "issuerRef"},
		{"GitOps mode with the self-signed CA", map[string]any{"gitOps": map[string]any{"enabled": true}}, "gitOps.enabled needs certificates.mode: cert-manager"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RenderChart(c, tc.values, Namespace)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render: %v; want an error naming %q", err, tc.want)
			}
			t.Logf("%v", err)
		})
	}
}

// TestMonitoringGolden keeps config/prometheus's copies of the
// chart's rules and dashboard equal to the chart's files (kustomize cannot
// read files outside its tree, Helm outside its chart). Regenerate with
// UPDATE_GOLDEN=1.
func TestMonitoringGolden(t *testing.T) {
	root := repoRoot(t)
	rules, err := os.ReadFile(filepath.Join(root, ChartDir, "files", "prometheus-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	body.WriteString("# Generated from config/helm/scaleplane/files/prometheus-rules.yaml; do not edit.\n" +
		"# Regenerate with: UPDATE_GOLDEN=1 go -C hack/release test ./manifests -run Golden\n" +
		"apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: scaleplane\n  namespace: scaleplane-system\n  labels:\n    app.kubernetes.io/name: scaleplane\nspec:\n")
	for _, line := range strings.Split(strings.TrimRight(string(rules), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if line == "" {
			body.WriteString("\n")
			continue
		}
		body.WriteString("  " + line + "\n")
	}
	dashboard, err := os.ReadFile(filepath.Join(root, ChartDir, "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"config/prometheus/prometheus_rule.yaml":   body.String(),
		"config/prometheus/grafana-dashboard.json": string(dashboard),
	} {
		path := filepath.Join(root, file)
		if os.Getenv("UPDATE_GOLDEN") != "" {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s differs from the chart's file; regenerate with UPDATE_GOLDEN=1 (-want +got):\n%s", file, diff)
		}
	}
	// And the PrometheusRule kustomize builds has the chart's spec.
	objs, err := Kustomize(filepath.Join(root, "config", "prometheus"))
	if err != nil {
		t.Fatal(err)
	}
	chartRule := Find(render(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}}), "PrometheusRule", "scaleplane")
	if diff := cmp.Diff(chartRule.Object["spec"], Find(objs, "PrometheusRule", "scaleplane").Object["spec"]); diff != "" {
		t.Errorf("PrometheusRule spec (-chart +config/prometheus):\n%s", diff)
	}
}

// TestChartCRDsKeptAndOptional: by default helm uninstall keeps
// scaleplane's CRDs (and so every ScaleProfile and Scaling); crds.install
// false leaves them out of the release altogether.
func TestChartCRDsKeptAndOptional(t *testing.T) {
	for _, name := range []string{"scalings.scaleplane.io", "scaleprofiles.scaleplane.io"} {
		crd := Find(render(t, nil), "CustomResourceDefinition", name)
		if crd == nil {
			t.Fatalf("default values: no CRD %s", name)
		}
		if got := crd.GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
			t.Errorf("default values: %s helm.sh/resource-policy %q, want keep", name, got)
		}
	}
	if crd := Find(render(t, map[string]any{"crds": map[string]any{"install": false}}), "CustomResourceDefinition", "scalings.scaleplane.io"); crd != nil {
		t.Errorf("crds.install false: the release still holds %s", crd.GetName())
	}
}

// TestChartSecondReleaseSideBySide: a second release (fullnameOverride, its
// own namespace, crds.install false, another kind) shares no cluster-wide
// object with the first; it owns its own webhook configurations and
// entries, its configuration names that owner (and so its own lease and
// ScaleProfiles), and its RBAC reaches its own configurations only.
func TestChartSecondReleaseSideBySide(t *testing.T) {
	c, err := LoadChart(filepath.Join(repoRoot(t), ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	first, err := RenderChart(c, map[string]any{"profiles": EveryOption()["profiles"]}, Namespace)
	if err != nil {
		t.Fatal(err)
	}
	profiles := EveryOption()["profiles"].([]any)
	second, err := RenderChart(c, map[string]any{
		"fullnameOverride": "scaleplane-canary",
		"crds":             map[string]any{"install": false},
		"profiles":         profiles[:1],
	}, "scaleplane-canary")
	if err != nil {
		t.Fatal(err)
	}
	clusterWide := func(objs []*unstructured.Unstructured) map[string]bool {
		out := map[string]bool{}
		for _, o := range objs {
			if o.GetNamespace() == "" {
				out[o.GetKind()+"/"+o.GetName()] = true
			}
		}
		return out
	}
	a, b := clusterWide(first), clusterWide(second)
	for k := range b {
		if a[k] {
			t.Errorf("both releases render the cluster-wide %s", k)
		}
	}
	if len(b) == 0 {
		t.Fatal("the second release renders no cluster-wide object")
	}
	data, _, _ := unstructured.NestedString(Find(second, "ConfigMap", "scaleplane-config").Object, "data", "scaleplane-config.yaml")
	cfg, _, err := configv1alpha2.Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Webhook.Owner != "scaleplane-canary" || cfg.Webhook.ValidatingConfigurationName != "scaleplane-canary-validating-webhook-configuration" {
		t.Errorf("second release's configuration: owner %q, validating configuration %q; want scaleplane-canary's", cfg.Webhook.Owner, cfg.Webhook.ValidatingConfigurationName)
	}
	v := Find(second, "ValidatingWebhookConfiguration", cfg.Webhook.ValidatingConfigurationName)
	if v == nil {
		t.Fatalf("no ValidatingWebhookConfiguration %s in the second release", cfg.Webhook.ValidatingConfigurationName)
	}
	if got := v.GetLabels()["scaleplane.io/owner"]; got != "scaleplane-canary" {
		t.Errorf("second release's configuration owner label %q", got)
	}
	entries, _, _ := unstructured.NestedSlice(v.Object, "webhooks")
	for _, e := range entries {
		if name := e.(map[string]any)["name"].(string); !strings.HasSuffix(name, ".scaleplane-canary.scaleplane.io") {
			t.Errorf("second release's entry %s is not named for its owner", name)
		}
	}
	rules, _, _ := unstructured.NestedSlice(Find(second, "ClusterRole", "scaleplane-canary-components-role").Object, "rules")
	found := false
	for _, r := range rules {
		names, _ := r.(map[string]any)["resourceNames"].([]any)
		for _, n := range names {
			found = true
			if !strings.HasPrefix(n.(string), "scaleplane-canary-") {
				t.Errorf("second release's role reaches %s, not its own configuration", n)
			}
		}
	}
	if !found {
		t.Error("second release's components role names no configuration")
	}
	for _, o := range second {
		if o.GetKind() == "CustomResourceDefinition" {
			t.Errorf("second release with crds.install false renders %s", o.GetName())
		}
	}
}
