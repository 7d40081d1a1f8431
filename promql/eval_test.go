package promql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/prometheus/model/labels"
	prom "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// evalAt is the evaluation time of the SlimFaas examples: the guide's
// nowUnixSeconds plus 300 s of generated data.
var (
	dataStart = time.Unix(1_732_100_000, 0)
	evalAt    = dataStart.Add(300 * time.Second)
)

// slimfaasStore generates 300 s of data at a 5 s interval for two pods of
// the "fibonacci" function:
//
//   - http_server_requests_seconds_count: pod a counts 2 requests/s; pod b
//     1 request/s but restarts at t=270 s (counter reset to 0).
//   - slimfaas_function_queue_ready_items: one gauge, ((t/5) mod 7) * 10,
//     with a spike of 500 at exactly t=270 s.
//   - http_server_requests_seconds_bucket: per 5 s pod a adds 2, 5, 8, 10,
//     10 to the le=0.1, 0.25, 0.5, 1, +Inf buckets; pod b adds 0, 1, 3, 5, 5.
func slimfaasStore(t *testing.T) *Store {
	t.Helper()
	s := NewStore(Options{Now: func() time.Time { return evalAt }})
	add := func(ls labels.Labels, sec int, v float64) {
		t.Helper()
		if err := s.Append(ls, dataStart.Add(time.Duration(sec)*time.Second).UnixMilli(), v); err != nil {
			t.Fatalf("append %s: %v", ls, err)
		}
	}
	pod := func(name, metric string, extra ...string) labels.Labels {
		return labels.FromStrings(append([]string{"__name__", metric, "namespace", "default", "job", "fibonacci", "pod", name}, extra...)...)
	}
	les := []string{"0.1", "0.25", "0.5", "1", "+Inf"}
	incA := []float64{2, 5, 8, 10, 10}
	incB := []float64{0, 1, 3, 5, 5}
	for sec := 0; sec <= 300; sec += 5 {
		n := float64(sec / 5)
		add(pod("a", "http_server_requests_seconds_count"), sec, 10*n)
		b := float64(sec)
		if sec >= 270 {
			b = float64(sec - 270)
		}
		add(pod("b", "http_server_requests_seconds_count"), sec, b)

		q := float64((sec/5)%7) * 10
		if sec == 270 {
			q = 500
		}
		add(labels.FromStrings("__name__", "slimfaas_function_queue_ready_items", "function", "fibonacci"), sec, q)
		add(pod("a", "slimfaas_function_queue_ready_items_per_pod"), sec, q)
		add(pod("b", "slimfaas_function_queue_ready_items_per_pod"), sec, q+1)

		for i, le := range les {
			add(pod("a", "http_server_requests_seconds_bucket", "le", le), sec, incA[i]*n)
			add(pod("b", "http_server_requests_seconds_bucket", "le", le), sec, incB[i]*n)
		}
	}
	return s
}

type evalOutcome struct {
	Kind  Kind
	Value float64
	Err   string // "query", "shape" or "" (error class)
}

func outcome(r Result, err error) evalOutcome {
	var (
		qe *QueryError
		se *ShapeError
	)
	switch {
	case errors.As(err, &qe):
		return evalOutcome{Err: "query"}
	case errors.As(err, &se):
		return evalOutcome{Err: "shape"}
	case err != nil:
		return evalOutcome{Err: err.Error()}
	}
	return evalOutcome{Kind: r.Kind, Value: r.Value}
}

