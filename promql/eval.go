package promql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	prom "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// parserOptions turn on everything the Prometheus parser knows, so that
// every function and modifier Prometheus' own test suite exercises is
// accepted here too.
var parserOptions = parser.Options{
	EnableExperimentalFunctions:  true,
	ExperimentalDurationExpr:     true,
	EnableExtendedRangeSelectors: true,
	EnableBinopFillModifiers:     true,
}

// Source evaluates a trigger query to one number. Both the embedded
// Evaluator and Remote (an existing Prometheus, Thanos or Mimir) implement
// it, so the autoscaler does not care where the numbers come from.
type Source interface {
	// Eval runs query at time at (zero means now) after substituting the
	// ${name} placeholders from vars (see Expand).
	Eval(ctx context.Context, query string, at time.Time, vars map[string]string) (Result, error)
}

// Kind says what a Result holds.
type Kind int

const (
	// KindNoData: the query selected nothing. It is not zero: the autoscaler
	// must keep the current replica count rather than scale to the minimum.
	KindNoData Kind = iota
	// KindValue: a finite number.
	KindValue
	// KindNaN: the result is NaN (0/0, or a quantile over empty buckets).
	KindNaN
	// KindInf: the result is +Inf or -Inf (a division by zero).
	KindInf
)

func (k Kind) String() string {
	switch k {
	case KindNoData:
		return "no data"
	case KindValue:
		return "value"
	case KindNaN:
		return "NaN"
	case KindInf:
		return "Inf"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Result is the one number a trigger query produced. Value keeps NaN and
// ±Inf as they are; it is 0 only when Kind is KindNoData.
type Result struct {
	Kind  Kind
	Value float64
	// Labels are the labels of the single series, empty for a scalar.
	Labels labels.Labels
}

// ResultOf classifies v.
func ResultOf(v float64) Result {
	switch {
	case math.IsNaN(v):
		return Result{Kind: KindNaN, Value: v}
	case math.IsInf(v, 0):
		return Result{Kind: KindInf, Value: v}
	}
	return Result{Kind: KindValue, Value: v}
}

// QueryError means the query itself is wrong: it does not parse, uses an
// unknown placeholder, or the server rejected it as bad data. Fixing the
// query is the only remedy.
type QueryError struct {
	Query string
	Err   error
	// Start and End are byte offsets of the offending part of Query when
	// the parser reported them, otherwise -1.
	Start, End int
}

func (e *QueryError) Error() string { return fmt.Sprintf("invalid query: %v", e.Err) }
func (e *QueryError) Unwrap() error { return e.Err }

// ShapeError means the query ran but did not produce one number.
type ShapeError struct {
	// Type is the PromQL result type: vector, matrix or string.
	Type string
	// Series is the number of series returned.
	Series int
	// Sample describes up to three of them.
	Sample []string
	// Histogram is set when the single element is a native histogram.
	Histogram bool
}

func (e *ShapeError) Error() string {
	switch {
	case e.Histogram:
		return "query returns a native histogram, not a number; wrap it in histogram_quantile(...), histogram_sum(...) or histogram_count(...)"
	case e.Type == string(parser.ValueTypeMatrix):
		return "query returns a range vector, not a number; wrap the range selector in a function such as rate(...) or max_over_time(...)"
	case e.Type == string(parser.ValueTypeString):
		return "query returns a string, not a number"
	}
	return fmt.Sprintf("query returns %d series (%s), not one number; aggregate them, e.g. sum(...) or max(...)", e.Series, strings.Join(e.Sample, ", "))
}

// EvaluatorOptions configures the embedded engine. Zero values give the
// documented defaults.
type EvaluatorOptions struct {
	// Limits bound every query the Evaluator runs (V10): length, depth and
	// points per series are checked before the engine sees the query,
	// MaxSamples and Timeout bound its evaluation. Zero fields take the
	// defaults of Limits.
	Limits Limits
	// LookbackDelta is how far back an instant selector looks for the last
	// sample. Default 5 m, as in Prometheus.
	LookbackDelta time.Duration
	// Registerer receives the engine's own metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is used when Eval is given a zero time. Default time.Now.
	Now func() time.Time
	// EngineOnly sends every query to Prometheus' engine. Without it, over
	// a Store, the common trigger shapes (an aggregation without grouping
	// of a selector, or of rate, irate, increase, avg_over_time,
	// max_over_time or min_over_time over one, maybe with a number) are
	// evaluated directly against the Store,
	// with the same results and no parse per workload (see fasteval.go and
	// docs/design.md).
	EngineOnly bool
}

// Evaluator runs PromQL with Prometheus' own engine over a Queryable
// (normally the Store).
type Evaluator struct {
	engine    *prom.Engine
	queryable storage.Queryable
	now       func() time.Time
	limits    Limits
	// checked remembers Limits.Check's answers for written queries: a
	// trigger's query comes back every tick. check is limits.Check, bound
	// once rather than on every Eval.
	checked checkCache
	check   func(string) error
	// expansions hands an expanded query's written query and values to
	// the engine's parser.
	expansions *expansions
	// direct is the Store the direct path reads (nil: the engine
	// evaluates everything), plans its plans, lookback the instant
	// selectors' lookback, scratches its idle scratches.
	direct    *Store
	plans     planCache
	lookback  time.Duration
	scratches chan *directScratch
}

// NewEvaluator returns an evaluator over q. When q is a *Store, every query
// evaluated also requests its metric names, so the scraper starts keeping
// them; the query is parsed once for both.
func NewEvaluator(q storage.Queryable, opts EvaluatorOptions) *Evaluator {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := opts.Limits.WithDefaults()
	e := &Evaluator{queryable: q, now: opts.Now, limits: l, check: l.Check, lookback: opts.LookbackDelta}
	if e.lookback == 0 {
		// The engine's default.
		e.lookback = 5 * time.Minute
	}
	if s, ok := q.(*Store); ok && !opts.EngineOnly {
		e.direct = s
		e.scratches = make(chan *directScratch, maxIdleScratches)
	}
	engineOpts := EngineOptions(l.Timeout, l.MaxSamples, opts.LookbackDelta, opts.Registerer)
	// The engine's parser holds every query to the limits, whichever way
	// it reached the engine (Eval, or Engine() directly).
	e.expansions = &expansions{}
	engineOpts.Parser = &exprCache{Parser: parser.NewParser(parserOptions), limits: &l, expansions: e.expansions}
	if s, ok := q.(*Store); ok {
		// The engine's parser requests the names, so a query is parsed
		// once per evaluation, not once more to learn its names.
		engineOpts.Parser = &registeringParser{Parser: engineOpts.Parser, registry: s.Registry(), expansions: e.expansions}
	}
	e.engine = prom.NewEngine(engineOpts)
	return e
}

// Limits returns the limits the Evaluator applies, defaults filled in.
func (e *Evaluator) Limits() Limits { return e.limits }

// maxKnownQueries and maxKnownQueryBytes bound registeringParser's memory
// of registered queries; past either the memory starts again empty, which
// only costs walks.
const (
	maxKnownQueries    = 100_000
	maxKnownQueryBytes = 8 << 20
)

// registeringParser is the engine's parser when the Evaluator runs over a
// Store: every query it parses requests, one-off, those of its metric
// names no owner requested (Registry.SetOwner: a trigger's), before it
// runs. A query's names are remembered, so it is not walked again; one-off
// names leave the registry when not requested for the store's retention.
type registeringParser struct {
	parser.Parser
	registry *Registry
	mtx      sync.RWMutex
	known    map[string][]string
	// bytes is the length of the queries in known.
	bytes int

	// expansions knows the names of an expanded query built from its
	// written query's tree.
	expansions *expansions
}

func (p *registeringParser) ParseExpr(input string) (parser.Expr, error) {
	expr, err := p.Parser.ParseExpr(input)
	if err != nil {
		return nil, err
	}
	if p.expansions != nil {
		if names, ok := p.expansions.names(input); ok {
			p.registry.addUnowned(names...)
			return expr, nil
		}
	}
	p.mtx.RLock()
	names, ok := p.known[input]
	p.mtx.RUnlock()
	if ok {
		p.registry.addUnowned(names...)
		return expr, nil
	}
	names = metricNames(expr)
	p.registry.addUnowned(names...)
	if len(input) > maxCachedQueryLen {
		return expr, nil
	}
	p.mtx.Lock()
	if p.known == nil || len(p.known) >= maxKnownQueries || p.bytes+len(input) > maxKnownQueryBytes {
		p.known, p.bytes = map[string][]string{}, 0
	}
	if _, dup := p.known[input]; !dup {
		p.bytes += len(input)
	}
	p.known[input] = names
	p.mtx.Unlock()
	return expr, nil
}

// EngineOptions is the engine configuration the Evaluator uses, exported so
// the conformance test and the benchmarks run exactly the same engine.
func EngineOptions(timeout time.Duration, maxSamples int, lookback time.Duration, reg prometheus.Registerer) prom.EngineOpts {
	return prom.EngineOpts{
		Reg:        reg,
		MaxSamples: maxSamples,
		Timeout:    timeout,
		// Subqueries without a step use Prometheus' default global
		// evaluation interval.
		NoStepSubqueryIntervalFn: func(int64) int64 { return DefaultSubqueryStep.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		EnableDelayedNameRemoval: true,
		UseStartTimestamps:       true,
		LookbackDelta:            lookback,
		Parser:                   newExprCache(parser.NewParser(parserOptions)),
	}
}

// queryOpts are the engine's defaults, built once: given nil, the engine
// builds them again for every query.
var queryOpts = prom.NewPrometheusQueryOpts(false, 0)

// Engine returns the underlying Prometheus engine.
func (e *Evaluator) Engine() *prom.Engine { return e.engine }

// Eval implements Source. The query as written is held to the Evaluator's
// Limits first, then its placeholders are replaced and the engine's parser
// checks the result again before anything is evaluated. The direct path
// (fasteval.go) and the trees built from the written query's
// (expansions.go) take only values that cannot change those checks'
// answers. Under DirectDeclinedContext the direct path is not tried: it
// already read the query's samples and declined.
func (e *Evaluator) Eval(ctx context.Context, query string, at time.Time, vars map[string]string) (Result, error) {
	if err := e.checked.answer(query, e.check); err != nil {
		return Result{}, err
	}
	if at.IsZero() {
		at = e.now()
	}
	if e.direct != nil && !directDeclined(ctx) {
		r, samples, how := e.evalDirect(ctx, e.direct, query, at, vars)
		if c := costOf(ctx); c != nil {
			// Charged even when it declined: the samples were loaded.
			c.Samples += samples
		}
		if how == DirectAnswered {
			return r, nil
		}
	}
	expanded, err := Expand(query, vars)
	if err != nil {
		return Result{}, err
	}
	if expanded != query {
		// The engine's parser builds the tree from query's.
		e.expansions.begin(expanded, query, vars)
	}
	q, err := e.engine.NewInstantQuery(ctx, e.queryable, queryOpts, expanded, at)
	if expanded != query {
		e.expansions.end(expanded)
	}
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return Result{}, err
		}
		return Result{}, queryError(expanded, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if c := costOf(ctx); c != nil {
		if st := q.Stats(); st != nil && st.Samples != nil {
			c.Samples += st.Samples.TotalSamples
		}
		var tooMany prom.ErrTooManySamples
		if res.Err != nil && errors.As(res.Err, &tooMany) {
			// The engine stops counting where it stops: charge at least
			// the bound it hit.
			c.Samples = max(c.Samples, int64(e.limits.MaxSamples))
		}
	}
	if res.Err != nil {
		return Result{}, fmt.Errorf("evaluate %q: %w", expanded, res.Err)
	}
	return resultOf(res.Value)
}

// Direct is how the direct path took a query handed to EvalDirect.
type Direct int

const (
	// DirectNotTaken: the path did not start (the query is not planned,
	// its slot was not free at once, ...) and loaded nothing; Eval
	// evaluates it, by the direct path when it can.
	DirectNotTaken Direct = iota
	// DirectAnswered: the Result is the query's.
	DirectAnswered
	// DirectDeclined: the path loaded samples and then left the query to
	// the engine (near Limits.MaxSamples, over Limits.Timeout, a native
	// histogram, ...). Call Eval with DirectDeclinedContext(ctx): it then
	// goes straight to the engine instead of loading the same samples
	// again to decline again.
	DirectDeclined
)

// directDeclinedKey marks a context whose query the direct path declined.
type directDeclinedKey struct{}

// DirectDeclinedContext is ctx for the Eval that follows an EvalDirect
// which answered DirectDeclined: Eval skips the direct path.
func DirectDeclinedContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, directDeclinedKey{}, true)
}

func directDeclined(ctx context.Context) bool {
	d, _ := ctx.Value(directDeclinedKey{}).(bool)
	return d
}

// EvalDirect is Eval when the direct path answers the query from the
// Store at once (see fasteval.go); otherwise it says whether the path
// loaded samples before declining (Direct), and Eval must be called. It
// never waits on anything, so a caller may run it without a timeout of
// its own.
func (e *Evaluator) EvalDirect(ctx context.Context, query string, at time.Time, vars map[string]string) (Result, Direct) {
	if e.direct == nil || e.checked.answer(query, e.check) != nil {
		return Result{}, DirectNotTaken
	}
	if at.IsZero() {
		at = e.now()
	}
	r, samples, how := e.evalDirect(ctx, e.direct, query, at, vars)
	if c := costOf(ctx); c != nil {
		c.Samples += samples
	}
	return r, how
}

func queryError(query string, err error) error {
	qe := &QueryError{Query: query, Err: err, Start: -1, End: -1}
	var pes parser.ParseErrors
	if errors.As(err, &pes) && len(pes) > 0 {
		// Report the parser's own message: it carries line:column.
		qe.Err = pes
		qe.Start, qe.End = int(pes[0].PositionRange.Start), int(pes[0].PositionRange.End)
	}
	var pe *parser.ParseErr
	if errors.As(err, &pe) {
		qe.Start, qe.End = int(pe.PositionRange.Start), int(pe.PositionRange.End)
	}
	return qe
}

func resultOf(v parser.Value) (Result, error) {
	switch v := v.(type) {
	case prom.Scalar:
		return ResultOf(v.V), nil
	case prom.Vector:
		switch len(v) {
		case 0:
			return Result{Kind: KindNoData}, nil
		case 1:
			if v[0].H != nil {
				return Result{}, &ShapeError{Type: string(parser.ValueTypeVector), Series: 1, Histogram: true}
			}
			r := ResultOf(v[0].F)
			r.Labels = v[0].Metric
			return r, nil
		}
		se := &ShapeError{Type: string(parser.ValueTypeVector), Series: len(v)}
		for i := 0; i < len(v) && i < 3; i++ {
			se.Sample = append(se.Sample, v[i].Metric.String())
		}
		return Result{}, se
	case prom.Matrix:
		return Result{}, &ShapeError{Type: string(parser.ValueTypeMatrix), Series: len(v)}
	case prom.String:
		return Result{}, &ShapeError{Type: string(parser.ValueTypeString)}
	}
	return Result{}, fmt.Errorf("unexpected result type %T", v)
}
