package promql

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// verdict is what a test compares of a Check error: its type and fields,
// without the message.
type verdict struct {
	Kind         string
	Bound        string
	Limit, Value int64
	Start        int
	Text         string
}

func verdictOf(err error) verdict {
	var (
		le *LimitError
		qe *QueryError
	)
	switch {
	case err == nil:
		return verdict{Kind: "ok"}
	case errors.As(err, &le):
		return verdict{Kind: "limit", Bound: le.Bound, Limit: le.Limit, Value: le.Value, Start: le.Start}
	case errors.As(err, &qe):
		return verdict{Kind: "query", Start: qe.Start, Text: qe.Err.Error()}
	}
	return verdict{Kind: fmt.Sprintf("%T", err), Text: err.Error()}
}

func points(v int64, start int) verdict {
	return verdict{Kind: "limit", Bound: BoundPoints, Limit: DefaultMaxPointsPerSeries, Value: v, Start: start}
}

func deep(v int64, start int) verdict {
	return verdict{Kind: "limit", Bound: BoundDepth, Limit: DefaultMaxDepth, Value: v, Start: start}
}

// TestV10QueryCost: Check refuses every query over a bound of Limits with
// the bound, its value and where, and accepts the queries triggers are made
// of (V10).
func TestV10QueryCost(t *testing.T) {
	longest := `sum(up{a="` + strings.Repeat("b", DefaultMaxQueryLength-13) + `"})`
	tests := []struct {
		name  string
		query string
		want  verdict
	}{
		// Accepted.
		{"rate over 5 minutes", `sum(rate(http_requests_total{namespace="${namespace}"}[5m]))`, verdict{Kind: "ok"}},
		{"subquery of a rate", `max_over_time(sum(rate(x[1m]))[10m:30s])`, verdict{Kind: "ok"}},
		{"hour of minutes around a 5m rate", `max_over_time(rate(x[5m])[1h:1m])`, verdict{Kind: "ok"}},
		{"range at the bound (15h at 5s)", `rate(x[15h])`, verdict{Kind: "ok"}},
		{"offset and @ change no point count", `max_over_time(up[1h:1s] offset 1w) + max_over_time(up[1h:1s] @ 100)`, verdict{Kind: "ok"}},
		{"longest accepted", longest, verdict{Kind: "ok"}},
		{"100 levels", strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), verdict{Kind: "ok"}},
		{"alternation of 400 pod names", `up{pod=~"` + strings.TrimSuffix(strings.Repeat("web-7f9c-x|", 360), "|") + `"}`, verdict{Kind: "ok"}},
		{"matchers inside braces are not operators", `up{` + strings.Repeat(`a!~"b",`, 200) + `}`, verdict{Kind: "ok"}},
		{"placeholders keep positions", `sum(rate(x{ns="${namespace}"}[1m])`, verdict{Kind: "query", Start: 34, Text: "1:35: parse error: unclosed left parenthesis"}},

		// Subqueries over a long range at a tiny step.
		{"10 years at 1ms", `max_over_time(up[10y:1ms])`, points(315_360_000_001, 14)},
		{"10 years at 1ms around a rate", `max_over_time(sum(rate(x[5m]))[10y:1ms])`, points(315_360_000_001, 14)},
		{"a year without a step (default 1m)", `max_over_time(up[1y:])`, points(525_601, 14)},
		{"negative offset changes nothing", `max_over_time(up[10y:1ms] offset -1h)`, points(315_360_000_001, 14)},
		{"@ changes nothing", `max_over_time(up[10y:1ms] @ 0)`, points(315_360_000_001, 14)},
		{"range as a duration expression", `max_over_time(up[(10 * 365 * 86400):1ms])`, points(315_360_000_001, 14)},
		{"step as a duration expression", `max_over_time(up[1d:1s / 1000])`, points(86_400_001, 14)},
		{"nested: read once per outer step", `max_over_time(max_over_time(up[1h:1s])[1d:1m])`, points(5_187_600, 28)},
		{"nested: the inner evaluation spans the outer range", `max_over_time(max_over_time(up[1m:1s])[1d:1d])`, points(86_461, 28)},
		{"range selector over a day at 5s", `rate(x[1d])`, points(17_280, 5)},
		{"range selector inside a fine subquery", `max_over_time(rate(x[5m])[1h:5s])`, points(43_260, 19)},
		{"range as an expression", `rate(x[5m * 1000])`, points(60_000, 5)},
		{"step 0 as an expression", `max_over_time(up[1h:1s - 1s])`, verdict{Kind: "query", Start: 20, Text: "step must be greater than 0 (step() and range() are 0 in an instant query)"}},
		{"step() of an instant query", `max_over_time(up[1h:step()])`, verdict{Kind: "query", Start: 20, Text: "step must be greater than 0 (step() and range() are 0 in an instant query)"}},
		{"range() of an instant query", `rate(up[range()])`, verdict{Kind: "query", Start: 8, Text: "range must be greater than 0 (step() and range() are 0 in an instant query)"}},
		{"step below a millisecond", `max_over_time(up[1s:0.0001])`, verdict{Kind: "query", Start: 14, Text: "subquery step 100µs is below the engine's resolution of 1ms"}},

		// Length and depth, before parsing.
		{"one byte too long", longest + " ", verdict{Kind: "limit", Bound: BoundLength, Limit: DefaultMaxQueryLength, Value: DefaultMaxQueryLength + 1, Start: -1}},
		{"120 KB chain", strings.Repeat("a + ", 30_000) + "a", verdict{Kind: "limit", Bound: BoundLength, Limit: DefaultMaxQueryLength, Value: 120_001, Start: -1}},
		{"101 parentheses", strings.Repeat("(", 101) + "1" + strings.Repeat(")", 101), deep(101, 100)},
		{"operator chain", strings.Repeat("a + ", 101) + "a", deep(101, 402)},
		{"unary chain", strings.Repeat("-", 101) + "1", deep(101, 100)},
		{"chain of subqueries", "x" + strings.Repeat("[1m:]", 100), deep(101, 496)},
		{"regular expression bomb", `up{a=~"` + strings.Repeat(".{1000}", 500) + `"}`, verdict{Kind: "limit", Bound: BoundRegex, Limit: DefaultMaxRegexSize, Value: 500_501, Start: 6}},
		{"many strings under the bound each", `up{a=~"` + strings.Repeat(".{1000}", 9) + `"} + ` + `up{a=~"` + strings.Repeat(".{1000}", 9) + `"}`, verdict{Kind: "limit", Bound: BoundRegex, Limit: DefaultMaxRegexSize, Value: 18_020, Start: 81}},
		{"label_replace pattern", `label_replace(up, "a", "$1", "b", "` + strings.Repeat(".{1000}", 10) + `")`, verdict{Kind: "limit", Bound: BoundRegex, Limit: DefaultMaxRegexSize, Value: 10_011, Start: 34}},
		{"duration arithmetic", "rate(x[1s" + strings.Repeat("+1s", 100) + "])", deep(101, 300)},
	}
	l := Limits{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, verdictOf(l.Check(tc.query))); diff != "" {
				t.Errorf("Check(%.80q) (-want +got):\n%s", tc.query, diff)
			}
		})
	}
}

