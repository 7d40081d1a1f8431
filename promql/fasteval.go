package promql

import (
	"context"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/kahansum"
)

// The direct path (see docs/design.md, "Trigger queries at scale").
//
// Prometheus' engine costs about 110 allocations and a parse per query,
// which at 100,000 workloads with two triggers each is most of a tick. Most
// trigger queries have one of a few shapes:
//
//	sum|avg|max|min|count( selector )
//	sum|avg|max|min|count( rate|irate|increase|avg_over_time|max_over_time|min_over_time( selector[range] ) )
//
// without grouping, offset or @, maybe compared with or combined with
// numbers (`> 5`, `>= bool 1`, `/ 60`), where the placeholders stand for whole
// values of = or != matchers. For those, the Evaluator parses the query as
// written once (with stand-in values for the placeholders), keeps a plan
// per written query, and evaluates the plan directly against the Store
// with the workload's values in the matchers: no parse, no engine. Every
// other query, and every case the plan does not cover as the engine does
// (native histograms, start timestamps, values that would need escaping,
// a sample count near Limits.MaxSamples), goes to the engine.
// TestDirectPathMatchesEngine and FuzzDirectPathMatchesEngine hold the two
// to the same results. EvaluatorOptions.EngineOnly turns the direct path
// off.

// placeholderPrefix starts the stand-in values a query is parsed with
// while its plan is built; a query that contains it is left to the engine.
const placeholderPrefix = "scaleplane_placeholder_"

// directOps are the aggregations the direct path evaluates.
var directOps = map[parser.ItemType]bool{parser.SUM: true, parser.AVG: true, parser.MAX: true, parser.MIN: true, parser.COUNT: true}

// directFuncs are the functions over a range the direct path evaluates.
var directFuncs = map[string]bool{"rate": true, "irate": true, "increase": true, "avg_over_time": true, "max_over_time": true, "min_over_time": true}

// directBinops are the operators the direct path applies between the
// aggregation and a number.
var directBinops = map[parser.ItemType]bool{
	parser.ADD: true, parser.SUB: true, parser.MUL: true, parser.DIV: true, parser.POW: true, parser.MOD: true, parser.ATAN2: true,
	parser.EQLC: true, parser.NEQ: true, parser.GTR: true, parser.LSS: true, parser.GTE: true, parser.LTE: true,
}

// numberStep is one operation with a number on the aggregation's value:
// value op number, or number op value when swap is set.
type numberStep struct {
	op         parser.ItemType
	number     float64
	swap       bool
	returnBool bool
}

// directPlan is a written query the direct path evaluates: an aggregation
// of one selector, through one function over a range when fn is set.
type directPlan struct {
	op parser.ItemType
	fn string
	// counter is set for the functions of counters (rate, irate,
	// increase), whose result start timestamps would change.
	counter bool
	// rng is the range of the function's selector.
	rng time.Duration
	// matchers are the selector's, as written; holes are those whose
	// value is a placeholder.
	matchers []*labels.Matcher
	holes    []hole
	// names are the metric names the query reads, for the Registry.
	names []string
	// fixedLen is the length of the query without its placeholders, for
	// the bound on the expanded query's length.
	fixedLen int
	// steps apply to the aggregation's value, innermost first.
	steps []numberStep
}

type hole struct {
	// at is the matcher's index in directPlan.matchers.
	at  int
	key string
	// written is the length of ${key}.
	written int
}

// maxPlanMatchers bounds the matchers of a planned selector: a scratch
// holds that many without allocating.
const maxPlanMatchers = 8

// planCache remembers the plan of a written query, nil for a query the
// direct path leaves to the engine. It starts again empty when full, as
// checkCache does.
type planCache struct {
	mu    sync.RWMutex
	plans map[string]*directPlan
}

func (c *planCache) plan(query string, vars map[string]string) *directPlan {
	c.mu.RLock()
	p, ok := c.plans[query]
	c.mu.RUnlock()
	if ok {
		return p
	}
	p = newDirectPlan(query, vars)
	if len(query) > maxCachedQueryLen {
		return p
	}
	c.mu.Lock()
	if c.plans == nil || len(c.plans) >= maxCheckAnswers {
		c.plans = map[string]*directPlan{}
	}
	c.plans[query] = p
	c.mu.Unlock()
	return p
}

