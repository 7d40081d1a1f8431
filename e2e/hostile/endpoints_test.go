package hostile

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// callResult is what the metrics server answered: the status, and for the
// debug endpoints the fields of its JSON body that say what happened.
type callResult struct {
	Status int
	// Bound is the query limit a 422 names (V10).
	Bound string `json:",omitempty"`
	// Value is a successful evaluation's result.
	Value *float64 `json:",omitempty"`
}

// call sends one request to the metrics server with bearer (empty: none).
func (s *suite) call(ctx context.Context, method, path, bearer string, body io.Reader) (callResult, []byte, error) {
	return s.callWith(ctx, s.metrics, method, path, bearer, body)
}

// callWith is call through the client c.
func (s *suite) callWith(ctx context.Context, c *http.Client, method, path, bearer string, body io.Reader) (callResult, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.bin.metricsBase+path, body)
	if err != nil {
		return callResult{}, nil, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return callResult{}, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return callResult{}, nil, fmt.Errorf("read the answer: %w", err)
	}
	got := callResult{Status: resp.StatusCode}
	var b struct {
		Bound string   `json:"bound"`
		Value *float64 `json:"value"`
	}
	if json.Unmarshal(data, &b) == nil {
		// A refusal's "value" is the measure that broke the bound.
		got.Bound = b.Bound
		if resp.StatusCode == http.StatusOK {
			got.Value = b.Value
		}
	}
	return got, data, nil
}

// callInput is one request to the metrics server.
type callInput struct {
	name   string
	method string // default POST
	path   string
	// bearer: "" the caller's token, "-" none, anything else as given.
	bearer string
	body   func() io.Reader
	want   callResult
}

func (s *suite) runCalls(t *testing.T, area string, inputs []callInput) {
	t.Helper()
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			method, bearer := in.method, in.bearer
			if method == "" {
				method = http.MethodPost
			}
			switch bearer {
			case "":
				bearer = s.token
			case "-":
				bearer = ""
			}
			body := io.Reader(nil)
			if in.body != nil {
				body = in.body()
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got, data, err := s.call(ctx, method, in.path, bearer, body)
			if err != nil {
				t.Fatalf("%s %s: %v", method, in.path, err)
			}
			if got.Status != in.want.Status {
				t.Logf("answer: %.1000s", data)
			}
			s.expect(t, area, in.name, in.want, got, false)
		})
	}
}

// metricsTLS accepts the metrics server's self-signed certificate.
var metricsTLS = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed on loopback

func status(code int) callResult { return callResult{Status: code} }

// overBound is a 422 naming the query limit exceeded.
func overBound(bound string) callResult { return callResult{Status: 422, Bound: bound} }

func evalBody(query string) func() io.Reader { return text(string(mustJSON(obj{"query": query}))) }

