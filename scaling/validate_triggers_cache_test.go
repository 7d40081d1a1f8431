package scaling

import (
	"fmt"
	"testing"
)

// TestCheckQueryCached: a cached answer is the answer parsing gives, for
// valid and invalid queries alike, and the cache never outgrows its bound.
func TestCheckQueryCached(t *testing.T) {
	queries := []string{
		`sum(rate(http_requests_total{namespace="${namespace}"}[2m]))`,
		`sum(rate(http_requests_total{namespace="${namespace}"}[2m])`,
		`http_requests_total[5m]`,
		`"a string"`,
	}
	for _, q := range queries {
		want := fmt.Sprint(parseQuery(q))
		for range 2 {
			if got := fmt.Sprint(checkQuery(q)); got != want {
				t.Errorf("checkQuery(%q) = %s, want %s", q, got, want)
			}
		}
	}
	for i := range 3 * maxCachedQueries {
		_ = checkQuery(fmt.Sprintf("up{job=%q}", fmt.Sprint(i)))
		queryResults.mu.RLock()
		n := len(queryResults.results)
		queryResults.mu.RUnlock()
		if n > maxCachedQueries {
			t.Fatalf("the query cache holds %d answers, more than its bound %d", n, maxCachedQueries)
		}
	}
}