// newDirectPlan returns the plan of query, or nil when the direct path
// leaves it to the engine. vars are only the placeholder names.
func newDirectPlan(query string, vars map[string]string) *directPlan {
	expanded, keyOf, ok := expandWithStandIns(query, vars)
	if !ok {
		return nil
	}
	expr, err := parser.NewParser(parserOptions).ParseExpr(expanded)
	if err != nil {
		return nil
	}
	var steps []numberStep
	e := unwrapParens(expr)
	for {
		b, ok := e.(*parser.BinaryExpr)
		if !ok {
			break
		}
		if !directBinops[b.Op] {
			return nil
		}
		l, r := unwrapParens(b.LHS), unwrapParens(b.RHS)
		if n, ok := r.(*parser.NumberLiteral); ok {
			steps, e = append(steps, numberStep{op: b.Op, number: n.Val, returnBool: b.ReturnBool}), l
		} else if n, ok := l.(*parser.NumberLiteral); ok {
			steps, e = append(steps, numberStep{op: b.Op, number: n.Val, swap: true, returnBool: b.ReturnBool}), r
		} else {
			return nil
		}
	}
	agg, ok := e.(*parser.AggregateExpr)
	if !ok || !directOps[agg.Op] || agg.Param != nil || agg.Without || len(agg.Grouping) > 0 {
		return nil
	}
	p := &directPlan{op: agg.Op}
	for i := len(steps) - 1; i >= 0; i-- {
		p.steps = append(p.steps, steps[i])
	}
	var vs *parser.VectorSelector
	switch in := unwrapParens(agg.Expr).(type) {
	case *parser.VectorSelector:
		vs = in
	case *parser.Call:
		if !directFuncs[in.Func.Name] || len(in.Args) != 1 {
			return nil
		}
		ms, ok := in.Args[0].(*parser.MatrixSelector)
		if !ok || ms.RangeExpr != nil || ms.Range <= 0 {
			return nil
		}
		if vs, ok = ms.VectorSelector.(*parser.VectorSelector); !ok {
			return nil
		}
		p.fn, p.rng = in.Func.Name, ms.Range
		p.counter = p.fn == "rate" || p.fn == "irate" || p.fn == "increase"
	default:
		return nil
	}
	if vs.OriginalOffset != 0 || vs.OriginalOffsetExpr != nil || vs.Timestamp != nil || vs.StartOrEnd != 0 ||
		vs.Anchored || vs.Smoothed || len(vs.LabelMatchers) > maxPlanMatchers {
		return nil
	}
	p.matchers = vs.LabelMatchers
	p.fixedLen = len(query)
	for i, m := range vs.LabelMatchers {
		if !strings.Contains(m.Value, placeholderPrefix) {
			continue
		}
		k, ok := keyOf[m.Value]
		if !ok || m.Name == model.MetricNameLabel || (m.Type != labels.MatchEqual && m.Type != labels.MatchNotEqual) {
			return nil
		}
		p.holes = append(p.holes, hole{at: i, key: k, written: len("${" + k + "}")})
		p.fixedLen -= len("${" + k + "}")
	}
	// Every placeholder must be one of the holes: one elsewhere (a metric
	// name, a regular expression, a comment) is the engine's.
	if strings.Count(expanded, placeholderPrefix) != len(p.holes) {
		return nil
	}
	p.names = metricNames(expr)
	return p
}