func TestEvalSlimFaasExamples(t *testing.T) {
	ev := NewEvaluator(slimfaasStore(t), EvaluatorOptions{})
	vars := map[string]string{"namespace": "default", "app": "fibonacci", "name": "fibonacci"}
	tests := []struct {
		name  string
		query string
		want  evalOutcome
	}{{
		// Window (240 s, 300 s] holds 12 samples per pod, 55 s apart end to
		// end; the gap to the window start (5 s) is under 1.1 x the average
		// interval, so Prometheus extrapolates to the full 60 s.
		// Pod a: increase 110 -> 110*60/55 over 60 s = 2/s.
		// Pod b: 245..265 adds 20, the reset at 270 counts the new value (0),
		// 270..300 adds 30: increase 50 -> 50/55 per s.
		name:  "RPS per function: sum(rate) with a counter reset",
		query: `sum(rate(http_server_requests_seconds_count{namespace="${namespace}",job="${app}"}[1m]))`,
		want:  evalOutcome{Kind: KindValue, Value: 2 + 50.0/55},
	}, {
		name:  "RPS of one pod",
		query: `rate(http_server_requests_seconds_count{namespace="${namespace}",job="${app}",pod="a"}[1m])`,
		want:  evalOutcome{Kind: KindValue, Value: 2},
	}, {
		// increase() is rate() times the range: 2/s * 60 s for pod a.
		name:  "increase, unsupported by SlimFaas",
		query: `increase(http_server_requests_seconds_count{pod="a"}[1m])`,
		want:  evalOutcome{Kind: KindValue, Value: 120},
	}, {
		// Window (270 s, 300 s] is left-open: the spike of 500 at exactly
		// 270 s is outside; samples 275..300 are 60, 0, 10, 20, 30, 40.
		name:  "queue length: max_over_time over 30s",
		query: `max_over_time(slimfaas_function_queue_ready_items{function="${app}"}[30s])`,
		want:  evalOutcome{Kind: KindValue, Value: 60},
	}, {
		name:  "queue length divided by a scalar",
		query: `max_over_time(slimfaas_function_queue_ready_items{function="${app}"}[30s]) / 100`,
		want:  evalOutcome{Kind: KindValue, Value: 0.6},
	}, {
		name:  "queue length over 35s includes the spike",
		query: `max_over_time(slimfaas_function_queue_ready_items{function="${app}"}[35s])`,
		want:  evalOutcome{Kind: KindValue, Value: 500},
	}, {
		// Bucket rates per s, summed: le 0.1: 0.4, 0.25: 1.2, 0.5: 2.2,
		// 1: 3.0, +Inf: 3.0. Rank 0.95 * 3.0 = 2.85 falls in (0.5, 1]:
		// 0.5 + 0.5 * (2.85 - 2.2) / (3.0 - 2.2) = 0.90625.
		name:  "p95 latency: histogram_quantile over sum by (le)",
		query: `histogram_quantile(0.95, sum by (le) (rate(http_server_requests_seconds_bucket{namespace="${namespace}",job="${app}"}[1m])))`,
		want:  evalOutcome{Kind: KindValue, Value: 0.90625},
	}, {
		// Rank 0.5 * 3.0 = 1.5 in (0.25, 0.5]: 0.25 + 0.25 * 0.3 / 1.0.
		name:  "p50 latency",
		query: `histogram_quantile(0.5, sum by (le) (rate(http_server_requests_seconds_bucket{job="${app}"}[1m])))`,
		want:  evalOutcome{Kind: KindValue, Value: 0.325},
	}, {
		name:  "two series must be aggregated",
		query: `max_over_time(slimfaas_function_queue_ready_items_per_pod[30s])`,
		want:  evalOutcome{Err: "shape"},
	}, {
		name:  "aggregated per-pod queue",
		query: `max(max_over_time(slimfaas_function_queue_ready_items_per_pod[30s]))`,
		want:  evalOutcome{Kind: KindValue, Value: 61},
	}, {
		name:  "no data is not zero",
		query: `sum(rate(http_server_requests_seconds_count{job="missing"}[1m]))`,
		want:  evalOutcome{Kind: KindNoData},
	}, {
		name:  "scalar",
		query: `scalar(sum(rate(http_server_requests_seconds_count{pod="a"}[1m])))`,
		want:  evalOutcome{Kind: KindValue, Value: 2},
	}, {
		name:  "NaN stays NaN",
		query: `0/0`,
		want:  evalOutcome{Kind: KindNaN, Value: math.NaN()},
	}, {
		name:  "division by zero is +Inf",
		query: `sum(rate(http_server_requests_seconds_count{pod="a"}[1m])) / 0`,
		want:  evalOutcome{Kind: KindInf, Value: math.Inf(1)},
	}, {
		name:  "range vector is not a number",
		query: `http_server_requests_seconds_count{pod="a"}[1m]`,
		want:  evalOutcome{Err: "shape"},
	}, {
		name:  "string is not a number",
		query: `"hello"`,
		want:  evalOutcome{Err: "shape"},
	}, {
		name:  "parse error",
		query: `sum(rate(x[1m])`,
		want:  evalOutcome{Err: "query"},
	}, {
		name:  "unknown placeholder",
		query: `up{pod="${pod}"}`,
		want:  evalOutcome{Err: "query"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := outcome(ev.Eval(context.Background(), tc.query, evalAt, vars))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("Eval(%s) (-want +got):\n%s", tc.query, diff)
			}
		})
	}
}

