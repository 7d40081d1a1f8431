package v1alpha2

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// completeFile sets every field of the configuration file; package
// profile's TestParseComplete checks what it parses to.
const completeFile = "testdata/complete.v1alpha2.yaml"

func TestDefault(t *testing.T) {
	c := &Configuration{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
	c.Default()
	want := &Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		Webhook: Webhook{
			Port: 9443, TimeoutSeconds: 10, CertDir: "/tmp/k8s-webhook-server/serving-certs", Owner: "scaleplane",
			MutatingConfigurationName:   "scaleplane-mutating-webhook-configuration",
			ValidatingConfigurationName: "scaleplane-validating-webhook-configuration",
			ExcludedNamespaces:          []string{"kube-system"},
			FailurePolicy:               FailurePolicies{Mutate: "Fail", Validate: "Fail", Scale: "Fail"},
			Admission:                   "webhooks",
		},
		Autoscaler: Autoscaler{PollingIntervalSeconds: 15, Queries: Queries{
			MaxLength: 4096, MaxDepth: 100, MaxPointsPerSeries: 11000, MaxRegexSize: 10000, MaxSamples: 1000000, TimeoutSeconds: 10, TickTimeoutSeconds: 15,
		}, Fairness: Fairness{EvaluationSlots: 8, EvaluationSlotsPerNamespace: 4, MaxWaitingPerNamespace: 64, SamplesPerMinute: 50_000_000, EvalSecondsPerMinute: 30}},
		Metrics: Metrics{ScrapeIntervalSeconds: 5, RetentionSeconds: 1800, MaxSeries: 100000, MaxSeriesPerNamespace: 25000, MaxStoreBytes: 128 << 20, MaxStoreBytesPerNamespace: 32 << 20,
			BodySizeLimitBytes: 10 << 20, SampleLimit: 10000, LabelLimit: 64, LabelNameLengthLimit: 256, LabelValueLengthLimit: 4096},
		Servers: DefaultServers(),
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Default (-want +got):\n%s", diff)
	}
	once, _, err := Load(completeFile)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	again, _, err := Load(completeFile)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	again.Default()
	if diff := cmp.Diff(once, again); diff != "" {
		t.Errorf("defaulting twice changed the configuration (-once +twice):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	const header = "apiVersion: config.scaleplane.io/v1alpha2\nkind: Configuration\n"
	tests := []struct {
		name string
		yaml string
		// want are the field errors; wantMsg is part of the error text when
		// decoding fails before validation.
		want    []string
		wantMsg string
	}{{
		name:    "unknown field",
		yaml:    header + "profiles:\n- target: {kind: X}\n  replica: .spec.replicas\n",
		wantMsg: `unknown field "profiles[0].replica"`,
	}, {
		name:    "a v1alpha1 field in a v1alpha2 file",
		yaml:    header + "profiles:\n- kind: X\n",
		wantMsg: `unknown field "profiles[0].kind"`,
	}, {
		name:    "unknown top-level field",
		yaml:    header + "webhooks: {}\n",
		wantMsg: `unknown field "webhooks"`,
	}, {
		name:    "wrong type",
		yaml:    header + "webhook: {port: high}\n",
		wantMsg: "decode:",
	}, {
		name:    "a second document, which the YAML decoder would drop",
		yaml:    header + "---\napiVersion: scaleplane.io/v1alpha1\nkind: ScaleProfile\nSPEC: {}\n",
		wantMsg: "the file holds 2 YAML documents",
	}, {
		name: "wrong file type",
		yaml: "apiVersion: v1\nkind: ConfigMap\n",
		want: []string{"FieldValueInvalid apiVersion", "FieldValueInvalid kind"},
	}, {
		name: "component settings",
		yaml: header + `webhook:
  port: 70000
  timeoutSeconds: 31
  owner: cache.operator
  mutatingConfigurationName: Bad_Name
  objectSelector:
    matchExpressions: [{key: a, operator: Maybe}]
  excludedNamespaces: [kube-system, Bad_NS]
  failurePolicy: {scale: Retry}
  admission: cel
autoscaler:
  pollingIntervalSeconds: -1
  prometheusURL: prometheus:9090
  externalScaler: {bindAddress: "9090"}
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
  maxSeriesPerNamespace: -3
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
			"FieldValueInvalid webhook.owner",
			"FieldValueInvalid webhook.mutatingConfigurationName",
			"FieldValueInvalid webhook.objectSelector.matchExpressions[0].operator",
			"FieldValueInvalid webhook.excludedNamespaces[1]",
			"FieldValueNotSupported webhook.failurePolicy.scale",
			"FieldValueNotSupported webhook.admission",
			"FieldValueInvalid autoscaler.pollingIntervalSeconds",
			"FieldValueInvalid autoscaler.prometheusURL",
			"FieldValueInvalid autoscaler.queries.maxLength",
			"FieldValueInvalid autoscaler.queries.maxDepth",
			"FieldValueInvalid autoscaler.queries.maxPointsPerSeries",
			"FieldValueInvalid autoscaler.queries.maxRegexSize",
			"FieldValueInvalid autoscaler.queries.maxSamples",
			"FieldValueInvalid autoscaler.queries.timeoutSeconds",
			"FieldValueInvalid autoscaler.queries.tickTimeoutSeconds",
			"FieldValueInvalid autoscaler.externalScaler.bindAddress",
			"FieldValueInvalid metrics.scrapeIntervalSeconds",
			"FieldValueInvalid metrics.retentionSeconds",
			"FieldValueInvalid metrics.maxSeries",
			"FieldValueInvalid metrics.maxSeriesPerNamespace",
			"FieldValueInvalid metrics.maxStoreBytes",
			"FieldValueInvalid metrics.bodySizeLimitBytes",
			"FieldValueInvalid metrics.sampleLimit",
			"FieldValueInvalid metrics.labelLimit",
			"FieldValueInvalid metrics.labelNameLengthLimit",
			"FieldValueInvalid metrics.labelValueLengthLimit",
		},
	}, {
		name: "a namespace's share above the whole store",
		yaml: header + `metrics: {maxSeries: 100, maxSeriesPerNamespace: 101}
`,
		want: []string{"FieldValueInvalid metrics.maxSeriesPerNamespace"},
	}, {
		name: "a namespace's byte share above the whole store",
		yaml: header + `metrics: {maxStoreBytes: 2097152, maxStoreBytesPerNamespace: 2097153}
`,
		want: []string{"FieldValueInvalid metrics.maxStoreBytesPerNamespace"},
	}, {
		name: "fairness settings out of range",
		yaml: header + `autoscaler: {fairness: {evaluationSlots: 2, evaluationSlotsPerNamespace: 3, maxWaitingPerNamespace: -1, samplesPerMinute: -1, evalSecondsPerMinute: -1}}
`,
		want: []string{"FieldValueInvalid autoscaler.fairness.evaluationSlotsPerNamespace", "FieldValueInvalid autoscaler.fairness.maxWaitingPerNamespace",
			"FieldValueInvalid autoscaler.fairness.samplesPerMinute", "FieldValueInvalid autoscaler.fairness.evalSecondsPerMinute"},
	}, {
		name: "external scaler certificates without an address",
		yaml: header + `autoscaler:
  externalScaler: {certDir: /certs}
`,
		want: []string{"FieldValueInvalid autoscaler.externalScaler.certDir"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tt.yaml))
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

// errorStrings renders field errors compactly for comparison: type and
// path, the parts a user acts on.
func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	c, warnings, err := Load(completeFile)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := len(c.Profiles); got != 4 {
		t.Errorf("Load: %d profiles, want 4", got)
	}
	if len(warnings) > 0 {
		t.Errorf("Load of a v1alpha2 file warned: %q", warnings)
	}

	// JSON is YAML too.
	js := filepath.Join(dir, "config.json")
	if err := os.WriteFile(js, []byte(`{"apiVersion":"config.scaleplane.io/v1alpha2","kind":"Configuration","profiles":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(js); err != nil {
		t.Errorf("Load JSON: %v", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: x\nkind: Configuration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = Load(bad)
	if err == nil || !strings.HasPrefix(err.Error(), "configuration "+bad+": apiVersion: Invalid value") {
		t.Errorf("Load error = %v, want it to name the file and the field", err)
	}

	_, _, err = Load(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file = %v, want an error wrapping os.ErrNotExist", err)
	}
}