func unwrapParens(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// directScratch is what one direct evaluation uses, kept between them.
type directScratch struct {
	matchers [maxPlanMatchers]labels.Matcher
	ms       [maxPlanMatchers]*labels.Matcher
	chunks   []closedChunk
	arena    []byte
	it       seriesIterator
	floats   []fpoint
	series   []*memSeries
}

type fpoint struct {
	t int64
	f float64
}

// release drops what the scratch refers to, so that an idle scratch keeps
// no series or chunk alive.
func (sc *directScratch) release() {
	clear(sc.series)
	clear(sc.chunks[:cap(sc.chunks)])
	sc.it = seriesIterator{chunk: sc.it.chunk, reuse: sc.it.reuse}
}

// maxIdleScratches bounds the scratches an Evaluator keeps between
// evaluations: about as many as evaluate at once.
const maxIdleScratches = 64

// getScratch returns an idle scratch of e, or a new one.
func (e *Evaluator) getScratch() *directScratch {
	select {
	case sc := <-e.scratches:
		return sc
	default:
		return new(directScratch)
	}
}

// putScratch keeps sc for a later evaluation, unless enough are idle.
func (e *Evaluator) putScratch(sc *directScratch) {
	sc.release()
	select {
	case e.scratches <- sc:
	default:
	}
}

// directPlanned reports whether query, as written, has a plan: whether
// evalDirect may answer it (it may still leave one evaluation to the
// engine, for the data or the values it meets).
func (e *Evaluator) directPlanned(query string, vars map[string]string) bool {
	return e.direct != nil && e.checked.answer(query, e.check) == nil && e.plans.plan(query, vars) != nil
}

// safeValue reports whether v stands in a quoted matcher value exactly as
// written (no escaping), adds nothing to Limits' regular-expression bound,
// and is not empty (an empty value can make a selector the parser
// refuses).
func safeValue(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\\\"'`{*+?|([.", c) >= 0 {
			return false
		}
	}
	return true
}

// evalDirect evaluates query by its plan, and says how many samples it
// loaded as the engine counts them. It answers DirectNotTaken when it
// declines before reading the Store, DirectDeclined when it read it and
// then leaves the query to the engine, with the samples loaded before it
// declined, which the namespace is charged all the same.
func (e *Evaluator) evalDirect(ctx context.Context, store *Store, query string, at time.Time, vars map[string]string) (_ Result, samples int64, how Direct) {
	if ctx.Err() != nil {
		return Result{}, 0, DirectNotTaken
	}
	start := time.Now()
	p := e.plans.plan(query, vars)
	if p == nil {
		return Result{}, 0, DirectNotTaken
	}
	sc := e.getScratch()
	defer e.putScratch(sc)
	length := p.fixedLen
	ms := sc.ms[:len(p.matchers)]
	copy(ms, p.matchers)
	for i, h := range p.holes {
		v, ok := vars[h.key]
		if !ok || !safeValue(v) {
			return Result{}, 0, DirectNotTaken
		}
		length += len(v)
		m := p.matchers[h.at]
		sc.matchers[i] = labels.Matcher{Type: m.Type, Name: m.Name, Value: v}
		ms[h.at] = &sc.matchers[i]
	}
	if length > max(maxExpandedQueryLength, 4*e.limits.MaxQueryLength) {
		return Result{}, 0, DirectNotTaken
	}
	ts := at.UnixMilli()
	window := e.lookback
	if p.fn != "" {
		window = p.rng
	}
	// Samples in (ts-window, ts], and none before retention's cutoff, as
	// the Store's Querier gives them to the engine.
	mint := max(ts-window.Milliseconds()+1, store.cutoff())
	store.requested.addUnowned(p.names...)

	agg := aggregate{op: p.op}
	sc.series = store.appendSeries(sc.series[:0], ms)
	for i, ser := range sc.series {
		if i%256 == 255 && (ctx.Err() != nil || time.Since(start) > e.limits.Timeout) {
			// Ended or over the timeout while reading many series:
			// the engine says so.
			return Result{}, samples, DirectDeclined
		}
		sc.chunks, sc.arena = sc.chunks[:0], sc.arena[:0]
		ser.lock()
		sc.chunks, sc.arena = ser.appendChunks(sc.chunks, sc.arena, 0, true, mint, ts)
		ser.unlock()
		snap := snapshotSeries{chunks: sc.chunks, mint: mint, maxt: ts}
		it := snap.Iterator(&sc.it).(*seriesIterator)
		sc.floats = sc.floats[:0]
		var last fpoint
		found := false
		for {
			vt := it.Next()
			if vt == chunkenc.ValNone {
				break
			}
			if vt != chunkenc.ValFloat || p.counter && it.AtST() != 0 {
				// Native histograms and start timestamps are the engine's.
				return Result{}, samples, DirectDeclined
			}
			t, f := it.At()
			switch {
			case p.fn == "":
				// An instant selector reads the newest sample.
				last, found = fpoint{t, f}, true
			case !value.IsStaleNaN(f):
				// A range drops staleness markers.
				sc.floats = append(sc.floats, fpoint{t, f})
			}
		}
		if it.Err() != nil {
			return Result{}, samples, DirectDeclined
		}
		var (
			f    float64
			have bool
		)
		if p.fn == "" {
			// An instant selector ends at a staleness marker.
			if found && !value.IsStaleNaN(last.f) {
				f, have = last.f, true
				samples++
			}
		} else {
			samples += int64(len(sc.floats))
			f, have = overRange(p.fn, sc.floats, ts-p.rng.Milliseconds(), ts, p.rng)
		}
		if samples > int64(e.limits.MaxSamples)/2 {
			// Near the bound the engine's own count decides.
			return Result{}, samples, DirectDeclined
		}
		if have {
			agg.add(f)
		}
	}
	if time.Since(start) > e.limits.Timeout {
		// Over the timeout: the engine evaluates it again and says so.
		return Result{}, samples, DirectDeclined
	}
	if !agg.seen {
		return Result{Kind: KindNoData}, samples, DirectAnswered
	}
	v := agg.result()
	for _, st := range p.steps {
		var keep bool
		if v, keep = st.apply(v); !keep {
			return Result{Kind: KindNoData}, samples, DirectAnswered
		}
	}
	r := ResultOf(v)
	r.Labels = labels.EmptyLabels()
	return r, samples, DirectAnswered
}