// debugRequestInputs: requests to the debug endpoints that are malformed,
// unauthenticated or out of range (each once got through: a bogus token was a
// 500, nowUnixSeconds 1e300 evaluated at 0, trailing garbage and unknown
// fields were accepted).
func (s *suite) debugRequestInputs(t *testing.T) {
	const eval, store = "/debug/promql/eval", "/debug/store"
	one := 1.0
	vars := obj{}
	for i := range 3000 {
		vars[fmt.Sprintf("v%d", i)] = "x"
	}
	s.runCalls(t, areaDebug, []callInput{
		{name: "eval: valid (control)", path: eval, body: evalBody("vector(1)"), want: callResult{Status: 200, Value: &one}},
		{name: "eval: no token", path: eval, bearer: "-", body: evalBody("vector(1)"), want: status(401)},
		{name: "eval: bogus token", path: eval, bearer: "bogus", body: evalBody("vector(1)"), want: status(401)},
		{name: "eval: token of 60 KiB", path: eval, bearer: strings.Repeat("t", 60<<10), body: evalBody("vector(1)"), want: status(401)},
		{name: "eval: trailing garbage", path: eval, body: text(`{"query":"vector(1)"} garbage`), want: status(400)},
		{name: "eval: two objects", path: eval, body: text(`{"query":"vector(1)"}{"query":"vector(2)"}`), want: status(400)},
		{name: "eval: unknown field", path: eval, body: text(`{"query":"vector(1)","now":5}`), want: status(400)},
		{name: "eval: nowUnixSeconds 1e300", path: eval, body: text(`{"query":"vector(1)","nowUnixSeconds":1e300}`), want: status(400)},
		{name: "eval: nowUnixSeconds NaN", path: eval, body: text(`{"query":"vector(1)","nowUnixSeconds":NaN}`), want: status(400)},
		{name: "eval: nowUnixSeconds \"NaN\"", path: eval, body: text(`{"query":"vector(1)","nowUnixSeconds":"NaN"}`), want: status(400)},
		{name: "eval: nowUnixSeconds -1e20", path: eval, body: text(`{"query":"vector(1)","nowUnixSeconds":-1e20}`), want: status(400)},
		{name: "eval: nowUnixSeconds -1", path: eval, body: text(`{"query":"vector(1)","nowUnixSeconds":-1}`), want: status(400)},
		{name: "eval: nowUnixSeconds 1e400", path: eval, body: text(`{"query":"vector(1)","nowUnixSeconds":1e400}`), want: status(400)},
		{name: "eval: not JSON", path: eval, body: text(`query=vector(1)`), want: status(400)},
		{name: "eval: empty body", path: eval, body: text(``), want: status(400)},
		{name: "eval: empty query", path: eval, body: text(`{"query":"  "}`), want: status(400)},
		{name: "eval: query of invalid UTF-8", path: eval, body: text("{\"query\":\"up{a=\\\"\xff\\\"}\"}"), want: status(400)},
		{name: "eval: unknown placeholder", path: eval, body: text(`{"query":"sum(up{namespace=\"${namspace}\"})"}`), want: status(400)},
		{name: "eval: 3,000 vars", path: eval, body: text(string(mustJSON(obj{"query": "vector(1)", "vars": vars}))), want: callResult{Status: 200, Value: &one}},
		{name: "eval: GET", method: http.MethodGet, path: eval, want: status(405)},
		{name: "eval: 2 MiB body", path: eval, body: text(`{"query":"` + strings.Repeat("a", 2<<20) + `"}`), want: status(413)},
		{name: "eval: 1 MB query", path: eval, body: evalBody(strings.Repeat("a", 1_000_000)), want: status(413)},
		{name: "store: valid (control)", method: http.MethodGet, path: store, want: status(200)},
		{name: "store: no token", method: http.MethodGet, path: store, bearer: "-", want: status(401)},
		{name: "store: bogus token", method: http.MethodGet, path: store, bearer: "bogus", want: status(401)},
		{name: "store: malformed JWT", method: http.MethodGet, path: store, bearer: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", want: status(401)},
		{name: "store: POST", path: store, body: text(`{}`), want: status(405)},
		{name: "explain: a path outside any namespace", method: http.MethodGet, path: "/debug/autoscaler/..%2f..%2fetc/rackedclusters/x", want: status(400)},
	})
}

// debugQueryInputs: cost bombs sent straight to the evaluator (V10 at the
// debug endpoint): before the bounds, [10y:1ms] killed the process and a
// 1 MB query never answered.
func (s *suite) debugQueryInputs(t *testing.T) {
	const eval = "/debug/promql/eval"
	s.runCalls(t, areaDebug, []callInput{
		{name: "eval: subquery [10y:1ms]", path: eval, body: evalBody(`max_over_time(up[10y:1ms])`), want: overBound("points per series")},
		{name: "eval: nested subqueries", path: eval, body: evalBody(`max_over_time(max_over_time(rate(up[1m])[1d:1s])[7d:1s])`), want: overBound("points per series")},
		{name: "eval: range selector over ten years", path: eval, body: evalBody(`sum(rate(up[10y]))`), want: overBound("points per series")},
		{name: "eval: 5 KB query", path: eval, body: evalBody(strings.TrimSuffix(strings.Repeat("up + ", 1000), " + ")), want: overBound("length")},
		{name: "eval: 2,000 nested parentheses", path: eval, body: evalBody(strings.Repeat("(", 2000) + "up" + strings.Repeat(")", 2000)), want: overBound("depth")},
		{name: "eval: regular expression bomb", path: eval, body: evalBody(`sum(up{pod=~"` + strings.Repeat(".{1000}", 500) + `"})`), want: overBound("regex size")},
		{name: "eval: 60 KB query", path: eval, body: evalBody(strings.TrimSuffix(strings.Repeat("up + ", 12000), " + ")), want: overBound("length")},
	})
	// The evaluator still answers after them.
	one := 1.0
	s.runCalls(t, areaDebug, []callInput{{name: "eval: valid after the bombs", path: eval, body: evalBody("vector(1)"), want: callResult{Status: 200, Value: &one}}})
}

// activityInputs: the activity endpoint, which a gateway calls on every
// request to a sleeping workload, so it is the most exposed: bad names,
// traversals, bodies, unknown kinds, floods.
func (s *suite) activityInputs(t *testing.T) {
	// A workload to wake: idle settings make it one the autoscaler keeps.
	wl := framework.RackedCluster(s.ns, "sleeper", 1, 1)
	wl.Object["spec"].(obj)["scaleConfig"] = scheduleConfig()
	if err := cluster.Client.Create(context.Background(), wl); err != nil {
		t.Fatalf("create the workload to wake: %v", err)
	}
	base := "/activity/" + s.ns + "/rackedclusters/"
	// One at a time (in parallel with each other), then the floods alone.
	t.Run("single requests", func(t *testing.T) {
		s.runCalls(t, areaActivity, []callInput{
			{name: "valid (control)", path: base + "sleeper", want: status(202)},
			{name: "kind named by its group-qualified resource", path: "/activity/" + s.ns + "/rackedclusters.samples.scaleplane.io/sleeper", want: status(202)},
			{name: "no token", path: base + "sleeper", bearer: "-", want: status(401)},
			{name: "bogus token", path: base + "sleeper", bearer: "bogus", want: status(401)},
			{name: "GET", method: http.MethodGet, path: base + "sleeper", want: status(405)},
			{name: "name in upper case", path: base + "Sleeper", want: status(400)},
			{name: "namespace with an underscore", path: "/activity/not_a_namespace/rackedclusters/sleeper", want: status(400)},
			{name: "name of 300 characters", path: base + strings.Repeat("a", 300), want: status(400)},
			{name: "encoded slash in the name", path: base + "sleeper%2F..", want: status(400)},
			{name: "encoded dots as the name", path: base + "%2e%2e", want: status(400)},
			{name: "encoded NUL in the name", path: base + "sleeper%00", want: status(400)},
			// The server's mux answers a path that is not clean with a
			// redirect to the clean one (which the caller must be authorized
			// for in turn); it serves nothing else.
			{name: "dot-dot segments", path: base + "../../../debug/store", want: status(307)},
			{name: "dot-dot segments to another namespace", path: "/activity/" + s.ns + "/../kube-system/rackedclusters/sleeper", want: status(307)},
			{name: "empty namespace", path: "/activity//rackedclusters/sleeper", want: status(307)},
			{name: "an extra segment", path: base + "sleeper/extra", want: status(404)},
			{name: "unknown resource", path: "/activity/" + s.ns + "/deployments/sleeper", want: status(404)},
			{name: "unknown workload", path: base + "nobody", want: status(404)},
			{name: "body of 4 KiB", path: base + "sleeper", body: text(strings.Repeat("x", 4<<10)), want: status(413)},
			{name: "body of 2 MiB", path: base + "sleeper", body: text(strings.Repeat("x", 2<<20)), want: status(413)},
			{name: "small JSON body (ignored)", path: base + "sleeper", body: text(`{}`), want: status(202)},
		})
	})
	t.Run("Scalings", s.scalingInputs)
	t.Run("flood", func(t *testing.T) {
		got := s.flood(t, "metrics", 300, func(ctx context.Context, c *http.Client) (int, error) {
			r, _, err := s.callWith(ctx, c, http.MethodPost, base+"sleeper", s.token, nil)
			return r.Status, err
		}, metricsTLS, 202, 429)
		s.expect(t, areaActivity, "300 clients at once, each its own connection", floodResult{}, got, false)
	})
	t.Run("flood of bad names", func(t *testing.T) {
		got := s.flood(t, "metrics", 300, func(ctx context.Context, c *http.Client) (int, error) {
			r, _, err := s.callWith(ctx, c, http.MethodPost, base+"NOT-A-NAME", s.token, nil)
			return r.Status, err
		}, metricsTLS, 400, 429)
		s.expect(t, areaActivity, "300 clients at once with bad names", floodResult{}, got, false)
	})
}
