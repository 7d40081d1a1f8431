package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// completeYAML sets every field of the configuration file: the three sample
// profiles written out in full, a foreign kind, and every component setting.
const completeYAML = `
apiVersion: config.scaleplane.io/v1alpha1
kind: Configuration
webhook:
  port: 9444
  host: 0.0.0.0
  certDir: /etc/scaleplane/certs
  mutatingConfigurationName: sp-mutating
  validatingConfigurationName: sp-validating
  timeoutSeconds: 5
  namespaceSelector:
    matchExpressions:
    - {key: scaleplane.io/ignore, operator: DoesNotExist}
  objectSelector:
    matchLabels: {scaleplane.io/managed: "true"}
autoscaler:
  pollingIntervalSeconds: 30
  prometheusURL: http://prometheus.monitoring:9090
  queries: {maxLength: 2048, maxPointsPerSeries: 20000, tickTimeoutSeconds: 20}
metrics:
  scrapeIntervalSeconds: 10
  retentionSeconds: 3600
  maxSeries: 5000
  maxStoreBytes: 67108864
  sampleLimit: 2000
  labelValueLengthLimit: 1024
profiles:
- group: samples.scaleplane.io
  version: v1alpha1
  kind: RackedCluster
  resource: rackedclusters
  replicas: .spec.replicas
  scaleConfig: {path: .spec.scaleConfig}
  groups:
    path: .spec.racks
    nameField: name
    membersField: members
    status: {path: .status.racks, style: List, nameField: name, readyMembersField: readyMembers}
  status: {replicas: .status.replicas, selector: .status.selector}
  pods:
    labels: {samples.scaleplane.io/cluster: "${name}"}
    groupLabel: samples.scaleplane.io/rack
  maxReplicas: 1000
- group: samples.scaleplane.io
  version: v1alpha1
  kind: Function
  resource: functions
  scaleConfig: {path: .spec.scaleConfig}
  status: {replicas: .status.replicas, selector: .status.podSelector}
  pods:
    labels: {samples.scaleplane.io/function: "${name}"}
  hpaTarget: {apiVersion: apps/v1, kind: Deployment, name: "${name}"}
  defaultMetrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
- group: samples.scaleplane.io
  version: v1alpha1
  kind: WorkerGroup
  resource: workergroups
  scaleConfig: {path: .spec.scalePolicy}
  status: {replicas: .status.replicas, selector: .status.hpaPodSelector}
  pods:
    labels:
      samples.scaleplane.io/workergroup: "${name}"
      samples.scaleplane.io/role: leader
- group: db.example.com
  version: v2
  kind: Store
  resource: stores
  replicas: .spec.size.perZone
  scaleConfig: {annotation: scaleplane.io/scale-config}
  groups:
    path: .spec.zones
    nameField: zone
    membersField: size
    status:
      path: .status.zones
      style: Map
      readyMembersField: ready
      observedGenerationField: observedGeneration
  status: {replicas: .status.readyPerZone, selector: .status.scaleSelector}
  pods:
    labels: {app.kubernetes.io/instance: "${name}"}
    groupLabel: db.example.com/zone
  hpaTarget: {apiVersion: apps/v1, kind: StatefulSet, name: "${name}-store"}
  maxReplicas: 50
  defaultMetrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 80}
`

func TestParseComplete(t *testing.T) {
	got, err := Parse([]byte(completeYAML))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	foreign := foreignProfile()
	foreign.MaxReplicas = 50
	foreign.DefaultMetrics = []autoscalingv2.MetricSpec{cpuMetric(80)}
	foreign.Default()
	want := SampleConfiguration()
	want.Profiles = append(want.Profiles, foreign)
	want.Webhook = Webhook{
		Port: 9444, Host: "0.0.0.0", CertDir: "/etc/scaleplane/certs",
		MutatingConfigurationName: "sp-mutating", ValidatingConfigurationName: "sp-validating",
		TimeoutSeconds: 5,
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "scaleplane.io/ignore", Operator: metav1.LabelSelectorOpDoesNotExist},
		}},
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"scaleplane.io/managed": "true"}},
	}
	want.Autoscaler = Autoscaler{PollingIntervalSeconds: 30, PrometheusURL: "http://prometheus.monitoring:9090", Queries: Queries{
		MaxLength: 2048, MaxDepth: 100, MaxPointsPerSeries: 20000, MaxRegexSize: 10000, MaxSamples: 1000000, TimeoutSeconds: 10, TickTimeoutSeconds: 20,
	}}
	want.Metrics = Metrics{ScrapeIntervalSeconds: 10, RetentionSeconds: 3600, MaxSeries: 5000, MaxStoreBytes: 64 << 20,
		BodySizeLimitBytes: 10 << 20, SampleLimit: 2000, LabelLimit: 64, LabelNameLengthLimit: 256, LabelValueLengthLimit: 1024}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	views, err := got.Views()
	if err != nil {
		t.Fatalf("Views: %v", err)
	}
	var kinds []string
	for _, v := range views {
		kinds = append(kinds, v.GVK().Kind)
	}
	if diff := cmp.Diff([]string{"RackedCluster", "Function", "WorkerGroup", "Store"}, kinds); diff != "" {
		t.Errorf("Views kinds (-want +got):\n%s", diff)
	}
}

