package promql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/promql/parser"
)

// TestExprCacheHandsOutCopies: what the engine does to one evaluation's
// tree (rewriting arguments, storing the selected series) must not reach
// the next evaluation of the same query.
func TestExprCacheHandsOutCopies(t *testing.T) {
	c := newExprCache(parser.NewParser(parserOptions))
	const query = `sum(rate(x{job="a"}[1m] @ start())) + max_over_time(y[5m:30s] offset 1m)`
	first, err := c.ParseExpr(query)
	if err != nil {
		t.Fatal(err)
	}
	want := first.String()
	// Mutate every node the engine may touch.
	parser.Inspect(first, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			n.Series = nil
			n.LabelMatchers = append(n.LabelMatchers, n.LabelMatchers[0])
			ts := int64(42)
			n.Timestamp = &ts
		case *parser.Call:
			n.Args[0] = &parser.NumberLiteral{Val: 1}
		case *parser.SubqueryExpr:
			n.Step = 0
		}
		return nil
	})
	second, err := c.ParseExpr(query)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, second.String()); diff != "" {
		t.Errorf("second parse of the same query (-want +got):\n%s", diff)
	}
	fresh, err := parser.NewParser(parserOptions).ParseExpr(query)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fresh.String(), second.String()); diff != "" {
		t.Errorf("cached tree differs from a fresh parse (-want +got):\n%s", diff)
	}
}

// TestEvalSameQueryConcurrently is meant for -race: evaluations of one
// query string share nothing the engine writes.
func TestEvalSameQueryConcurrently(t *testing.T) {
	s := slimfaasStore(t)
	ev := NewEvaluator(s, EvaluatorOptions{})
	queries := []string{
		`sum(rate(http_server_requests_seconds_count[1m]))`,
		`max_over_time(slimfaas_function_queue_ready_items{function="fibonacci"}[1m:10s])`,
		`histogram_quantile(0.95, sum by (le) (rate(http_server_requests_seconds_bucket[1m])))`,
	}
	want := make([]Result, len(queries))
	for i, q := range queries {
		r, err := ev.Eval(context.Background(), q, evalAt, nil)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		want[i] = r
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				for i, q := range queries {
					r, err := ev.Eval(context.Background(), q, evalAt, nil)
					if err != nil {
						t.Errorf("%s: %v", q, err)
						return
					}
					if r.Value != want[i].Value && !(r.Kind == KindNaN && want[i].Kind == KindNaN) {
						t.Errorf("%s = %v, want %v", q, r.Value, want[i].Value)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestExprCacheBounded: the engine's parse cache holds at most
// maxCachedExprs trees and about maxCachedExprBytes of them, whatever the
// queries hold: one with a large regular expression weighs as much as
// hundreds of plain ones.
func TestExprCacheBounded(t *testing.T) {
	c := newExprCache(parser.NewParser(parserOptions))
	heavy := `up{a=~"` + strings.Repeat(".{1000}", 9) + `", b="%d"}`
	for i := range 1000 {
		if _, err := c.ParseExpr(fmt.Sprintf(heavy, i)); err != nil {
			t.Fatal(err)
		}
		c.mtx.RLock()
		n, bytes := len(c.exprs), c.bytes
		c.mtx.RUnlock()
		if n > maxCachedExprs || bytes > maxCachedExprBytes {
			t.Fatalf("after %d queries the cache holds %d trees of about %d bytes, over %d trees or %d bytes", i+1, n, bytes, maxCachedExprs, maxCachedExprBytes)
		}
	}
	// Each heavy tree is estimated at about 360 KB, as measured.
	if cost := treeCost(fmt.Sprintf(heavy, 0), mustParse(t, fmt.Sprintf(heavy, 0))); cost < 300_000 {
		t.Errorf("treeCost of a 9,000-instruction regex = %d, want at least 300 KB", cost)
	}
}

func mustParse(t *testing.T, q string) parser.Expr {
	t.Helper()
	e, err := parser.NewParser(parserOptions).ParseExpr(q)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
