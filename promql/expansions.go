package promql

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// expansions lets the Evaluator tell its engine's parser which written
// query and placeholder values an expanded query came from, for queries
// the direct path leaves to the engine. The parser then builds the tree
// from the written query's tree, parsed once, with the workload's values
// in its matchers, instead of parsing the expanded query: the parse caches
// are keyed by expanded query, and at 100,000 workloads the 200,000
// distinct queries overflow them, so every tick parsed everything again.
// The engine's API takes only a string, hence the hand-over by expanded
// query around NewInstantQuery.
//
// A written query is substituted only where the result is the tree the
// parser would build from the expanded query: every placeholder is the
// whole value of an = or != matcher on a label other than __name__, and
// every value stands in a quoted string as it is (see safeValue). Anything
// else is parsed as before. TestExpansionTreesMatchTheParser holds the
// trees equal.
type expansions struct {
	mu sync.Mutex
	// pending are the expanded queries being handed to the engine now,
	// with where they came from.
	pending map[string]expansion
	// trees are the written queries' trees, nil for one that is not
	// substituted.
	trees map[string]*writtenTree
}

type expansion struct {
	query string
	vars  map[string]string
	// uses counts the evaluations handing this expanded query over at
	// once.
	uses int
}

// writtenTree is a written query parsed with stand-ins for its
// placeholders.
type writtenTree struct {
	expr  parser.Expr
	holes []treeHole
	names []string
}

// treeHole is a matcher whose value is a placeholder: the selector's
// index in parser.Inspect's order, the matcher's index in it, and the
// placeholder's name.
type treeHole struct {
	selector, matcher int
	key               string
}

// begin announces that expanded, from query and vars, goes to the engine;
// call end(expanded) when NewInstantQuery returned.
func (x *expansions) begin(expanded, query string, vars map[string]string) {
	x.mu.Lock()
	if x.pending == nil {
		x.pending = map[string]expansion{}
	}
	p := x.pending[expanded]
	x.pending[expanded] = expansion{query: query, vars: vars, uses: p.uses + 1}
	x.mu.Unlock()
}

func (x *expansions) end(expanded string) {
	x.mu.Lock()
	if p := x.pending[expanded]; p.uses > 1 {
		p.uses--
		x.pending[expanded] = p
	} else {
		delete(x.pending, expanded)
	}
	x.mu.Unlock()
}

// tree returns the tree of input built from its written query's, and the
// metric names it reads; ok is false when input is not pending or its
// written query is not substituted. parse parses (and checks) the
// written query with stand-ins, once.
func (x *expansions) tree(input string, parse func(string) (parser.Expr, error)) (_ parser.Expr, names []string, ok bool) {
	x.mu.Lock()
	p, pending := x.pending[input]
	var t *writtenTree
	known := false
	if pending {
		t, known = x.trees[p.query]
	}
	x.mu.Unlock()
	if !pending {
		return nil, nil, false
	}
	if !known {
		t = newWrittenTree(p.query, p.vars, parse)
		if len(p.query) <= maxCachedQueryLen {
			x.mu.Lock()
			if x.trees == nil || len(x.trees) >= maxCheckAnswers {
				x.trees = map[string]*writtenTree{}
			}
			x.trees[p.query] = t
			x.mu.Unlock()
		}
	}
	if t == nil {
		return nil, nil, false
	}
	for _, h := range t.holes {
		if v, ok := p.vars[h.key]; !ok || !safeValue(v) {
			return nil, nil, false
		}
	}
	e, ok := cloneExpr(t.expr)
	if !ok {
		return nil, nil, false
	}
	selector, next := 0, 0
	var err error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, isVS := n.(*parser.VectorSelector)
		if !isVS {
			return nil
		}
		for next < len(t.holes) && t.holes[next].selector == selector {
			h := t.holes[next]
			if next == 0 || t.holes[next-1].selector != selector {
				vs.LabelMatchers = slices.Clone(vs.LabelMatchers)
			}
			m := vs.LabelMatchers[h.matcher]
			if vs.LabelMatchers[h.matcher], err = labels.NewMatcher(m.Type, m.Name, p.vars[h.key]); err != nil {
				return err
			}
			next++
		}
		selector++
		return nil
	})
	if err != nil || next != len(t.holes) {
		return nil, nil, false
	}
	return e, t.names, true
}

// expandWithStandIns expands query with a stand-in value for each
// placeholder vars names (placeholderPrefix and an index, in the names'
// order), and returns which placeholder each stand-in is for; false when
// query already holds such a value or does not expand. The direct path's
// plans and the engine's written trees are both built from it.
func expandWithStandIns(query string, vars map[string]string) (string, map[string]string, bool) {
	if strings.Contains(query, placeholderPrefix) {
		return "", nil, false
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	standIns := make(map[string]string, len(keys))
	keyOf := make(map[string]string, len(keys))
	for i, k := range keys {
		v := placeholderPrefix + strconv.Itoa(i)
		standIns[k], keyOf[v] = v, k
	}
	expanded, err := Expand(query, standIns)
	if err != nil {
		return "", nil, false
	}
	return expanded, keyOf, true
}

// newWrittenTree parses query with stand-ins for the placeholders vars
// names; nil when it is not substituted.
func newWrittenTree(query string, vars map[string]string, parse func(string) (parser.Expr, error)) *writtenTree {
	expanded, keyOf, ok := expandWithStandIns(query, vars)
	if !ok {
		return nil
	}
	expr, err := parse(expanded)
	if err != nil {
		return nil
	}
	t := &writtenTree{expr: expr}
	selector := 0
	bad := false
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if strings.Contains(vs.Name, placeholderPrefix) {
			bad = true
		}
		for i, m := range vs.LabelMatchers {
			if !strings.Contains(m.Value, placeholderPrefix) {
				continue
			}
			k, ok := keyOf[m.Value]
			if !ok || m.Name == model.MetricNameLabel || (m.Type != labels.MatchEqual && m.Type != labels.MatchNotEqual) {
				bad = true
				continue
			}
			t.holes = append(t.holes, treeHole{selector: selector, matcher: i, key: k})
		}
		selector++
		return nil
	})
	if bad || strings.Count(expanded, placeholderPrefix) != len(t.holes) {
		return nil
	}
	t.names = metricNames(expr)
	return t
}

// names returns the metric names of input's written query when input is
// pending and its written tree was built.
func (x *expansions) names(input string) ([]string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p, ok := x.pending[input]
	if !ok {
		return nil, false
	}
	t := x.trees[p.query]
	if t == nil {
		return nil, false
	}
	return t.names, true
}
