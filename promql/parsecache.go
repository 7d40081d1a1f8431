package promql

import (
	"slices"
	"sync"

	"github.com/prometheus/prometheus/promql/parser"
)

const (
	// maxCachedExprs bounds exprCache; past it the cache starts again
	// empty, which only costs parses. A trigger's tree takes about 700
	// bytes.
	maxCachedExprs = 50_000
	// maxCachedQueryLen keeps long one-off queries (the debug endpoint
	// accepts any) out of the caches; trigger queries are far shorter.
	maxCachedQueryLen = 4 << 10
)

// exprCache is the engine's parser: it parses a query string once and
// hands the engine a copy of the tree on later calls. The autoscaler
// evaluates the same trigger queries every tick, and parsing was a fifth
// of a tick. A copy, because the engine rewrites the tree it evaluates
// (step-invariant wrapping, resolved offsets and @ times, the selected
// series); the cached tree itself never reaches the engine. A tree holding
// a node type cloneExpr does not know is parsed again every time.
type exprCache struct {
	parser.Parser
	mtx   sync.RWMutex
	exprs map[string]parser.Expr
}

func newExprCache(p parser.Parser) *exprCache { return &exprCache{Parser: p} }

func (c *exprCache) ParseExpr(input string) (parser.Expr, error) {
	c.mtx.RLock()
	cached, ok := c.exprs[input]
	c.mtx.RUnlock()
	if ok {
		if e, ok := cloneExpr(cached); ok {
			return e, nil
		}
	}
	e, err := c.Parser.ParseExpr(input)
	if err != nil {
		return nil, err
	}
	if len(input) > maxCachedQueryLen {
		return e, nil
	}
	if kept, ok := cloneExpr(e); ok {
		c.mtx.Lock()
		if c.exprs == nil || len(c.exprs) >= maxCachedExprs {
			c.exprs = map[string]parser.Expr{}
		}
		c.exprs[input] = kept
		c.mtx.Unlock()
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