// apply is the engine's operation between a one-element vector holding v
// and a scalar; keep is false when a comparison drops the element.
func (st numberStep) apply(v float64) (float64, bool) {
	l, r := v, st.number
	if st.swap {
		l, r = r, l
	}
	var (
		out  float64
		keep = true
	)
	switch st.op {
	case parser.ADD:
		out = l + r
	case parser.SUB:
		out = l - r
	case parser.MUL:
		out = l * r
	case parser.DIV:
		out = l / r
	case parser.POW:
		out = math.Pow(l, r)
	case parser.MOD:
		out = math.Mod(l, r)
	case parser.ATAN2:
		out = math.Atan2(l, r)
	case parser.EQLC:
		out, keep = l, l == r
	case parser.NEQ:
		out, keep = l, l != r
	case parser.GTR:
		out, keep = l, l > r
	case parser.LSS:
		out, keep = l, l < r
	case parser.GTE:
		out, keep = l, l >= r
	case parser.LTE:
		out, keep = l, l <= r
	}
	if st.op.IsComparisonOperator() {
		// A comparison keeps the vector's value, on either side.
		out = v
	}
	if st.returnBool {
		out = 0
		if keep {
			out = 1
		}
		keep = true
	}
	return out, keep
}

// overRange is fn over the floats of one series' range (rangeStart, rangeEnd],
// as Prometheus' functions compute it; have is false when it gives no
// sample.
func overRange(fn string, fs []fpoint, rangeStart, rangeEnd int64, rng time.Duration) (float64, bool) {
	if len(fs) == 0 {
		return 0, false
	}
	switch fn {
	case "rate":
		return extrapolatedRate(fs, rangeStart, rangeEnd, rng, true)
	case "increase":
		return extrapolatedRate(fs, rangeStart, rangeEnd, rng, false)
	case "irate":
		if len(fs) < 2 {
			return 0, false
		}
		prev, last := fs[len(fs)-2], fs[len(fs)-1]
		if last.t == prev.t {
			return 0, false
		}
		v := last.f
		if !(last.f < prev.f) {
			v = last.f - prev.f
		}
		return v / (float64(last.t-prev.t) / 1000), true
	case "max_over_time":
		m := fs[0].f
		for _, p := range fs {
			if p.f > m || math.IsNaN(m) {
				m = p.f
			}
		}
		return m, true
	case "min_over_time":
		m := fs[0].f
		for _, p := range fs {
			if p.f < m || math.IsNaN(m) {
				m = p.f
			}
		}
		return m, true
	case "avg_over_time":
		var (
			sum, count      = fs[0].f, 1.
			mean, kahanC    float64
			incrementalMean bool
		)
		for i, p := range fs[1:] {
			count = float64(i + 2)
			if !incrementalMean {
				newSum, newC := kahansum.Inc(p.f, sum, kahanC)
				if !math.IsInf(newSum, 0) {
					sum, kahanC = newSum, newC
					continue
				}
				incrementalMean = true
				mean = sum / (count - 1)
				kahanC /= (count - 1)
			}
			q := (count - 1) / count
			mean, kahanC = kahansum.Inc(p.f/count, q*mean, q*kahanC)
		}
		if incrementalMean {
			return mean + kahanC, true
		}
		return sum/count + kahanC/count, true
	}
	return 0, false
}

