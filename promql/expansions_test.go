package promql

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	prom "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// expansionQueries are written queries the engine evaluates (outside the
// direct path), substituted or not.
var expansionQueries = []string{
	`sum by (pod) (rate(m_total{namespace="${namespace}",job="${name}"}[1m]))`,
	`histogram_quantile(0.9, sum by (le) (rate(m_total{job="${name}"}[2m])))`,
	`sum(rate(m_total{job="${name}"}[1m] offset 30s)) / sum(m_total{namespace!="${namespace}"})`,
	`max_over_time(sum(m_total{job="${name}"})[2m:30s])`,
	`sum(m_total{job="${name}"}) > on() group_left sum(m_total{job="${name}",pod="${name}"})`,
	`quantile(0.5, m_total{job=~"${name}"})`,
	`sum(m_total{job="${name}-x"})`,
	`sum(${name}_total{job="x"})`,
	`label_replace(sum(m_total{job="${name}"}), "a", "${name}", "", "")`,
	`sum(m_total{job="${name}"}) # ${namespace}`,
	`count(m_total)`,
}

// TestExpansionTreesMatchTheParser: the tree the engine's parser builds
// from a written query's tree, with a workload's values, is the tree it
// would parse from the expanded query (same text and matchers), and
// evaluating through it gives the plain engine's results.
func TestExpansionTreesMatchTheParser(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s := NewStore(Options{Now: func() time.Time { return now }})
	fillRandom(t, s, rand.New(rand.NewPCG(9, 10)), now.Add(-30*time.Minute), now)
	ev := NewEvaluator(s, EvaluatorOptions{Now: func() time.Time { return now }, EngineOnly: true})
	plain := prom.NewEngine(EngineOptions(DefaultTimeout, DefaultMaxSamples, 0, nil))
	c := &exprCache{Parser: parser.NewParser(parserOptions), limits: &ev.limits, expansions: &expansions{}}
	substituted := 0
	for _, q := range expansionQueries {
		for _, name := range []string{"j0", "j1", "j.1", `j"1`} {
			vars := TriggerVars("n0", name, "Kind", "kinds")
			expanded, err := Expand(q, vars)
			if err != nil {
				continue // a name unsafe where the query puts it
			}
			want, err := parser.NewParser(parserOptions).ParseExpr(expanded)
			if err != nil {
				t.Fatalf("parse %s: %v", expanded, err)
			}
			c.expansions.begin(expanded, q, vars)
			got, _, ok := c.expansions.tree(expanded, c.parse)
			c.expansions.end(expanded)
			if ok {
				substituted++
				if got.String() != want.String() {
					t.Errorf("%s with %s: tree %s, parser %s", q, name, got, want)
				}
				if diff := cmp.Diff(selectorMatchers(want), selectorMatchers(got)); diff != "" {
					t.Errorf("%s with %s: matchers (-parser +tree):\n%s", q, name, diff)
				}
			}

			r, err := ev.Eval(context.Background(), q, now, vars)
			pq, perr := plain.NewInstantQuery(context.Background(), s, nil, expanded, now)
			if perr != nil {
				t.Fatal(perr)
			}
			pres := pq.Exec(context.Background())
			pr, perr := resultOf(pres.Value)
			if pres.Err != nil {
				perr = pres.Err
			}
			if (err == nil) != (perr == nil) || err == nil && !(r.Kind == pr.Kind && (r.Value == pr.Value || math.IsNaN(r.Value) && math.IsNaN(pr.Value)) && labels.Equal(r.Labels, pr.Labels)) {
				t.Errorf("%s with %s: evaluator %+v (%v), plain engine %+v (%v)", q, name, r, err, pr, perr)
			}
		}
	}
	if substituted == 0 {
		t.Fatal("no query was built from its written tree")
	}
	// Values that would need escaping or hold regular-expression
	// characters, metric-name and regular-expression placeholders are
	// parsed as before.
	for _, tc := range []struct{ q, name string }{
		{expansionQueries[0], "j.1"}, {expansionQueries[0], `j"1`}, {expansionQueries[5], "j0"}, {expansionQueries[6], "j0"}, {expansionQueries[7], "j0"}, {expansionQueries[8], "j0"},
	} {
		vars := TriggerVars("n0", tc.name, "Kind", "kinds")
		expanded, _ := Expand(tc.q, vars)
		c.expansions.begin(expanded, tc.q, vars)
		if _, _, ok := c.expansions.tree(expanded, c.parse); ok {
			t.Errorf("%s with %s was built from its written tree", tc.q, tc.name)
		}
		c.expansions.end(expanded)
	}
	if len(c.expansions.pending) != 0 {
		t.Errorf("pending expansions left: %v", c.expansions.pending)
	}
}

func selectorMatchers(e parser.Expr) []string {
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for _, m := range vs.LabelMatchers {
				out = append(out, fmt.Sprintf("%s %s %q", m.Name, m.Type, m.Value))
			}
		}
		return nil
	})
	return out
}
