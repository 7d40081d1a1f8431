package promql

import (
	"context"
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
