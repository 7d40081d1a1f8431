package promql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	prom "github.com/prometheus/prometheus/promql"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

type response struct {
	Status      int
	ContentType string
	Body        map[string]any
}

func do(t *testing.T, h http.Handler, method, path, body string, header http.Header) response {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := response{Status: rec.Code, ContentType: rec.Header().Get("Content-Type")}
	raw, _ := io.ReadAll(rec.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &res.Body); err != nil {
			t.Fatalf("%s %s: body %q is not JSON: %v", method, path, raw, err)
		}
	}
	return res
}

// failingSource stands in for an evaluation that breaks (e.g. a remote
// server that is down).
type failingSource struct{}

func (failingSource) Eval(context.Context, string, time.Time, map[string]string) (Result, error) {
	return Result{}, errors.New("query timed out in expression evaluation")
}

// timingOutSource stands in for an evaluation over the Timeout bound.
type timingOutSource struct{}

func (timingOutSource) Eval(context.Context, string, time.Time, map[string]string) (Result, error) {
	return Result{}, fmt.Errorf("evaluate %q: %w", "up", prom.ErrQueryTimeout("query timed out in expression evaluation"))
}

// cancelledSource stands in for an evaluation whose request ended.
type cancelledSource struct{}

func (cancelledSource) Eval(context.Context, string, time.Time, map[string]string) (Result, error) {
	return Result{}, fmt.Errorf("evaluate %q: %w", "up", prom.ErrQueryCanceled("context canceled"))
}

