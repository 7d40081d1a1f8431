package profile

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// The tests of profiles in a component configuration: what a complete file
// parses to, the shipped file and the docs' examples against Samples, and
// ValidateAll's field paths.

// completeFile sets every field of the configuration file: the three
// sample profiles written out in full, a foreign kind, and every component
// setting.
const completeFile = "../api/config/v1alpha2/testdata/complete.v1alpha2.yaml"

// defaulted returns specs with their defaults, as Compile sees them.
func defaulted(specs []v1alpha1.ScaleProfileSpec) []v1alpha1.ScaleProfileSpec {
	out := make([]v1alpha1.ScaleProfileSpec, len(specs))
	for i := range specs {
		out[i] = clone(&specs[i])
		Default(&out[i])
	}
	return out
}

func TestParseComplete(t *testing.T) {
	got, _, err := configv1alpha2.Load(completeFile)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	foreign := foreignProfile()
	foreign.MaxReplicas = 50
	foreign.DefaultMetrics = []autoscalingv2.MetricSpec{cpuMetric(80)}
	want := SampleConfiguration()
	want.Profiles = defaulted(append(want.Profiles, foreign))
	got.Profiles = defaulted(got.Profiles)
	want.Webhook = configv1alpha2.Webhook{
		Port: 9444, Host: "0.0.0.0", CertDir: "/etc/scaleplane/certs", Owner: "scaleplane",
		MutatingConfigurationName: "sp-mutating", ValidatingConfigurationName: "sp-validating",
		TimeoutSeconds: 5,
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "scaleplane.io/ignore", Operator: metav1.LabelSelectorOpDoesNotExist},
		}},
		ObjectSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"scaleplane.io/managed": "true"}},
		ExcludedNamespaces: []string{"kube-system", "ops"},
		FailurePolicy:      configv1alpha2.FailurePolicies{Mutate: "Fail", Validate: "Fail", Scale: "Ignore"},
		Admission:          "webhooks",
	}
	want.Autoscaler = configv1alpha2.Autoscaler{PollingIntervalSeconds: 30, PrometheusURL: "http://prometheus.monitoring:9090", Queries: configv1alpha2.Queries{
		MaxLength: 2048, MaxDepth: 100, MaxPointsPerSeries: 20000, MaxRegexSize: 10000, MaxSamples: 1000000, TimeoutSeconds: 10, TickTimeoutSeconds: 20,
	}, Fairness: configv1alpha2.Fairness{EvaluationSlots: 8, EvaluationSlotsPerNamespace: 4, MaxWaitingPerNamespace: 64, SamplesPerMinute: 50_000_000, EvalSecondsPerMinute: 30}}
	want.Metrics = configv1alpha2.Metrics{ScrapeIntervalSeconds: 10, RetentionSeconds: 3600, MaxSeries: 5000, MaxSeriesPerNamespace: 1250, MaxStoreBytes: 64 << 20, MaxStoreBytesPerNamespace: 16 << 20,
		BodySizeLimitBytes: 10 << 20, SampleLimit: 2000, LabelLimit: 64, LabelNameLengthLimit: 256, LabelValueLengthLimit: 1024}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	compiled, err := CompileAll(got.Profiles)
	if err != nil {
		t.Fatalf("CompileAll: %v", err)
	}
	var kinds []string
	for _, c := range compiled {
		kinds = append(kinds, c.GVK().Kind)
	}
	if diff := cmp.Diff([]string{"RackedCluster", "Function", "WorkerGroup", "Store"}, kinds); diff != "" {
		t.Errorf("CompileAll kinds (-want +got):\n%s", diff)
	}
}

func TestSampleConfiguration(t *testing.T) {
	c := SampleConfiguration()
	if errs := c.Validate(); len(errs) > 0 {
		t.Fatalf("Validate: %v", errs)
	}
	if errs := ValidateAll(c.Profiles, field.NewPath("profiles")); len(errs) > 0 {
		t.Fatalf("ValidateAll: %v", errs)
	}
	if _, err := CompileAll(c.Profiles); err != nil {
		t.Fatalf("CompileAll: %v", err)
	}
	again := SampleConfiguration()
	again.Default()
	if diff := cmp.Diff(SampleConfiguration(), again); diff != "" {
		t.Errorf("defaulting twice changed the configuration (-once +twice):\n%s", diff)
	}
	// The file the sample deployment ships must say the same as the Go
	// samples.
	const file = "../config/samples/deploy/scaleplane-config.yaml"
	loaded, warnings, err := configv1alpha2.Load(file)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(warnings) > 0 {
		t.Errorf("Load %s warned: %q", file, warnings)
	}
	if diff := cmp.Diff(defaulted(c.Profiles), defaulted(loaded.Profiles), cmpOpts...); diff != "" {
		t.Errorf("%s profiles (-SampleConfiguration +file):\n%s", file, diff)
	}
}