func TestDefault(t *testing.T) {
	c := &Configuration{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
	c.Default()
	want := &Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		Webhook: Webhook{
			Port: 9443, TimeoutSeconds: 10, CertDir: "/tmp/k8s-webhook-server/serving-certs",
			MutatingConfigurationName:   "scaleplane-mutating-webhook-configuration",
			ValidatingConfigurationName: "scaleplane-validating-webhook-configuration",
		},
		Autoscaler: Autoscaler{PollingIntervalSeconds: 15, Queries: Queries{
			MaxLength: 4096, MaxDepth: 100, MaxPointsPerSeries: 11000, MaxRegexSize: 10000, MaxSamples: 1000000, TimeoutSeconds: 10, TickTimeoutSeconds: 15,
		}},
		Metrics: Metrics{ScrapeIntervalSeconds: 5, RetentionSeconds: 1800, MaxSeries: 100000, MaxStoreBytes: 128 << 20,
			BodySizeLimitBytes: 10 << 20, SampleLimit: 10000, LabelLimit: 64, LabelNameLengthLimit: 256, LabelValueLengthLimit: 4096},
		Servers: DefaultServers(),
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Default (-want +got):\n%s", diff)
	}
	again := SampleConfiguration()
	again.Default()
	if diff := cmp.Diff(SampleConfiguration(), again); diff != "" {
		t.Errorf("defaulting twice changed the configuration (-once +twice):\n%s", diff)
	}
}

func TestSampleConfiguration(t *testing.T) {
	c := SampleConfiguration()
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if _, err := c.Views(); err != nil {
		t.Fatalf("Views: %v", err)
	}
	// The file the manifests ship must say the same as the Go samples.
	const file = "samples/deploy/scaleplane-config.yaml"
	loaded, err := Load(file)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if diff := cmp.Diff(c.Profiles, loaded.Profiles, cmpOpts...); diff != "" {
		t.Errorf("%s profiles (-SampleConfiguration +file):\n%s", file, diff)
	}
}