// TestV10LimitMessages: each refusal names its bound, the limit and what to
// change.
func TestV10LimitMessages(t *testing.T) {
	tests := []struct {
		query string
		want  string
	}{
		{`max_over_time(up[10y:1ms])`, "the subquery at offset 14 needs 315360000001 points per series, over the limit of 11000; use a shorter range or a longer step, or raise the configured maxPointsPerSeries"},
		{`rate(x[1d])`, "the range selector (at one sample every 5s) at offset 5 needs 17280 points per series, over the limit of 11000; use a shorter range or a longer step, or raise the configured maxPointsPerSeries"},
		{strings.Repeat("x", 5000), "query is 5000 bytes long, over the limit of 4096 bytes; shorten it (a recording rule on a Prometheus server can replace a long expression), or raise the configured maxQueryLength"},
		{`up{a=~"` + strings.Repeat(".{1000}", 500) + `"}`, "the query's regular expressions compile to about 500501 instructions by the string at offset 6, over the limit of 10000; avoid large repeat counts such as .{1000}, or raise the configured maxRegexSize"},
		{strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200), "query nests 101 levels deep at offset 100, over the limit of 100 (each open parenthesis, bracket or brace and each operator in a chain counts one); use fewer nested parentheses or a shorter chain of operators"},
	}
	for _, tc := range tests {
		err := Limits{}.Check(tc.query)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Check(%.40q) = %v\nwant %s", tc.query, err, tc.want)
		}
	}
}