// extrapolatedRate is rate (isRate) or increase of a counter's floats, as
// Prometheus computes it for samples without start timestamps.
func extrapolatedRate(fs []fpoint, rangeStart, rangeEnd int64, rng time.Duration, isRate bool) (float64, bool) {
	n1 := len(fs) - 1
	if n1 == 0 {
		return 0, false
	}
	firstT, lastT := fs[0].t, fs[n1].t
	result := fs[n1].f - fs[0].f
	for i, cur := range fs[1:] {
		if prev := fs[i]; cur.f < prev.f {
			result += prev.f
		}
	}
	durationToStart := float64(firstT-rangeStart) / 1000
	durationToEnd := float64(rangeEnd-lastT) / 1000
	sampledInterval := float64(lastT-firstT) / 1000
	averageDurationBetweenSamples := sampledInterval / float64(n1)
	extrapolationThreshold := averageDurationBetweenSamples * 1.1
	if durationToStart >= extrapolationThreshold {
		durationToStart = averageDurationBetweenSamples / 2
	}
	durationToZero := durationToStart
	if result > 0 && fs[0].f >= 0 {
		durationToZero = sampledInterval * (fs[0].f / result)
	}
	if durationToZero < durationToStart {
		durationToStart = durationToZero
	}
	if durationToEnd >= extrapolationThreshold {
		durationToEnd = averageDurationBetweenSamples / 2
	}
	factor := 1.0
	if sampledInterval != 0 {
		factor = (sampledInterval + durationToStart + durationToEnd) / sampledInterval
	}
	if isRate {
		factor /= rng.Seconds()
	}
	result *= factor
	return result, true
}

// aggregate is an aggregation without grouping over floats, as
// Prometheus' engine computes it.
type aggregate struct {
	op              parser.ItemType
	seen            bool
	value, mean, c  float64
	count           float64
	incrementalMean bool
}

func (a *aggregate) add(f float64) {
	if !a.seen {
		*a = aggregate{op: a.op, seen: true, value: f, mean: f, count: 1}
		return
	}
	switch a.op {
	case parser.SUM:
		a.value, a.c = kahansum.Inc(f, a.value, a.c)
	case parser.AVG:
		a.count++
		if !a.incrementalMean {
			newV, newC := kahansum.Inc(f, a.value, a.c)
			if !math.IsInf(newV, 0) {
				a.value, a.c = newV, newC
				return
			}
			a.incrementalMean = true
			a.mean = a.value / (a.count - 1)
			a.c /= a.count - 1
		}
		q := (a.count - 1) / a.count
		a.mean, a.c = kahansum.Inc(f/a.count, q*a.mean, q*a.c)
	case parser.MAX:
		if a.value < f || math.IsNaN(a.value) {
			a.value = f
		}
	case parser.MIN:
		if a.value > f || math.IsNaN(a.value) {
			a.value = f
		}
	case parser.COUNT:
		a.count++
	}
}

func (a *aggregate) result() float64 {
	switch a.op {
	case parser.SUM:
		return a.value + a.c
	case parser.AVG:
		if a.incrementalMean {
			return a.mean + a.c
		}
		return a.value/a.count + a.c/a.count
	case parser.COUNT:
		return a.count
	}
	return a.value
}
