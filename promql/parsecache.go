package promql

import (
	"regexp/syntax"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

const (
	// maxCachedExprs and maxCachedExprBytes bound exprCache; past either
	// the cache starts again empty, which only costs parses. A trigger's
	// tree takes about 500 bytes, a 4 KiB query's up to 130 KB, and a
	// matcher's compiled regular expression about 40 bytes per
	// instruction (see treeCost).
	maxCachedExprs     = 50_000
	maxCachedExprBytes = ParseCacheBytes
	// maxCachedQueryLen keeps long one-off queries (the debug endpoint
	// accepts any) out of the caches; trigger queries are far shorter.
	maxCachedQueryLen = 4 << 10
)

// ParseCacheBytes bounds the Evaluator's cache of parsed queries (and
// KnownQueryBytes its memory of the queries whose names it requested),
// for the process's memory budget.
const (
	ParseCacheBytes = 32 << 20
	KnownQueryBytes = maxKnownQueryBytes
)

// exprCache is the engine's parser: it parses a query string once and
// hands the engine a copy of the tree on later calls. The autoscaler
// evaluates the same trigger queries every tick, and parsing was a fifth
// of a tick. A copy, because the engine rewrites the tree it evaluates
// (step-invariant wrapping, resolved offsets and @ times, the selected
// series); the cached tree itself never reaches the engine. A tree holding
// a node type cloneExpr does not know is parsed again every time.
//
// With limits set (the Evaluator's engine), it is also where the engine's
// own input is held to Limits: every query the engine evaluates was parsed
// here, so a query over a bound never reaches evaluation, whoever sent it.
// Only trees that passed are cached.
type exprCache struct {
	parser.Parser
	limits *Limits
	mtx    sync.RWMutex
	exprs  map[string]parser.Expr
	// bytes is the estimated memory of exprs (treeCost).
	bytes int

	// expansions, when set, builds the tree of an expanded query the
	// Evaluator hands over from its written query's (see expansions).
	expansions *expansions
}

func newExprCache(p parser.Parser) *exprCache { return &exprCache{Parser: p} }

func (c *exprCache) ParseExpr(input string) (parser.Expr, error) {
	if c.expansions != nil && c.limits != nil && len(input) <= max(maxExpandedQueryLength, 4*c.limits.MaxQueryLength) {
		if e, _, ok := c.expansions.tree(input, c.parse); ok {
			return e, nil
		}
	}
	c.mtx.RLock()
	cached, ok := c.exprs[input]
	c.mtx.RUnlock()
	if ok {
		if e, ok := cloneExpr(cached); ok {
			return e, nil
		}
	}
	e, err := c.parse(input)
	if err != nil {
		return nil, err
	}
	if len(input) > maxCachedQueryLen {
		return e, nil
	}
	if kept, ok := cloneExpr(e); ok {
		cost := treeCost(input, kept)
		c.mtx.Lock()
		if c.exprs == nil || len(c.exprs) >= maxCachedExprs || c.bytes+cost > maxCachedExprBytes {
			c.exprs, c.bytes = map[string]parser.Expr{}, 0
		}
		if _, dup := c.exprs[input]; !dup {
			c.bytes += cost
		}
		c.exprs[input] = kept
		c.mtx.Unlock()
	}
	return e, nil
}

// treeCost estimates the memory a cached tree of input holds, from
// measurements of the parser's trees: about 24 bytes per byte of query,
// and 40 bytes per instruction of every compiled regular expression of a
// matcher, which a short query can hold many of.
func treeCost(input string, e parser.Expr) int {
	cost := 256 + 24*len(input)
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Type != labels.MatchRegexp && m.Type != labels.MatchNotRegexp {
				continue
			}
			if re, err := syntax.Parse(m.Value, syntax.Perl|syntax.DotNL); err == nil {
				cost += 40 * int(min(regexSize(re), 1<<30))
			}
		}
		return nil
	})
	return cost
}

// parse parses input, within the limits when there are any. The length
// bound here is on the query after its placeholders were replaced, which
// the Evaluator checked in its written form already.
func (c *exprCache) parse(input string) (parser.Expr, error) {
	if c.limits == nil {
		return c.Parser.ParseExpr(input)
	}
	if limit := max(maxExpandedQueryLength, 4*c.limits.MaxQueryLength); len(input) > limit {
		return nil, &LimitError{Bound: BoundLength, Limit: int64(limit), Value: int64(len(input)), Start: -1, End: -1,
			Hint: "its placeholders make it too long; shorten it"}
	}
	if err := c.limits.prescan(input); err != nil {
		return nil, err
	}
	e, err := c.Parser.ParseExpr(input)
	if err != nil {
		return nil, err
	}
	if err := c.limits.checkPoints(e); err != nil {
		return nil, err
	}
	return e, nil
}

// cloneExpr copies every node of e that the engine may change; label
// matchers, functions and grouping labels are immutable and shared. It
// reports false for a node type it does not know.
func cloneExpr(e parser.Expr) (parser.Expr, bool) {
	ok := true
	var clone func(parser.Expr) parser.Expr
	dur := func(d *parser.DurationExpr) *parser.DurationExpr {
		if d == nil {
			return nil
		}
		c, _ := clone(d).(*parser.DurationExpr)
		return c
	}
	at := func(t *int64) *int64 {
		if t == nil {
			return nil
		}
		v := *t
		return &v
	}
	clone = func(e parser.Expr) parser.Expr {
		switch n := e.(type) {
		case nil:
			return nil
		case *parser.AggregateExpr:
			c := *n
			c.Expr, c.Param = clone(n.Expr), clone(n.Param)
			return &c
		case *parser.BinaryExpr:
			c := *n
			c.LHS, c.RHS = clone(n.LHS), clone(n.RHS)
			if n.VectorMatching != nil {
				vm := *n.VectorMatching
				c.VectorMatching = &vm
			}
			return &c
		case *parser.Call:
			c := *n
			c.Args = make(parser.Expressions, len(n.Args))
			for i, a := range n.Args {
				c.Args[i] = clone(a)
			}
			return &c
		case *parser.DurationExpr:
			c := *n
			c.LHS, c.RHS = clone(n.LHS), clone(n.RHS)
			return &c
		case *parser.MatrixSelector:
			c := *n
			c.VectorSelector, c.RangeExpr = clone(n.VectorSelector), dur(n.RangeExpr)
			return &c
		case *parser.SubqueryExpr:
			c := *n
			c.Expr = clone(n.Expr)
			c.RangeExpr, c.OriginalOffsetExpr, c.StepExpr = dur(n.RangeExpr), dur(n.OriginalOffsetExpr), dur(n.StepExpr)
			c.Timestamp = at(n.Timestamp)
			return &c
		case *parser.NumberLiteral:
			c := *n
			return &c
		case *parser.StringLiteral:
			c := *n
			return &c
		case *parser.ParenExpr:
			c := *n
			c.Expr = clone(n.Expr)
			return &c
		case *parser.UnaryExpr:
			c := *n
			c.Expr = clone(n.Expr)
			return &c
		case *parser.StepInvariantExpr:
			c := *n
			c.Expr = clone(n.Expr)
			return &c
		case *parser.VectorSelector:
			c := *n
			c.OriginalOffsetExpr = dur(n.OriginalOffsetExpr)
			c.Timestamp = at(n.Timestamp)
			c.LabelMatchers = slices.Clip(n.LabelMatchers)
			c.UnexpandedSeriesSet, c.Series = nil, nil
			return &c
		}
		ok = false
		return e
	}
	out := clone(e)
	return out, ok
}