// TestV10LimitsConfigurable: every bound follows its setting.
func TestV10LimitsConfigurable(t *testing.T) {
	l := Limits{MaxQueryLength: 10, MaxDepth: 2, MaxPointsPerSeries: 100, ScrapeInterval: time.Minute}
	tests := []struct {
		query string
		want  verdict
	}{
		{"rate(x[1h])", verdict{Kind: "limit", Bound: BoundLength, Limit: 10, Value: 11, Start: -1}},
		{"((1))", verdict{Kind: "ok"}},
		{"(((1)))", verdict{Kind: "limit", Bound: BoundDepth, Limit: 2, Value: 3, Start: 2}},
		{"x[100m]", verdict{Kind: "ok"}},
		{"x[101m]", verdict{Kind: "limit", Bound: BoundPoints, Limit: 100, Value: 101, Start: 0}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, verdictOf(l.Check(tc.query))); diff != "" {
			t.Errorf("Check(%q) (-want +got):\n%s", tc.query, diff)
		}
	}
}

// hostileQueries are the cost-bomb inputs (V10).
var hostileQueries = map[string]string{
	"subquery 10y:1ms":        `max_over_time(sum(rate(x[5m]))[10y:1ms])`,
	"subquery 1y, no step":    `max_over_time(up[1y:])`,
	"nested subqueries":       `max_over_time(max_over_time(up[1h:1ms])[1d:1m])`,
	"120 KB operator chain":   strings.Repeat("a + ", 30_000) + "a",
	"deep parentheses (4 KB)": strings.Repeat("(", 2000) + "1" + strings.Repeat(")", 2000),
	"regular expression bomb": `up{a=~"` + strings.Repeat(".{1000}", 500) + `"}`,
}

// TestV10EvaluatorRefusesBeforeExecution: the hostile queries, sent to the
// Evaluator directly (no admission in front) and to its engine (past
// Eval's own check), are refused with a *LimitError before the engine
// evaluates anything: the whole refusal allocates less than 4 MB, where the
// first one alone made the engine ask for 2.5 TB (a fatal out of memory)
// before the fix.
func TestV10EvaluatorRefusesBeforeExecution(t *testing.T) {
	ev := NewEvaluator(NewStore(Options{}), EvaluatorOptions{})
	at := time.Unix(1_700_000_000, 0)
	for name, q := range hostileQueries {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, evalErr := ev.Eval(context.Background(), q, at, nil)
			_, engineErr := ev.Engine().NewInstantQuery(context.Background(), ev.queryable, nil, q, at)
			runtime.ReadMemStats(&after)
			for _, err := range []error{evalErr, engineErr} {
				var le *LimitError
				if !errors.As(err, &le) {
					t.Errorf("error = %v (%T), want a *LimitError", err, err)
				}
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("refusing %s allocated %d bytes, want under 4 MB", name, alloc)
			}
		})
	}
}

