package promql

import (
	"fmt"
	"strings"
	"testing"
)

// TestTriggerCheckerCached: a cached answer is the answer checking gives,
// for valid and invalid queries alike, and the cache never outgrows its
// bound.
func TestTriggerCheckerCached(t *testing.T) {
	c := NewTriggerChecker(Limits{})
	queries := []string{
		`sum(rate(http_requests_total{namespace="${namespace}"}[2m]))`,
		`sum(rate(http_requests_total{namespace="${namespace}"}[2m])`,
		`sum(up{namespace="${namspace}"})`,
		`http_requests_total[5m]`,
		`"a string"`,
		`max_over_time(up[10y:1ms])`,
		strings.Repeat("x", 5000),
	}
	for _, q := range queries {
		want := fmt.Sprint(c.check(q))
		for range 2 {
			if got := fmt.Sprint(c.Check(q)); got != want {
				t.Errorf("Check(%.40q) = %s, want %s", q, got, want)
			}
		}
	}
	for i := range 3 * maxCheckAnswers {
		_ = c.Check(fmt.Sprintf("up{job=%q}", fmt.Sprint(i)))
		c.cache.mu.RLock()
		n := len(c.cache.answers)
		c.cache.mu.RUnlock()
		if n > maxCheckAnswers {
			t.Fatalf("the checker holds %d answers, more than its bound %d", n, maxCheckAnswers)
		}
	}
}

// TestTriggerCheckerMessages: what admission says of a trigger query.
func TestTriggerCheckerMessages(t *testing.T) {
	c := NewTriggerChecker(Limits{})
	tests := []struct{ query, want string }{
		{`sum(rate(x[1m])`, "must be valid PromQL: 1:16: parse error: unclosed left parenthesis"},
		{`up{a="${nope}"}`, "unknown placeholder ${nope}; known placeholders: ${kind}, ${namespace}, ${name}, ${resource}"},
		{`x[5m]`, "must yield an instant vector or a scalar, not a range vector; wrap it in a function such as rate(...) or avg_over_time(...)"},
		{`"x"`, "must yield an instant vector or a scalar, not a string; compute a number, e.g. sum(rate(requests_total[1m]))"},
		{`max_over_time(up[1y:])`, "the subquery at offset 14 needs 525601 points per series, over the limit of 11000; use a shorter range or a longer step, or raise the configured maxPointsPerSeries"},
		{`sum(up{namespace="${namespace}",pod=~"${name}-.*",kind="${kind}",resource="${resource}"})`, "<nil>"},
	}
	for _, tc := range tests {
		if got := fmt.Sprint(c.Check(tc.query)); got != tc.want {
			t.Errorf("Check(%q) = %s\nwant %s", tc.query, got, tc.want)
		}
	}
}