func TestEvalRegistersMetricNames(t *testing.T) {
	s := NewStore(Options{})
	ev := NewEvaluator(s, EvaluatorOptions{})
	_, err := ev.Eval(context.Background(), `sum(rate(a_total[1m])) / on() group_left b + {__name__="c"}`, time.Time{}, nil)
	if err != nil {
		t.Fatalf("Eval: %v", err)
	}
	if diff := cmp.Diff([]string{"a_total", "b", "c"}, s.Registry().Names()); diff != "" {
		t.Errorf("requested names (-want +got):\n%s", diff)
	}
}

func TestEvalTimeoutAndSampleLimit(t *testing.T) {
	s := slimfaasStore(t)
	tests := []struct {
		name string
		opts EvaluatorOptions
		is   func(error) bool
	}{
		{name: "sample limit", opts: EvaluatorOptions{Limits: Limits{MaxSamples: 5}}, is: func(err error) bool {
			var e prom.ErrTooManySamples
			return errors.As(err, &e)
		}},
		{name: "timeout", opts: EvaluatorOptions{Limits: Limits{Timeout: time.Nanosecond}}, is: func(err error) bool {
			var e prom.ErrQueryTimeout
			return errors.As(err, &e)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewEvaluator(s, tc.opts).Eval(context.Background(), `sum(rate(http_server_requests_seconds_count[5m]))`, evalAt, nil)
			if !tc.is(err) {
				t.Fatalf("Eval error = %v (%T)", err, err)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewEvaluator(s, EvaluatorOptions{}).Eval(ctx, `up`, evalAt, nil); err == nil {
		t.Error("Eval with a cancelled context: want an error")
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"namespace": "team-a", "name": `we"ird\`, "q": "it's", "id": "fn_1"}
	tests := []struct {
		name    string
		query   string
		want    string
		wantErr bool
	}{
		{name: "no placeholder", query: `up{a="b"}`, want: `up{a="b"}`},
		{name: "double quoted", query: `up{namespace="${namespace}"}`, want: `up{namespace="team-a"}`},
		{name: "escapes quote and backslash", query: `up{name="${name}"}`, want: `up{name="we\"ird\\"}`},
		{name: "single quoted", query: `up{q='${q}'}`, want: `up{q='it\'s'}`},
		{name: "raw string", query: "up{q=`${q}`}", want: "up{q=`it's`}"},
		{name: "metric name fragment", query: `${id}_requests_total`, want: `fn_1_requests_total`},
		{name: "unsafe value outside quotes", query: `${namespace}_total`, wantErr: true},
		{name: "unknown placeholder", query: `up{a="${nope}"}`, wantErr: true},
		{name: "unterminated placeholder", query: `up{a="${namespace"}`, wantErr: true},
		{name: "comment left alone", query: "up # ${nope}\n", want: "up # ${nope}\n"},
		{name: "escaped quote inside string", query: `up{a="x\"${id}"}`, want: `up{a="x\"fn_1"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Expand(tc.query, vars)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Expand error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Expand (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpandedValuesParseAsTheSameLabel(t *testing.T) {
	// Whatever a namespace or name holds, it must stay one label value.
	for _, v := range []string{`a"b`, `a\`, "a\nb", `}` + "`", `"} or vector(1) #`} {
		q, err := Expand(`up{v="${v}"}`, map[string]string{"v": v})
		if err != nil {
			t.Fatalf("Expand(%q): %v", v, err)
		}
		names, err := MetricNames(q)
		if err != nil {
			t.Fatalf("MetricNames(%q): %v", q, err)
		}
		if diff := cmp.Diff([]string{"up"}, names); diff != "" {
			t.Errorf("names of %q (-want +got):\n%s", q, diff)
		}
	}
}

// FuzzExpandQuotedValue checks that any placeholder value inside a quoted
// label value comes out of the parser as exactly that value.
func FuzzExpandQuotedValue(f *testing.F) {
	for _, seed := range []string{"default", `a"b`, `a\`, "a\nb", `"} or vector(1) #`, "é\x00\x7f", `\u0041`} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, v string, double bool) {
		if !utf8.ValidString(v) {
			t.Skip("label values are UTF-8")
		}
		q := `up{v='${v}'}`
		if double {
			q = `up{v="${v}"}`
		}
		expanded, err := Expand(q, map[string]string{"v": v})
		if err != nil {
			t.Fatalf("Expand(%q): %v", v, err)
		}
		expr, err := parser.NewParser(parserOptions).ParseExpr(expanded)
		if err != nil {
			t.Fatalf("parse %q: %v", expanded, err)
		}
		vs, ok := expr.(*parser.VectorSelector)
		if !ok {
			t.Fatalf("%q parsed as %T, want one selector", expanded, expr)
		}
		got := ""
		for _, m := range vs.LabelMatchers {
			if m.Name == "v" {
				got = m.Value
			}
		}
		if got != v {
			t.Errorf("label value = %q, want %q (query %q)", got, v, expanded)
		}
	})
}

func TestRegistryOwners(t *testing.T) {
	var r Registry
	steps := []struct {
		name string
		do   func() error
		want []string
	}{
		{name: "debug query", do: func() error { _, err := r.AddQuery(`sum(debug_metric)`); return err }, want: []string{"debug_metric"}},
		{name: "workload triggers", do: func() error {
			return r.SetOwner("ns/a", `sum(rate(req_total[1m]))`, `max(queue)`)
		}, want: []string{"debug_metric", "queue", "req_total"}},
		{name: "other workload shares a name", do: func() error { return r.SetOwner("ns/b", `queue`) }, want: []string{"debug_metric", "queue", "req_total"}},
		{name: "trigger changed", do: func() error { return r.SetOwner("ns/a", `max(latency_bucket)`) }, want: []string{"debug_metric", "latency_bucket", "queue"}},
		{name: "bad query changes nothing", do: func() error {
			if err := r.SetOwner("ns/a", `sum(`); err == nil {
				return errors.New("want a parse error")
			}
			return nil
		}, want: []string{"debug_metric", "latency_bucket", "queue"}},
		{name: "workloads removed", do: func() error {
			if err := r.SetOwner("ns/a"); err != nil {
				return err
			}
			return r.SetOwner("ns/b")
		}, want: []string{"debug_metric"}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, r.Names()); diff != "" {
			t.Errorf("%s: names (-want +got):\n%s", st.name, diff)
		}
	}
}

// TestRegistryOwnersOfKnownNamesKeepTheSet: an owner requesting only names
// already requested leaves the scrape's set as it is (the set is rebuilt
// when it changes, not on every owner, so setting n owners is not n²),
// and the names stay while any owner or one-off request holds them.
func TestRegistryOwnersOfKnownNamesKeepTheSet(t *testing.T) {
	var r Registry
	if err := r.SetOwner("ns/w0", `sum(rate(req_total[1m]))`, `max(queue)`); err != nil {
		t.Fatal(err)
	}
	first := reflect.ValueOf(r.snapshot()).UnsafePointer()
	for i := 1; i < 100; i++ {
		if err := r.SetOwner(fmt.Sprintf("ns/w%d", i), `sum(rate(req_total[1m]))`, `max(queue)`); err != nil {
			t.Fatal(err)
		}
	}
	if got := reflect.ValueOf(r.snapshot()).UnsafePointer(); got != first {
		t.Errorf("the set was rebuilt for owners requesting known names")
	}
	for i := 0; i < 99; i++ {
		if err := r.SetOwner(fmt.Sprintf("ns/w%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"queue", "req_total"}, r.Names()); diff != "" {
		t.Errorf("names with one owner left (-want +got):\n%s", diff)
	}
	r.Add("queue")
	if err := r.SetOwner("ns/w99"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"queue"}, r.Names()); diff != "" {
		t.Errorf("names with the owners gone (-want +got):\n%s", diff)
	}
}