func TestDebugEval(t *testing.T) {
	store := slimfaasStore(t)
	ev := NewEvaluator(store, EvaluatorOptions{})
	h, err := NewDebugHandler(store, ev, nil, DebugOptions{Dev: true, Now: func() time.Time { return evalAt }})
	if err != nil {
		t.Fatal(err)
	}
	broken, err := NewDebugHandler(store, failingSource{}, nil, DebugOptions{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	// V10: an evaluation over maxSamples is the query's own cost, a 4xx
	// naming the bound, never a 500.
	tightLimits := Limits{MaxSamples: 2}
	tight, err := NewDebugHandler(store, NewEvaluator(store, EvaluatorOptions{Limits: tightLimits}), nil, DebugOptions{Dev: true, Now: func() time.Time { return evalAt }, Limits: tightLimits})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := NewDebugHandler(store, timingOutSource{}, nil, DebugOptions{Dev: true, Limits: Limits{Timeout: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := NewDebugHandler(store, cancelledSource{}, nil, DebugOptions{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	at := `, "nowUnixSeconds": 1732100300`
	tests := []struct {
		name    string
		handler http.Handler
		method  string
		body    string
		want    response
	}{{
		name: "value",
		body: `{"query": "max_over_time(slimfaas_function_queue_ready_items{function=\"fibonacci\"}[30s])"` + at + `}`,
		want: response{Status: 200, ContentType: "application/json", Body: map[string]any{"value": 60.0}},
	}, {
		name: "value with placeholders and default time",
		body: `{"query": "sum(rate(http_server_requests_seconds_count{pod=\"${pod}\"}[1m]))", "vars": {"pod": "a"}}`,
		want: response{Status: 200, ContentType: "application/json", Body: map[string]any{"value": 2.0}},
	}, {
		name: "missing query",
		body: `{"query": ""}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{"error": "query is required"}},
	}, {
		name: "blank query",
		body: `{"query": "   "}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{"error": "query is required"}},
	}, {
		name: "not JSON",
		body: `query=up`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{"error": "invalid JSON body: invalid character 'q' looking for beginning of value"}},
	}, {
		name: "parse error with position",
		body: `{"query": "sum(rate(x[1m])"}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{
			"error":    "1:16: parse error: unclosed left parenthesis",
			"position": map[string]any{"start": 15.0, "end": 15.0},
		}},
	}, {
		name: "unknown placeholder",
		body: `{"query": "up{a=\"${nope}\"}"}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{
			"error":    "unknown placeholder ${nope}; known placeholders: none",
			"position": map[string]any{"start": 6.0, "end": 13.0},
		}},
	}, {
		name: "NaN",
		body: `{"query": "0/0"` + at + `}`,
		want: response{Status: 422, ContentType: "application/json", Body: map[string]any{
			"result": "NaN",
			"error":  "PromQL result is NaN (NaN or Infinity: probably a division by zero or a quantile over empty buckets)",
		}},
	}, {
		name: "Inf",
		body: `{"query": "1/0"` + at + `}`,
		want: response{Status: 422, ContentType: "application/json", Body: map[string]any{
			"result": "Inf",
			"error":  "PromQL result is +Inf (NaN or Infinity: probably a division by zero or a quantile over empty buckets)",
		}},
	}, {
		name: "several series",
		body: `{"query": "rate(http_server_requests_seconds_count[1m])"` + at + `}`,
		want: response{Status: 422, ContentType: "application/json", Body: map[string]any{
			"error": `query returns 2 series ({job="fibonacci", namespace="default", pod="a"}, {job="fibonacci", namespace="default", pod="b"}), not one number; aggregate them, e.g. sum(...) or max(...)`,
		}},
	}, {
		name: "no data",
		body: `{"query": "sum(rate(some_new_metric[1m]))"` + at + `}`,
		want: response{Status: 422, ContentType: "application/json", Body: map[string]any{
			"result": "no data",
			"error":  "query returned no data: no series matched at that time; check the metric name and labels, that the pods are scraped (GET /debug/store) and that the name was requested before the samples arrived",
		}},
	}, {
		name:    "evaluation failure is problem JSON",
		handler: broken,
		body:    `{"query": "up"}`,
		want: response{Status: 500, ContentType: "application/problem+json", Body: map[string]any{
			"type": "about:blank", "title": "Evaluation error", "status": 500.0, "detail": "query timed out in expression evaluation",
		}},
	}, {
		name:    "too many samples",
		handler: tight,
		body:    `{"query": "sum(rate(http_server_requests_seconds_count[1m]))"` + at + `}`,
		want: response{Status: 422, ContentType: "application/json", Body: map[string]any{
			"error": "the query holds more than 2 samples in memory at once, over the limit of maxSamples; select fewer series or a shorter range, or raise the configured maxSamples",
			"bound": "samples",
			"limit": 2.0,
		}},
	}, {
		name:    "evaluation over the timeout",
		handler: slow,
		body:    `{"query": "up"}`,
		want: response{Status: 503, ContentType: "application/json", Body: map[string]any{
			"error": "the evaluation took longer than 3s, the limit of timeoutSeconds; make the query cheaper, try again, or raise the configured timeoutSeconds",
			"bound": "timeout",
			"limit": 3.0,
		}},
	}, {
		name:    "evaluation cancelled",
		handler: cancelled,
		body:    `{"query": "up"}`,
		want: response{Status: 503, ContentType: "application/json", Body: map[string]any{
			"error": "the evaluation was cancelled before it ended (the request's deadline passed, the caller left, or scaleplane is stopping); try again",
		}},
	}, {
		// V10: the debug endpoint's own bounds.
		name: "unknown field",
		body: `{"query": "up", "now": 5}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{"error": `invalid JSON body: json: unknown field "now"`}},
	}, {
		name: "trailing garbage",
		body: `{"query": "up"} garbage`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{
			"error": "invalid JSON body: unexpected data after the JSON object at offset 15 (invalid character 'g' looking for beginning of value); send exactly one object",
		}},
	}, {
		name: "second object",
		body: `{"query": "up"}{"query": "down"}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{
			"error": "invalid JSON body: unexpected data after the JSON object at offset 15; send exactly one object",
		}},
	}, {
		name: "time far in the future",
		body: `{"query": "time()", "nowUnixSeconds": 1e300}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{
			"error": "nowUnixSeconds must be a finite number of seconds from 0 to 9223372036 (2262-04-11), got 1e+300; leave it out to evaluate now",
		}},
	}, {
		name: "time before the epoch",
		body: `{"query": "time()", "nowUnixSeconds": -1}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{
			"error": "nowUnixSeconds must be a finite number of seconds from 0 to 9223372036 (2262-04-11), got -1; leave it out to evaluate now",
		}},
	}, {
		name: "time that is no float",
		body: `{"query": "time()", "nowUnixSeconds": 1e400}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{
			"error": "invalid JSON body: json: cannot unmarshal number 1e400 into Go struct field EvalRequest.nowUnixSeconds of type float64",
		}},
	}, {
		name: "latest time",
		body: `{"query": "time()", "nowUnixSeconds": 9223372036}`,
		want: response{Status: 200, ContentType: "application/json", Body: map[string]any{"value": 9223372036.0}},
	}, {
		name: "a second later",
		body: `{"query": "time()", "nowUnixSeconds": 9223372037}`,
		want: response{Status: 400, ContentType: "application/json", Body: map[string]any{
			"error": "nowUnixSeconds must be a finite number of seconds from 0 to 9223372036 (2262-04-11), got 9.223372037e+09; leave it out to evaluate now",
		}},
	}, {
		name: "subquery over 10 years at 1ms",
		body: `{"query": "max_over_time(sum(rate(x[5m]))[10y:1ms])"}`,
		want: response{Status: 422, ContentType: "application/json", Body: map[string]any{
			"error":    "the subquery at offset 14 needs 315360000001 points per series, over the limit of 11000; use a shorter range or a longer step, or raise the configured maxPointsPerSeries",
			"bound":    "points per series",
			"limit":    11000.0,
			"value":    315360000001.0,
			"position": map[string]any{"start": 14.0, "end": 39.0},
		}},
	}, {
		name: "query over the length bound",
		body: `{"query": "` + strings.Repeat("a + ", 1100) + `a"}`,
		want: response{Status: 422, ContentType: "application/json", Body: map[string]any{
			"error": "query is 4401 bytes long, over the limit of 4096 bytes; shorten it (a recording rule on a Prometheus server can replace a long expression), or raise the configured maxQueryLength",
			"bound": "length",
			"limit": 4096.0,
			"value": 4401.0,
		}},
	}, {
		name: "query nesting too deep",
		body: `{"query": "` + strings.Repeat("(", 150) + `1` + strings.Repeat(")", 150) + `"}`,
		want: response{Status: 422, ContentType: "application/json", Body: map[string]any{
			"error":    "query nests 101 levels deep at offset 100, over the limit of 100 (each open parenthesis, bracket or brace and each operator in a chain counts one); use fewer nested parentheses or a shorter chain of operators",
			"bound":    "depth",
			"limit":    100.0,
			"value":    101.0,
			"position": map[string]any{"start": 100.0, "end": 101.0},
		}},
	}, {
		name: "body of 1 MB",
		body: `{"query": "` + strings.Repeat("a + ", 1<<18) + `a"}`,
		want: response{Status: 413, ContentType: "application/json", Body: map[string]any{
			"error": "request body is over 65536 bytes; a query may be at most 4096 bytes long",
		}},
	}, {
		name:   "GET is not allowed",
		method: http.MethodGet,
		want: response{Status: 405, ContentType: "application/json", Body: map[string]any{
			"error": `use POST with a JSON body {"query": ...}`,
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hh, method := tc.handler, tc.method
			if hh == nil {
				hh = h
			}
			if method == "" {
				method = http.MethodPost
			}
			got := do(t, hh, method, DebugEvalPath, tc.body, http.Header{"Content-Type": {"application/json"}})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Every evaluated query's names are requested, even without data yet.
	if !store.Registry().Has("some_new_metric") {
		t.Error("some_new_metric was not requested by the debug query")
	}
}

func TestDebugStore(t *testing.T) {
	clock := newFakeClock()
	store := NewStore(Options{Now: clock.now})
	store.Request("b_metric", "a_metric")
	for i := range 3 {
		for _, pod := range []string{"x", "y"} {
			if err := store.Append(labels.FromStrings("__name__", "a_metric", "pod", pod), clock.now().UnixMilli(), float64(i)); err != nil {
				t.Fatal(err)
			}
		}
		clock.step()
	}
	sc := newTestScraper(t, store, clock, staticTargets(Target{URL: "http://127.0.0.1:1/metrics", Invalid: "bad port"}), nil)
	sc.Cycle(context.Background())
	h, err := NewDebugHandler(store, NewEvaluator(store, EvaluatorOptions{}), sc, DebugOptions{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	got := do(t, h, http.MethodGet, DebugStorePath, "", nil)
	got.Body["chunkBytes"] = nil // encoding detail
	if used, _ := got.Body["usedBytes"].(float64); used < 2*seriesOverhead {
		t.Errorf("usedBytes %v, want at least the bookkeeping of 2 series", got.Body["usedBytes"])
	}
	got.Body["usedBytes"] = nil
	for _, tg := range got.Body["targets"].([]any) {
		delete(tg.(map[string]any), "lastScrape")
		delete(tg.(map[string]any), "lastDurationSeconds")
	}
	want := response{Status: 200, ContentType: "application/json", Body: map[string]any{
		"requestedMetricNames":           []any{"a_metric", "b_metric"},
		"timestampBuckets":               3.0,
		"seriesCount":                    2.0,
		"totalPoints":                    6.0,
		"refusedSeries":                  0.0,
		"refusedSeriesForBytes":          0.0,
		"refusedSeriesForNamespaceBytes": 0.0,
		"refusedSamples":                 0.0,
		"chunkBytes":                     nil,
		"usedBytes":                      nil,
		"targets": []any{map[string]any{
			"url": "http://127.0.0.1:1/metrics", "health": "down", "lastError": "bad port", "samples": 0.0,
		}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// denyUnauthenticated mimics the metrics server's authn/authz filter: a
// request without a bearer token is refused.
func denyUnauthenticated(_ logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer allowed" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	}), nil
}

func TestDebugAuth(t *testing.T) {
	store := NewStore(Options{})
	ev := NewEvaluator(store, EvaluatorOptions{})
	if _, err := NewDebugHandler(store, ev, nil, DebugOptions{}); err == nil {
		t.Fatal("NewDebugHandler without a filter outside dev mode: want an error")
	}
	h, err := NewDebugHandler(store, ev, nil, DebugOptions{Filter: denyUnauthenticated})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		method string
		path   string
		header http.Header
		want   int
	}{
		{name: "eval without credentials", method: http.MethodPost, path: DebugEvalPath, want: http.StatusUnauthorized},
		{name: "store without credentials", method: http.MethodGet, path: DebugStorePath, want: http.StatusUnauthorized},
		{name: "eval with credentials", method: http.MethodPost, path: DebugEvalPath, header: http.Header{"Authorization": {"Bearer allowed"}}, want: http.StatusOK},
		{name: "store with credentials", method: http.MethodGet, path: DebugStorePath, header: http.Header{"Authorization": {"Bearer allowed"}}, want: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(`{"query": "vector(1)"}`))
			for k, v := range tc.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if diff := cmp.Diff(tc.want, rec.Code); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDebugOnMetricsServer mounts the endpoints the way the manager does:
// as extra handlers of controller-runtime's metrics server, whose filter
// refuses unauthenticated requests.
func TestDebugOnMetricsServer(t *testing.T) {
	store := NewStore(Options{})
	h, err := NewDebugHandler(store, NewEvaluator(store, EvaluatorOptions{}), nil, DebugOptions{ServerFiltered: true})
	if err != nil {
		t.Fatal(err)
	}
	// Reserve a loopback port for the server.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	srv, err := metricsserver.NewServer(metricsserver.Options{
		BindAddress:   addr,
		ExtraHandlers: ExtraHandlers(h),
		FilterProvider: func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
			return denyUnauthenticated, nil
		},
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Start(ctx) }()

	get := func(auth string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+DebugStorePath, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := get(""); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("metrics server did not start: %v", err)
		}
		runtime.Gosched()
	}
	got := map[string]int{}
	for name, auth := range map[string]string{"anonymous": "", "wrong token": "Bearer nope", "allowed": "Bearer allowed"} {
		code, err := get(auth)
		if err != nil {
			t.Fatal(err)
		}
		got[name] = code
	}
	if diff := cmp.Diff(map[string]int{"anonymous": 401, "wrong token": 401, "allowed": 200}, got); diff != "" {
		t.Errorf("status by caller (-want +got):\n%s", diff)
	}
}