// TestValidateAll: the profiles of a configuration are checked together,
// every problem at its path under profiles[i], and no two profile one kind
// or use one resource.
func TestValidateAll(t *testing.T) {
	const header = "apiVersion: config.scaleplane.io/v1alpha2\nkind: Configuration\n"
	const racked = `
- target: {apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster, resource: rackedclusters}
  scaleConfig: {path: .spec.scaleConfig}
`
	tests := []struct {
		name string
		yaml string
		want []string
	}{{
		name: "scale config location",
		yaml: header + "profiles:" + racked + `
- target: {apiVersion: samples.scaleplane.io/v1alpha1, kind: Function, resource: samplefunctions}
  scaleConfig: {}
- target: {apiVersion: samples.scaleplane.io/v1alpha1, kind: WorkerGroup, resource: workergroups}
  scaleConfig: {path: .spec.scalePolicy, annotation: scaleplane.io/scale-config}
`,
		want: []string{"FieldValueRequired profiles[1].scaleConfig", "FieldValueInvalid profiles[2].scaleConfig"},
	}, {
		name: "duplicate kind and resource",
		yaml: header + "profiles:" + racked + racked,
		want: []string{"FieldValueDuplicate profiles[1].target.kind", "FieldValueDuplicate profiles[1].target.resource"},
	}, {
		// Two webhooks and two controllers for one object, as a second
		// ScaleProfile of the kind would be a Conflict.
		name: "one kind at two versions",
		yaml: header + "profiles:" + racked + `
- target: {apiVersion: samples.scaleplane.io/v1beta1, kind: RackedCluster, resource: rackedclusters}
  scaleConfig: {path: .spec.scaleConfig}
`,
		want: []string{"FieldValueDuplicate profiles[1].target.kind"},
	}, {
		name: "bad paths and style",
		yaml: header + `profiles:
- target: {apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster, resource: rackedclusters}
  replicasPath: spec.replicas
  scaleConfig: {path: .spec.scaleConfig}
  memberGroups:
    path: .spec.racks
    status: {path: .status.racks, style: Dict}
  maxReplicas: -3
`,
		want: []string{
			"FieldValueInvalid profiles[0].replicasPath",
			"FieldValueNotSupported profiles[0].memberGroups.status.style",
			"FieldValueInvalid profiles[0].maxReplicas",
		},
	}, {
		name: "a v1alpha1 file is checked at the new paths",
		yaml: `apiVersion: config.scaleplane.io/v1alpha1
kind: Configuration
profiles:
- {group: samples.scaleplane.io, version: v1alpha1, kind: RackedCluster, resource: rackedcluster, replicas: spec.replicas, scaleConfig: {path: .spec.scaleConfig}}
`,
		want: []string{"FieldValueInvalid profiles[0].target.resource", "FieldValueInvalid profiles[0].replicasPath"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := configv1alpha2.Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			before := make([]v1alpha1.ScaleProfileSpec, len(c.Profiles))
			for i := range c.Profiles {
				before[i] = clone(&c.Profiles[i])
			}
			got := ValidateAll(c.Profiles, field.NewPath("profiles"))
			if diff := cmp.Diff(tt.want, errorStrings(got)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, c.Profiles); diff != "" {
				t.Errorf("ValidateAll changed the profiles (-before +after):\n%s", diff)
			}
			if _, err := CompileAll(c.Profiles); err == nil {
				t.Error("CompileAll succeeded, want an error")
			}
		})
	}
}

func TestCompileAllReportsEveryBadProfile(t *testing.T) {
	c := SampleConfiguration()
	c.Profiles[0].ReplicasPath = "replicas"
	c.Profiles[2].ScaleConfig = v1alpha1.ScaleConfigLocation{}
	_, err := CompileAll(c.Profiles)
	if err == nil {
		t.Fatal("CompileAll succeeded, want an error")
	}
	for _, want := range []string{"profiles[0]: profile RackedCluster.samples.scaleplane.io/v1alpha1: replicasPath:", "profiles[2]: profile WorkerGroup.samples.scaleplane.io/v1alpha1: scaleConfig: Required value"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CompileAll error %q does not contain %q", err, want)
		}
	}
}

// TestDocsExamples keeps docs/profiles.md honest: every complete
// configuration in it parses and its profiles are valid, and the sample
// profiles it shows are Samples.
func TestDocsExamples(t *testing.T) {
	data, err := os.ReadFile("../docs/profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	var samples []v1alpha1.ScaleProfileSpec
	configs := 0
	for i, block := range strings.Split(string(data), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		switch {
		case strings.HasPrefix(block, "apiVersion: "+configv1alpha2.APIVersion):
			configs++
			c, _, err := configv1alpha2.Parse([]byte(block))
			if err != nil {
				t.Errorf("yaml block %d: %v", i, err)
				continue
			}
			if errs := ValidateAll(c.Profiles, field.NewPath("profiles")); len(errs) > 0 {
				t.Errorf("yaml block %d: %v", i, errs.ToAggregate())
			}
		case strings.HasPrefix(block, "- target: {apiVersion: "+SampleAPIVersion):
			c, _, err := configv1alpha2.Parse([]byte("apiVersion: " + configv1alpha2.APIVersion + "\nkind: Configuration\nprofiles:\n" + block))
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
	if diff := cmp.Diff(defaulted(Samples()), defaulted(samples), cmpOpts...); diff != "" {
		t.Errorf("sample profiles in the docs (-Samples +docs):\n%s", diff)
	}
}