// TestV10CheckDoesNotParseOverLimits: the length, depth and regex bounds
// are applied before the parser builds anything, so refusing a query
// allocates little whatever its size (parsing the 1 MB chain allocated
// hundreds of megabytes, compiling the regex bomb 150 MB).
func TestV10CheckDoesNotParseOverLimits(t *testing.T) {
	for name, q := range map[string]string{
		"1 MB chain":      strings.Repeat("a + ", 1<<18),
		"4 KB chain":      strings.Repeat("a+", 2000),
		"4 KB parens":     strings.Repeat("(", 4000),
		"4 KB subqueries": "x" + strings.Repeat("[1m:]", 800),
		"regex bomb":      `up{a=~"` + strings.Repeat(".{1000}", 500) + `"}`,
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := Limits{}.Check(q)
		runtime.ReadMemStats(&after)
		var le *LimitError
		if !errors.As(err, &le) {
			t.Errorf("Check(%s) = %v, want a *LimitError", name, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("Check(%s) allocated %d bytes, want under 1 MiB: the parser ran", name, alloc)
		}
	}
}

// BenchmarkCheckQuery measures Check on queries of 1 KB, 4 KB and the
// worst shapes within the limits (a chain of operators and nesting at the
// depth bound, subqueries at the points bound).
func BenchmarkCheckQuery(b *testing.B) {
	sel := `sum(rate(http_requests_total{namespace="${namespace}",job="${name}",code=~"5.."}[1m]))`
	chain := func(n int) string {
		var s strings.Builder
		for s.Len()+2*len(sel)+3 <= n {
			s.WriteString(sel + " + ")
		}
		s.WriteString(sel)
		return s.String()
	}
	widest := `up{a=~"` + strings.Repeat("x|", (DefaultMaxQueryLength-10)/2) + `"}`
	cases := []struct{ name, q string }{
		{"typical", `sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[1m]))`},
		{"1KB", chain(1 << 10)},
		{"4KB", chain(4 << 10)},
		{"max-length-regex", widest[:min(len(widest), DefaultMaxQueryLength)]},
		{"max-depth-operators", strings.Repeat("1+", DefaultMaxDepth-1) + "1"},
		{"max-depth-parens", strings.Repeat("(", DefaultMaxDepth) + "1" + strings.Repeat(")", DefaultMaxDepth)},
		{"max-points-subqueries", `max_over_time(max_over_time(rate(x[5m])[10m:1m])[10m:1m])`},
		{"refused-1MB", strings.Repeat("a + ", 1<<18)},
		{"refused-depth", strings.Repeat("(", 4000)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.q)))
			for b.Loop() {
				_ = Limits{}.Check(c.q)
			}
		})
	}
}

// FuzzLimitsCheck: Check never panics, whatever it is sent, and what it
// accepts the Evaluator's engine accepts too (admission never lets through
// a query the evaluation would refuse for its cost, and the other way
// round), with placeholders filled as admission fills them.
func FuzzLimitsCheck(f *testing.F) {
	for _, q := range []string{
		`sum(rate(http_requests_total{namespace="${namespace}"}[5m]))`,
		`max_over_time(up[10y:1ms])`, `max_over_time(up[1y:])`, `rate(x[1d])`,
		`max_over_time(max_over_time(up[1h:1s])[1d:1m])`, `max_over_time(up[1h:1s - 1s])`,
		`max_over_time(up[1h:step()])`, `x[1m:][1m:]`, `up{a=~".{1000}.{1000}"}`, `-(-(-1))`,
		`up @ 1e300`, `up offset -1h`, "up # comment ${x}\n+ 1", `label_replace(up, "a", "$1", "b", "(.*)")`,
		`((((`, `{__name__=~"a|b"}`, "`raw ${name}`", `1 + `,
	} {
		f.Add(q)
	}
	l := Limits{}.WithDefaults()
	engine := &exprCache{Parser: checkParser, limits: &l}
	f.Fuzz(func(t *testing.T, q string) {
		err := l.Check(q)
		var le *LimitError
		if errors.As(err, &le) && (le.Bound == "" || le.Value <= le.Limit) {
			t.Fatalf("Check(%q) = %v: a limit error within its limit", q, err)
		}
		if err != nil {
			return
		}
		if _, err := engine.parse(FillPlaceholders(q)); err != nil {
			t.Fatalf("Check(%q) accepted what the engine's parser refuses: %v", q, err)
		}
	})
}
