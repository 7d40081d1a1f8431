package promql

import (
	"errors"
	"fmt"
	"math"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/parser/posrange"
	"github.com/prometheus/prometheus/util/strutil"
)

// Defaults of Limits, also named in docs/promql.md and docs/profiles.md.
const (
	// DefaultMaxQueryLength: trigger queries are a few hundred bytes; 4 KiB
	// leaves room for long label regexes and is the length up to which
	// parsed queries are cached.
	DefaultMaxQueryLength = 4 << 10
	// DefaultMaxDepth bounds how deep a query's syntax tree can be. The
	// parser and the engine compute a node's type and position by walking
	// down its operands, at every node, so their cost grows with length
	// times depth; 100 keeps a query of the maximum length under a
	// millisecond to check and parse.
	DefaultMaxDepth = 100
	// DefaultMaxPointsPerSeries is Prometheus' own bound on the points of
	// one series in a range query (11,000, the "exceeded maximum resolution"
	// error of its HTTP API).
	DefaultMaxPointsPerSeries = 11_000
	// DefaultMaxRegexSize bounds what a regular expression in a query
	// compiles to: an alternation of every pod name that fits in the
	// length bound stays under it, while .{1000} repeated 500 times (3.5 KB,
	// 150 MB and half a second to compile) does not.
	DefaultMaxRegexSize = 10_000
	// DefaultMaxSamples bounds the samples one evaluation holds in memory
	// (the engine's MaxSamples, Prometheus' --query.max-samples, whose
	// default of 50 million is sized for a server dedicated to queries):
	// one million samples are 16 to 32 MB.
	DefaultMaxSamples = 1_000_000
	// DefaultTimeout bounds one evaluation (Prometheus' --query.timeout is
	// 2 minutes; a trigger is read every 15 s).
	DefaultTimeout = 10 * time.Second
	// DefaultScrapeInterval converts a range selector's range to points
	// when Limits.ScrapeInterval is not set; it is the scraper's default.
	DefaultScrapeInterval = 5 * time.Second
	// DefaultSubqueryStep is the step of a subquery written without one,
	// as the Evaluator's engine uses it (Prometheus' default global
	// evaluation interval).
	DefaultSubqueryStep = time.Minute
)

// maxExpandedQueryLength bounds a query after its placeholders were
// replaced (or four times MaxQueryLength, if more). Placeholder values
// (names, namespaces) can make a query longer than the template that was
// checked, but only by so much; the bound keeps the engine's parser from
// ever reading an unbounded input.
const maxExpandedQueryLength = 64 << 10

