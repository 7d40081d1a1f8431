package autoscaler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// fieldErr is what the tests compare of a field.Error: type, path, value.
type fieldErr struct {
	Type     field.ErrorType
	Field    string
	BadValue any
}

func fieldErrs(list field.ErrorList) []fieldErr {
	var out []fieldErr
	for _, e := range list {
		out = append(out, fieldErr{e.Type, e.Field, e.BadValue})
	}
	return out
}

const t0 = "spec.scaleConfig.triggers[0]"

func invalidQuery(q string) []fieldErr {
	return []fieldErr{{field.ErrorTypeInvalid, t0 + ".query", q}}
}

// validateTriggers runs scaling.Validate on a RackedCluster whose config
// has ts, against the sources NewSources builds over an embedded store
// (and a remote when withRemote).
func validateTriggers(t *testing.T, withRemote bool, ts ...scaling.Trigger) field.ErrorList {
	t.Helper()
	eval := promql.NewEvaluator(promql.NewStore(promql.Options{}), promql.EvaluatorOptions{})
	var remote promql.Source
	if withRemote {
		remote = eval
	}
	sources, err := NewSources(eval, remote, promql.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	w := scaling.Workload{Replicas: ptr(int32(2)), Config: &scaling.Config{MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(5)), Triggers: ts}}
	errs, _ := scaling.Validate(w, viewOf(t, "RackedCluster").Layout(), sources)
	return errs
}

func promqlTrigger(query string) scaling.Trigger {
	return scaling.Trigger{Name: "rps", Type: scaling.TargetAverageValue, Threshold: 10, Query: query}
}