func TestParseErrors(t *testing.T) {
	const header = "apiVersion: config.scaleplane.io/v1alpha1\nkind: Configuration\n"
	const racked = `
- group: samples.scaleplane.io
  version: v1alpha1
  kind: RackedCluster
  resource: rackedclusters
  scaleConfig: {path: .spec.scaleConfig}
`
	tests := []struct {
		name string
		yaml string
		// want are the field errors; wantMsg is part of the error text when
		// decoding fails before validation.
		want    []string
		wantMsg string
	}{{
		name:    "unknown field",
		yaml:    header + "profiles:\n- kind: X\n  replica: .spec.replicas\n",
		wantMsg: `unknown field "profiles[0].replica"`,
	}, {
		name:    "unknown top-level field",
		yaml:    header + "webhooks: {}\n",
		wantMsg: `unknown field "webhooks"`,
	}, {
		name:    "wrong type",
		yaml:    header + "webhook: {port: high}\n",
		wantMsg: "decode:",
	}, {
		name: "wrong file type",
		yaml: "apiVersion: v1\nkind: ConfigMap\n",
		want: []string{"FieldValueInvalid apiVersion", "FieldValueInvalid kind"},
	}, {
		name: "scale config location",
		yaml: header + "profiles:" + racked + `
- group: samples.scaleplane.io
  version: v1alpha1
  kind: Function
  resource: functions
  scaleConfig: {}
- group: samples.scaleplane.io
  version: v1alpha1
  kind: WorkerGroup
  resource: workergroups
  scaleConfig: {path: .spec.scalePolicy, annotation: scaleplane.io/scale-config}
`,
		want: []string{"FieldValueRequired profiles[1].scaleConfig", "FieldValueInvalid profiles[2].scaleConfig"},
	}, {
		name: "duplicate kind and resource",
		yaml: header + "profiles:" + racked + racked,
		want: []string{"FieldValueDuplicate profiles[1].kind", "FieldValueDuplicate profiles[1].resource"},
	}, {
		name: "bad paths and style",
		yaml: header + `profiles:
- group: samples.scaleplane.io
  version: v1alpha1
  kind: RackedCluster
  resource: rackedclusters
  replicas: spec.replicas
  scaleConfig: {path: .spec.scaleConfig}
  groups:
    path: .spec.racks
    status: {path: .status.racks, style: Dict}
  maxReplicas: -3
`,
		want: []string{
			"FieldValueInvalid profiles[0].replicas",
			"FieldValueNotSupported profiles[0].groups.status.style",
			"FieldValueInvalid profiles[0].maxReplicas",
		},
	}, {
		name: "component settings",
		yaml: header + `webhook:
  port: 70000
  timeoutSeconds: 31
  mutatingConfigurationName: Bad_Name
  objectSelector:
    matchExpressions: [{key: a, operator: Maybe}]
autoscaler:
  pollingIntervalSeconds: -1
  prometheusURL: prometheus:9090
  queries:
    maxLength: 100000
    maxDepth: -1
    maxPointsPerSeries: -1
    maxRegexSize: -1
    maxSamples: -1
    timeoutSeconds: -1
    tickTimeoutSeconds: -1
metrics:
  scrapeIntervalSeconds: -5
  retentionSeconds: -1
  maxSeries: -1
  maxStoreBytes: 1024
  bodySizeLimitBytes: -1
  sampleLimit: -1
  labelLimit: 3
  labelNameLengthLimit: 15
  labelValueLengthLimit: -1
`,
		want: []string{
			"FieldValueInvalid webhook.port",
			"FieldValueInvalid webhook.timeoutSeconds",
			"FieldValueInvalid webhook.mutatingConfigurationName",
			"FieldValueInvalid webhook.objectSelector.matchExpressions[0].operator",
			"FieldValueInvalid autoscaler.pollingIntervalSeconds",
			"FieldValueInvalid autoscaler.prometheusURL",
			"FieldValueInvalid autoscaler.queries.maxLength",
			"FieldValueInvalid autoscaler.queries.maxDepth",
			"FieldValueInvalid autoscaler.queries.maxPointsPerSeries",
			"FieldValueInvalid autoscaler.queries.maxRegexSize",
			"FieldValueInvalid autoscaler.queries.maxSamples",
			"FieldValueInvalid autoscaler.queries.timeoutSeconds",
			"FieldValueInvalid autoscaler.queries.tickTimeoutSeconds",
			"FieldValueInvalid metrics.scrapeIntervalSeconds",
			"FieldValueInvalid metrics.retentionSeconds",
			"FieldValueInvalid metrics.maxSeries",
			"FieldValueInvalid metrics.maxStoreBytes",
			"FieldValueInvalid metrics.bodySizeLimitBytes",
			"FieldValueInvalid metrics.sampleLimit",
			"FieldValueInvalid metrics.labelLimit",
			"FieldValueInvalid metrics.labelNameLengthLimit",
			"FieldValueInvalid metrics.labelValueLengthLimit",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if tt.wantMsg != "" {
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("error %q does not contain %q", err, tt.wantMsg)
				}
				return
			}
			if diff := cmp.Diff(tt.want, errorStrings(fieldErrors(t, err))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// fieldErrors unpacks Validate's aggregate.
func fieldErrors(t *testing.T, err error) field.ErrorList {
	t.Helper()
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Fatalf("error %v is not an aggregate", err)
	}
	var out field.ErrorList
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("error %v is not a field error", e)
		}
		out = append(out, fe)
	}
	return out
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(good, []byte(completeYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(good)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := len(c.Profiles); got != 4 {
		t.Errorf("Load: %d profiles, want 4", got)
	}

	// JSON is YAML too.
	js := filepath.Join(dir, "config.json")
	if err := os.WriteFile(js, []byte(`{"apiVersion":"config.scaleplane.io/v1alpha1","kind":"Configuration","profiles":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(js); err != nil {
		t.Errorf("Load JSON: %v", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: x\nkind: Configuration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if err == nil || !strings.HasPrefix(err.Error(), "configuration "+bad+": apiVersion: Invalid value") {
		t.Errorf("Load error = %v, want it to name the file and the field", err)
	}

	_, err = Load(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file = %v, want an error wrapping os.ErrNotExist", err)
	}
}

func TestViewsReportsEveryBadProfile(t *testing.T) {
	c := SampleConfiguration()
	c.Profiles[0].Replicas = "replicas"
	c.Profiles[2].ScaleConfig = ScaleConfigLocation{}
	_, err := c.Views()
	if err == nil {
		t.Fatal("Views succeeded, want an error")
	}
	for _, want := range []string{"profiles[0]: profile RackedCluster.samples.scaleplane.io/v1alpha1: replicas:", "profiles[2]: profile WorkerGroup.samples.scaleplane.io/v1alpha1: scaleConfig: Required value"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Views error %q does not contain %q", err, want)
		}
	}
}

// TestDocsExamples keeps docs/profiles.md honest: every complete
// configuration in it parses, and the sample profiles it shows are
// SampleProfiles.
func TestDocsExamples(t *testing.T) {
	data, err := os.ReadFile("../docs/profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	var samples []Profile
	configs := 0
	for i, block := range strings.Split(string(data), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		switch {
		case strings.HasPrefix(block, "apiVersion: "+APIVersion):
			configs++
			if _, err := Parse([]byte(block)); err != nil {
				t.Errorf("yaml block %d: %v", i, err)
			}
		case strings.HasPrefix(block, "- group: "+SampleGroup):
			c, err := Parse([]byte("apiVersion: " + APIVersion + "\nkind: Configuration\nprofiles:\n" + block))
			if err != nil {
				t.Errorf("yaml block %d: %v", i, err)
				continue
			}
			samples = append(samples, c.Profiles...)
		}
	}
	if configs < 1 {
		t.Errorf("found %d complete configurations, want at least 1", configs)
	}
	if diff := cmp.Diff(SampleConfiguration().Profiles, samples, cmpOpts...); diff != "" {
		t.Errorf("sample profiles in the docs (-SampleProfiles +docs):\n%s", diff)
	}
}