// Limits bound what one query may cost (V10). Admission refuses a trigger
// query over them, the Evaluator and Remote refuse it again before every
// evaluation, and the debug endpoint applies them to what it is sent. Zero
// fields take the defaults above.
type Limits struct {
	// MaxQueryLength is the longest query accepted, in bytes, as written
	// (placeholders not yet replaced).
	MaxQueryLength int
	// MaxDepth bounds how deeply a query nests: every open (, [ or {, and
	// every operator in a chain (a + b + c is two deep), counts one.
	MaxDepth int
	// MaxPointsPerSeries bounds, for every range selector and subquery,
	// the points of one series the engine produces or reads in one
	// evaluation: range / step for a subquery (the default step when none
	// is written), range / ScrapeInterval for a range selector, times the
	// steps of the subqueries around it, and never less than the steps the
	// engine materialises for it.
	MaxPointsPerSeries int64
	// MaxRegexSize bounds the instructions the strings of a query compile
	// to as regular expressions, all together (a matcher's =~ or !~, or a
	// label_replace pattern): a repeat x{n} counts n copies of x.
	MaxRegexSize int
	// MaxSamples bounds the samples one evaluation holds in memory at
	// once; a query over it fails when it reaches it.
	MaxSamples int
	// Timeout bounds one evaluation.
	Timeout time.Duration
	// ScrapeInterval is the interval series are scraped at, which turns a
	// range selector's range into points.
	ScrapeInterval time.Duration
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxQueryLength <= 0 {
		l.MaxQueryLength = DefaultMaxQueryLength
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxPointsPerSeries <= 0 {
		l.MaxPointsPerSeries = DefaultMaxPointsPerSeries
	}
	if l.MaxRegexSize <= 0 {
		l.MaxRegexSize = DefaultMaxRegexSize
	}
	if l.MaxSamples <= 0 {
		l.MaxSamples = DefaultMaxSamples
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.ScrapeInterval <= 0 {
		l.ScrapeInterval = DefaultScrapeInterval
	}
	return l
}

// Bounds a LimitError names.
const (
	BoundLength = "length"
	BoundDepth  = "depth"
	BoundPoints = "points per series"
	BoundRegex  = "regex size"
	// BoundSamples and BoundTimeout are met during an evaluation (the
	// engine's MaxSamples and Timeout); the debug endpoint names them.
	BoundSamples = "samples"
	BoundTimeout = "timeout"
)

// LimitError says which bound of Limits a query exceeds.
type LimitError struct {
	// Bound is BoundLength, BoundDepth or BoundPoints.
	Bound string
	// Limit is the bound's value and Value the query's.
	Limit, Value int64
	// Start and End are byte offsets of the part of the query that
	// exceeds the bound, -1 when the query as a whole does.
	Start, End int
	// Hint says what to change.
	Hint string
}

func (e *LimitError) Error() string {
	switch e.Bound {
	case BoundLength:
		return fmt.Sprintf("query is %d bytes long, over the limit of %d bytes; %s", e.Value, e.Limit, e.Hint)
	case BoundDepth:
		return fmt.Sprintf("query nests %d levels deep at offset %d, over the limit of %d (each open parenthesis, bracket or brace and each operator in a chain counts one); %s", e.Value, e.Start, e.Limit, e.Hint)
	case BoundRegex:
		return fmt.Sprintf("the query's regular expressions compile to about %d instructions by the string at offset %d, over the limit of %d; %s", e.Value, e.Start, e.Limit, e.Hint)
	}
	return fmt.Sprintf("%s at offset %d needs %d points per series, over the limit of %d; %s", e.Hint, e.Start, e.Value, e.Limit, hintPoints)
}

const hintPoints = "use a shorter range or a longer step, or raise the configured maxPointsPerSeries"

// Check reports whether query stays within l, without evaluating it: its
// length, then its nesting depth (both before the parser reads it, so a
// hostile query costs a linear scan at most), then whether it parses and
// how many points per series its range selectors and subqueries need.
// ${...} placeholders are checked as same-length identifiers, so that the
// positions in errors point into the query as written. It returns a
// *LimitError for a bound and a *QueryError for a query that does not
// parse.
func (l Limits) Check(query string) error {
	_, err := l.check(query)
	return err
}

// check is Check returning the parsed tree of the filled-in query.
func (l Limits) check(query string) (parser.Expr, error) {
	l = l.WithDefaults()
	if len(query) > l.MaxQueryLength {
		return nil, &LimitError{Bound: BoundLength, Limit: int64(l.MaxQueryLength), Value: int64(len(query)), Start: -1, End: -1,
			Hint: "shorten it (a recording rule on a Prometheus server can replace a long expression), or raise the configured maxQueryLength"}
	}
	filled := FillPlaceholders(query)
	return l.parse(filled)
}

// parse checks the depth of q, parses it and checks its points.
func (l Limits) parse(q string) (parser.Expr, error) {
	if err := l.prescan(q); err != nil {
		return nil, err
	}
	expr, err := checkParser.ParseExpr(q)
	if err != nil {
		return nil, queryError(q, err)
	}
	if err := l.checkPoints(expr); err != nil {
		var qe *QueryError
		if errors.As(err, &qe) {
			qe.Query = q
		}
		return nil, err
	}
	return expr, nil
}

// checkParser parses with the options of the Evaluator's engine, so a
// query Check accepts is one the engine accepts.
var checkParser = parser.NewParser(parserOptions)

// prescan reads q with the PromQL lexer (linear, no syntax tree) and
// refuses it when it nests deeper than l.MaxDepth or holds a string whose
// regular expression would compile to more than l.MaxRegexSize
// instructions. Both are costs the parser would pay before any other check
// could run: the parser and the engine walk down a node's operands at every
// node, and a matcher's regular expression is compiled while parsing.
//
// The depth is an upper bound of the depth of the syntax tree: open
// brackets of every kind, plus the operators met so far at each open level,
// since an operator chain a + b + c nests as deeply as it has operators and
// a range or subquery bracket wraps what precedes it.
func (l Limits) prescan(q string) error {
	lex := parser.Lex(q)
	// ops[i] counts the operators met at open level i; sum is their total.
	ops := make([]int, 1, 8)
	sum := 0
	// Inside braces, =, != and =~ are matchers, not operators.
	braces := 0
	// regex is the instructions the query's strings compile to so far.
	regex := 0.0
	var it parser.Item
	for {
		lex.NextItem(&it)
		switch {
		case it.Typ == parser.EOF || it.Typ == parser.ERROR:
			// The parser reports a lexing error with its position.
			return nil
		case it.Typ == parser.STRING:
			if regex += regexCost(it.Val); regex > float64(l.MaxRegexSize) {
				return &LimitError{Bound: BoundRegex, Limit: int64(l.MaxRegexSize), Value: int64(min(regex, math.MaxInt64/2)), Start: int(it.Pos), End: int(it.Pos) + len(it.Val),
					Hint: "avoid large repeat counts such as .{1000}, or raise the configured maxRegexSize"}
			}
		case it.Typ == parser.LEFT_BRACKET:
			// The bracket wraps the expression before it (a range or a
			// subquery), then opens a level for its durations.
			ops[len(ops)-1]++
			sum++
			ops = append(ops, 0)
		case it.Typ == parser.LEFT_PAREN || it.Typ == parser.LEFT_BRACE:
			if it.Typ == parser.LEFT_BRACE {
				braces++
			}
			ops = append(ops, 0)
		case it.Typ == parser.RIGHT_PAREN || it.Typ == parser.RIGHT_BRACE || it.Typ == parser.RIGHT_BRACKET:
			if it.Typ == parser.RIGHT_BRACE && braces > 0 {
				braces--
			}
			if len(ops) > 1 {
				sum -= ops[len(ops)-1]
				ops = ops[:len(ops)-1]
			}
		case it.Typ.IsOperator() && braces == 0:
			ops[len(ops)-1]++
			sum++
		}
		if d := len(ops) - 1 + sum; d > l.MaxDepth {
			return &LimitError{Bound: BoundDepth, Limit: int64(l.MaxDepth), Value: int64(d), Start: int(it.Pos), End: int(it.Pos) + 1,
				Hint: "use fewer nested parentheses or a shorter chain of operators"}
		}
	}
}

// regexCost is what the quoted string s costs when compiled as a regular
// expression, as a matcher's =~ or a label_replace pattern is: .{1000}
// repeated 500 times fits in 4 KiB and took half a second and 150 MB to
// compile. Every string is measured, since which ones are regular
// expressions is only known after parsing. A string without repeats,
// classes or alternations compiles to about one instruction per rune,
// which the length bound covers, and one that is not a valid expression
// is left to the parser: both cost 0.
func regexCost(quoted string) float64 {
	s, err := strutil.Unquote(quoted)
	if err != nil || !strings.ContainsAny(s, `{*+?|([.\`) {
		return 0
	}
	re, err := syntax.Parse(s, syntax.Perl|syntax.DotNL)
	if err != nil {
		return 0
	}
	return regexSize(re)
}

// regexSize estimates the instructions re compiles to: a repeat x{n}
// compiles n copies of x.
func regexSize(re *syntax.Regexp) float64 {
	n := 1.0
	switch re.Op {
	case syntax.OpLiteral:
		n = float64(len(re.Rune))
	case syntax.OpRepeat:
		times := re.Max
		if times < 0 {
			times = re.Min + 1
		}
		return 1 + float64(max(times, 1))*regexSize(re.Sub[0])
	}
	for _, sub := range re.Sub {
		n += regexSize(sub)
	}
	return n
}

// checkPoints walks the tree as the engine evaluates an instant query: a
// subquery is evaluated once over the span of the evaluation around it
// plus its own range, at its step, and a function over it reads one window
// per step of that outer evaluation.
func (l Limits) checkPoints(expr parser.Expr) error {
	var walk func(n parser.Node, span time.Duration, steps float64) error
	walk = func(n parser.Node, span time.Duration, steps float64) error {
		switch n := n.(type) {
		case *parser.SubqueryExpr:
			rng, err := durationOf(n.Range, n.RangeExpr, "range")
			if err != nil {
				return err
			}
			step := DefaultSubqueryStep
			if n.Step != 0 || n.StepExpr != nil {
				if step, err = durationOf(n.Step, n.StepExpr, "step"); err != nil {
					return err
				}
			}
			if step < time.Millisecond {
				return &QueryError{Err: fmt.Errorf("subquery step %v is below the engine's resolution of 1ms", step), Start: int(n.PositionRange().Start), End: int(n.PositionRange().End)}
			}
			evaluated := float64(span+rng)/float64(step) + 1
			read := steps * float64(rng) / float64(step)
			if err := l.points(math.Max(evaluated, read), "subquery", n.PositionRange()); err != nil {
				return err
			}
			return walk(n.Expr, span+rng, evaluated)
		case *parser.MatrixSelector:
			rng, err := durationOf(n.Range, n.RangeExpr, "range")
			if err != nil {
				return err
			}
			loaded := float64(span+rng) / float64(l.ScrapeInterval)
			read := steps * float64(rng) / float64(l.ScrapeInterval)
			return l.points(math.Max(loaded, read), fmt.Sprintf("range selector (at one sample every %v)", l.ScrapeInterval), n.PositionRange())
		}
		for c := range parser.ChildrenIter(n) {
			if err := walk(c, span, steps); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(expr, 0, 1)
}

func (l Limits) points(p float64, what string, pos posrange.PositionRange) error {
	if p <= float64(l.MaxPointsPerSeries) {
		return nil
	}
	v := int64(math.MaxInt64)
	if p < math.MaxInt64 {
		v = int64(math.Ceil(p))
	}
	return &LimitError{Bound: BoundPoints, Limit: l.MaxPointsPerSeries, Value: v, Start: int(pos.Start), End: int(pos.End), Hint: "the " + what}
}

// durationOf is a range, step or offset as the engine resolves it for an
// instant query, where step() and range() are 0.
func durationOf(d time.Duration, expr *parser.DurationExpr, what string) (time.Duration, error) {
	if expr == nil {
		return d, nil
	}
	secs, err := evalDuration(expr)
	if err != nil {
		return 0, durationError(expr, fmt.Errorf("%s: %w", what, err))
	}
	if math.IsNaN(secs) || math.IsInf(secs, 0) {
		return 0, durationError(expr, fmt.Errorf("%s is NaN or infinite", what))
	}
	if secs <= 0 {
		return 0, durationError(expr, fmt.Errorf("%s must be greater than 0 (step() and range() are 0 in an instant query)", what))
	}
	if secs > math.MaxInt64/1e9 {
		return 0, durationError(expr, fmt.Errorf("%s is out of range", what))
	}
	return time.Duration(secs*1000) * time.Millisecond, nil
}

func durationError(expr parser.Expr, err error) error {
	r := expr.PositionRange()
	return &QueryError{Err: err, Start: int(r.Start), End: int(r.End)}
}

// evalDuration evaluates a duration expression in seconds, as the engine's
// own (unexported) duration visitor does.
func evalDuration(e parser.Expr) (float64, error) {
	switch n := e.(type) {
	case *parser.NumberLiteral:
		return n.Val, nil
	case *parser.ParenExpr:
		return evalDuration(n.Expr)
	case *parser.DurationExpr:
		var lhs, rhs float64
		var err error
		if n.LHS != nil {
			if lhs, err = evalDuration(n.LHS); err != nil {
				return 0, err
			}
		}
		if n.RHS != nil {
			if rhs, err = evalDuration(n.RHS); err != nil {
				return 0, err
			}
		}
		switch n.Op {
		case parser.STEP, parser.RANGE:
			return 0, nil
		case parser.MIN_OF:
			return math.Min(lhs, rhs), nil
		case parser.MAX_OF:
			return math.Max(lhs, rhs), nil
		case parser.ADD:
			return lhs + rhs, nil
		case parser.SUB:
			if n.LHS == nil {
				return -rhs, nil
			}
			return lhs - rhs, nil
		case parser.MUL:
			return lhs * rhs, nil
		case parser.DIV:
			if rhs == 0 {
				return 0, errors.New("division by zero")
			}
			return lhs / rhs, nil
		case parser.MOD:
			if rhs == 0 {
				return 0, errors.New("modulo by zero")
			}
			return math.Mod(lhs, rhs), nil
		case parser.POW:
			return math.Pow(lhs, rhs), nil
		}
		return 0, fmt.Errorf("unexpected duration operator %q", n.Op)
	}
	return 0, fmt.Errorf("unexpected duration expression %T", e)
}

// FillPlaceholders replaces every ${...} in q with as many x characters:
// valid as a metric name, a label value and a regular expression alike,
// and the same length, so that positions in the parser's errors point into
// the query as written.
func FillPlaceholders(q string) string {
	if !strings.Contains(q, "${") {
		return q
	}
	b := []byte(q)
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '$' || b[i+1] != '{' {
			continue
		}
		end := strings.IndexByte(q[i+2:], '}')
		if end < 0 {
			break
		}
		end += i + 2
		for j := i; j <= end; j++ {
			b[j] = 'x'
		}
		i = end
	}
	return string(b)
}