// TestV5PromQLSource: what the promql and prometheus sources check of a
// trigger at admission (V5): a query that parses as the engine parses it,
// placeholders filled in, and yields one number.
func TestV5PromQLSource(t *testing.T) {
	withSource := func(tr scaling.Trigger, s string) scaling.Trigger { tr.Source = s; return tr }
	cases := []struct {
		name string
		tr   scaling.Trigger
		want []fieldErr
	}{
		{"V5 valid placeholders in label values and regexes", promqlTrigger(`sum(rate(http_requests_total{namespace="${namespace}",pod=~"${name}-.*"}[1m]))`), nil},
		{"V5 valid placeholder in a metric name", promqlTrigger(`${name}_queue_depth`), nil},
		{"V5 valid kind and resource placeholders", promqlTrigger(`sum(up{kind="${kind}",resource="${resource}"})`), nil},
		{"V5 valid scalar result", promqlTrigger(`scalar(sum(up))`), nil},
		{"V5 valid experimental function the embedded engine runs", promqlTrigger(`max(mad_over_time(latency_seconds[5m]))`), nil},
		{"V5 valid source prometheus", withSource(promqlTrigger(`sum(up)`), "prometheus"), nil},
		{"V5 query required for the default source", promqlTrigger(""), []fieldErr{{field.ErrorTypeRequired, t0 + ".query", ""}}},
		{"V5 query required for source promql", withSource(promqlTrigger("  "), "promql"), []fieldErr{{field.ErrorTypeRequired, t0 + ".query", ""}}},
		{"V5 unparsable PromQL", promqlTrigger(`sum(rate(http_requests_total[1m])`), invalidQuery(`sum(rate(http_requests_total[1m])`)},
		{"V5 unparsable PromQL after placeholders", promqlTrigger(`up{namespace=${namespace}}`), invalidQuery(`up{namespace=${namespace}}`)},
		{"V5 range vector result", promqlTrigger(`foo[5m]`), invalidQuery(`foo[5m]`)},
		{"V5 subquery result", promqlTrigger(`sum(rate(foo[1m]))[10m:1m]`), invalidQuery(`sum(rate(foo[1m]))[10m:1m]`)},
		{"V5 string result", promqlTrigger(`"hello"`), invalidQuery(`"hello"`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fieldErrs(validateTriggers(t, true, tc.tr))); diff != "" {
				t.Errorf("Validate errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestV10PromQLSourceCost: a trigger query over the cost bounds is refused
// at admission at its field path, with the bound in the message (once
// these were admitted: the first one's evaluation ran the
// process out of memory, and the 120 KB one took 8.7 s to admit).
func TestV10PromQLSourceCost(t *testing.T) {
	long := strings.Repeat("a + ", 30_000) + "a"
	deep := strings.Repeat("(", 101) + "1" + strings.Repeat(")", 101)
	bomb := `up{a=~"` + strings.Repeat(".{1000}", 500) + `"}`
	cases := []struct {
		name, query, message string
	}{
		{"V10 subquery over 10 years at 1ms", `max_over_time(sum(rate(x[5m]))[10y:1ms])`, "the subquery at offset 14 needs 315360000001 points per series, over the limit of 11000; use a shorter range or a longer step, or raise the configured maxPointsPerSeries"},
		{"V10 subquery over a year at the default step", `max_over_time(up[1y:])`, "needs 525601 points per series, over the limit of 11000"},
		{"V10 range selector over a day", `sum(rate(x[1d]))`, "the range selector (at one sample every 5s) at offset 9 needs 17280 points per series"},
		{"V10 120 KB query", long, "query is 120001 bytes long, over the limit of 4096 bytes"},
		{"V10 nesting deeper than 100", deep, "query nests 101 levels deep at offset 100, over the limit of 100"},
		{"V10 regular expression bomb", bomb, "compile to about 500501 instructions by the string at offset 6, over the limit of 10000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateTriggers(t, false, promqlTrigger(tc.query))
			if diff := cmp.Diff(invalidQuery(tc.query), fieldErrs(errs)); diff != "" {
				t.Fatalf("Validate errors (-want +got):\n%s", diff)
			}
			if !strings.Contains(errs[0].Detail, tc.message) {
				t.Errorf("message %q does not say %q", errs[0].Detail, tc.message)
			}
		})
	}
	if errs := validateTriggers(t, false, promqlTrigger(`max_over_time(sum(rate(x[1m]))[10m:30s])`)); len(errs) != 0 {
		t.Errorf("a subquery within the bounds: %v", errs)
	}
}

// TestV11PromQLSourceReferences: what a query trigger names must exist:
// placeholders from the set the autoscaler fills, a registered source, and
// no metadata (no query source reads any; in particular a trigger cannot
// name the server its query is sent to).
func TestV11PromQLSourceReferences(t *testing.T) {
	withSource := func(tr scaling.Trigger, s string) scaling.Trigger { tr.Source = s; return tr }
	withMetadata := func(tr scaling.Trigger, md map[string]string) scaling.Trigger { tr.Metadata = md; return tr }
	cases := []struct {
		name    string
		tr      scaling.Trigger
		want    []fieldErr
		message string
	}{
		{"V11 placeholder typo", promqlTrigger(`sum(up{namespace="${namspace}"})`), invalidQuery(`sum(up{namespace="${namspace}"})`),
			"unknown placeholder ${namspace}; known placeholders: ${kind}, ${namespace}, ${name}, ${resource}"},
		{"V11 placeholder nobody fills", promqlTrigger(`sum(up{cluster="${cluster}"})`), invalidQuery(`sum(up{cluster="${cluster}"})`), "unknown placeholder ${cluster}"},
		{"V11 placeholder without its closing brace", promqlTrigger(`sum(up{a="${name"})`), invalidQuery(`sum(up{a="${name"})`), `unknown placeholder ${name"}`},
		{"V11 source prometheus without a server", withSource(promqlTrigger(`sum(up)`), "prometheus"),
			[]fieldErr{{field.ErrorTypeNotSupported, t0 + ".source", "prometheus"}}, `supported values: "cron", "promql"`},
		{"V11 unknown source", withSource(promqlTrigger(`sum(up)`), "kafka"),
			[]fieldErr{{field.ErrorTypeNotSupported, t0 + ".source", "kafka"}}, `supported values: "cron", "promql"`},
		{"V11 a server address in metadata", withMetadata(promqlTrigger(`sum(up)`), map[string]string{"serverAddress": "http://kubernetes.default:443"}),
			[]fieldErr{{field.ErrorTypeForbidden, t0 + ".metadata[serverAddress]", ""}}, "autoscaler.prometheusURL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateTriggers(t, false, tc.tr)
			if diff := cmp.Diff(tc.want, fieldErrs(errs)); diff != "" {
				t.Fatalf("Validate errors (-want +got):\n%s", diff)
			}
			if msg := fmt.Sprint(errs.ToAggregate()); !strings.Contains(msg, tc.message) {
				t.Errorf("message %q does not say %q", msg, tc.message)
			}
		})
	}
}

// TestV11PlaceholdersAreWhatTheAutoscalerFills: the placeholder set
// admission allows is exactly the set of values a scaler receives.
func TestV11PlaceholdersAreWhatTheAutoscalerFills(t *testing.T) {
	k := &kindLoop{kind: "RackedCluster", resource: "rackedclusters"}
	vars := k.scalerVars(types.NamespacedName{Namespace: "shop", Name: "cart"})
	got := slices.Sorted(maps.Keys(vars))
	if diff := cmp.Diff(slices.Sorted(slices.Values(promql.TriggerPlaceholders)), got); diff != "" {
		t.Errorf("placeholders filled (-allowed +filled):\n%s", diff)
	}
}

// TestV10StoredQueryOverTheLimitsIsNeverRun: a trigger stored before its
// query was refused (an upgrade, a bypassed webhook) gets no scaler: it is
// an invalid trigger with the bound in its problem, the count is kept, and
// its query is neither requested from the store nor evaluated.
func TestV10StoredQueryOverTheLimitsIsNeverRun(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a, store := newStoreAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	c := cfg(1, 5).trigger("rps", 4).query(`max_over_time(sum(rate(hostile_total[5m]))[10y:1ms])`).obj()
	st := newWorkload(types.NamespacedName{Namespace: "shop", Name: "cart"}, 0)
	d := k.decide(context.Background(), nil, st, scaling.Workload{Replicas: ptr(int32(2)), Config: c}, now, time.Time{})
	if d.Desired != 2 || len(d.Triggers) != 1 || !strings.Contains(d.Triggers[0].Problem, "315360000001 points per series, over the limit of 11000") {
		t.Errorf("decision %+v, want the count kept and the bound named", d.Triggers)
	}
	if store.Registry().Has("hostile_total") {
		t.Error("the query over the limits was requested from the store")
	}
}
