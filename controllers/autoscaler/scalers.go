package autoscaler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// builtScaler is one trigger's scaler, or why it could not be built. A
// trigger whose scaler failed to build is invalid on every tick, with the
// constructor's message, until the config changes.
type builtScaler struct {
	name   string
	source string
	scaler scaling.Scaler
	err    error
}

// scalerVars are the placeholder values of a workload's triggers besides
// ${namespace} and ${name} (which QueryScaler always sets): together they
// are promql.TriggerPlaceholders, the set admission allows.
func (k *kindLoop) scalerVars(nn types.NamespacedName) map[string]string {
	return promql.TriggerVars(nn.Namespace, nn.Name, k.kind, k.resource)
}

// ensureScalers builds the workload's scalers when its triggers changed
// since the last build (not on every tick: a remote scaler may hold a
// connection), closing the old ones.
func (k *kindLoop) ensureScalers(ctx context.Context, st *workload, cfg *scaling.Config) {
	sources := k.a.opts.Sources
	def := sources.Default()
	if st.scalersFrom.matches(cfg.Triggers, def) && len(st.scalers) == len(cfg.Triggers) {
		return
	}
	k.closeScalers(ctx, st)
	st.scalersFrom = newScalersKey(cfg.Triggers, def)
	scrape := false
	vars := k.scalerVars(st.nn)
	var queries []string
	var promqlAt []int
	for _, t := range cfg.Triggers {
		if t.Source == "" {
			t.Source = def
		}
		b := builtScaler{name: t.Name, source: t.Source}
		b.scaler, b.err = sources.NewScaler(ctx, scaling.ScalerConfig{Trigger: t, Namespace: st.nn.Namespace, Name: st.nn.Name, Vars: vars})
		if b.err == nil && t.Source == scaling.SourcePromQL {
			scrape = true
			expanded, err := promql.Expand(t.Query, vars)
			if err != nil {
				b.err = fmt.Errorf("query %q: %w", t.Query, err)
			} else {
				queries = append(queries, expanded)
				promqlAt = append(promqlAt, len(st.scalers))
			}
		}
		st.scalers = append(st.scalers, b)
	}
	if req := k.a.opts.RequestQueries; req != nil && len(queries) > 0 {
		if err := req(k.queryOwner(st.nn), queries...); err != nil {
			for _, i := range promqlAt {
				st.scalers[i].err = fmt.Errorf("request the metric names of the queries: %w", err)
			}
		}
	}
	st.mu.Lock()
	st.scrape = scrape
	st.mu.Unlock()
}

// sample reads every trigger at the same now, as Decide expects. All
// samples of the tick share Options.TickTimeout (V10): once it is spent,
// the triggers not read yet have no value on this tick, which keeps the
// count as any invalid trigger does. Each sample is also bounded on its
// own (sampleBounded), even when its scaler ignores its context.
//
// A scaler that takes its sample at once from memory
// (scaling.DirectSampler) is read inline, without the goroutine and the
// timeout a sample that may wait needs; the tick's budget is set up only
// when a sample needs it, with the deadline it would have had.
func (k *kindLoop) sample(ctx context.Context, st *workload, now time.Time) []scaling.TriggerResult {
	out := make([]scaling.TriggerResult, len(st.scalers))
	budget := tickBudget{parent: ctx, deadline: time.Now().Add(k.a.opts.TickTimeout)}
	defer budget.end()
	for i, b := range st.scalers {
		out[i].Name = b.name
		switch {
		case b.err != nil:
			out[i].Err = b.err
			continue
		case budget.spent() && ctx.Err() == nil:
			out[i].NotEvaluated = true
			out[i].Err = fmt.Errorf("not read: the tick's %v for all triggers was spent on the triggers before it; make them faster or raise autoscaler.queries.tickTimeoutSeconds", k.a.opts.TickTimeout)
			continue
		}
		declined := false
		if d, ok := b.scaler.(scaling.DirectSampler); ok && ctx.Err() == nil {
			s, how := d.SampleDirect(ctx, now)
			if how == scaling.DirectAnswered {
				out[i].Sample = s
				continue
			}
			declined = how == scaling.DirectDeclined
		}
		tick := budget.context()
		sampleCtx := tick
		if declined {
			// The direct path read the data and declined: the sample
			// goes to the engine without reading it again.
			sampleCtx = scaling.DirectDeclinedContext(tick)
		}
		out[i].Sample, out[i].Err = k.sampleBounded(sampleCtx, b.scaler, now)
		// Throttled by the fair scheduler: the source was not asked, so
		// it did not fail either (V12 counts only the source's failures).
		out[i].NotEvaluated = errors.Is(out[i].Err, promql.ErrThrottled)
		if out[i].Err != nil && tick.Err() != nil && ctx.Err() == nil {
			out[i].Err = fmt.Errorf("no answer before the tick's %v for all triggers ran out (autoscaler.queries.tickTimeoutSeconds): %w", k.a.opts.TickTimeout, out[i].Err)
		}
	}
	st.throttled = throttledNote(out)
	return out
}

// tickBudget is the time all samples of a tick share, as a context made
// only when a sample needs one.
type tickBudget struct {
	parent   context.Context
	deadline time.Time
	ctx      context.Context
	cancel   context.CancelFunc
}

func (b *tickBudget) context() context.Context {
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithDeadline(b.parent, b.deadline)
	}
	return b.ctx
}

// spent reports whether the budget ended: its context did, or, before a
// sample needed one, the deadline passed.
func (b *tickBudget) spent() bool {
	if b.ctx == nil {
		return !time.Now().Before(b.deadline)
	}
	return b.ctx.Err() != nil
}

func (b *tickBudget) end() {
	if b.cancel != nil {
		b.cancel()
	}
}

// throttledNote names the triggers the fair scheduler did not evaluate
// (promql.ErrThrottled) and why; "" when none was.
func throttledNote(results []scaling.TriggerResult) string {
	var out []string
	for _, r := range results {
		if errors.Is(r.Err, promql.ErrThrottled) {
			out = append(out, r.Name+": "+r.Err.Error())
		}
	}
	if len(out) == 0 {
		return ""
	}
	return truncate("throttled triggers keep the count: "+strings.Join(out, "; "), maxNote)
}

// queryOwner names a workload's triggers in the store's registry.
func (k *kindLoop) queryOwner(nn types.NamespacedName) string {
	return "autoscaler/" + k.resource + "/" + nn.String()
}

// scalersKey is what a workload's scalers were built from: a deep copy of
// the triggers (the config they came from may change in place) and the
// default source. Comparing it costs no allocation, unlike a serialised
// fingerprint, which matters because every tick compares it.
type scalersKey struct {
	triggers      []scaling.Trigger
	defaultSource string
}

func newScalersKey(ts []scaling.Trigger, defaultSource string) *scalersKey {
	k := &scalersKey{triggers: make([]scaling.Trigger, len(ts)), defaultSource: defaultSource}
	for i := range ts {
		ts[i].DeepCopyInto(&k.triggers[i])
	}
	return k
}

// matches reports whether scalers built from k serve ts; a nil k (nothing
// built yet) matches nothing.
func (k *scalersKey) matches(ts []scaling.Trigger, defaultSource string) bool {
	if k == nil || k.defaultSource != defaultSource || len(k.triggers) != len(ts) {
		return false
	}
	for i := range ts {
		if !reflect.DeepEqual(&k.triggers[i], &ts[i]) {
			return false
		}
	}
	return true
}

// configFingerprint identifies a config, to tick at once when it changes.
func configFingerprint(c *scaling.Config) string {
	b, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	return string(b)
}

// MetricSource adapts a promql.Source (the embedded Evaluator or a Remote)
// to the scaling.MetricSource a QueryScaler samples: an empty result is "no
// data" (ok false), never 0; NaN and ±Inf pass through for Decide to
// reject.
func MetricSource(src promql.Source) scaling.MetricSource { return metricSource{src} }

type metricSource struct{ src promql.Source }

func (m metricSource) Eval(ctx context.Context, query string, at time.Time, vars map[string]string) (float64, bool, error) {
	if scaling.IsDirectDeclined(ctx) {
		ctx = promql.DirectDeclinedContext(ctx)
	}
	r, err := m.src.Eval(ctx, query, at, vars)
	if err != nil {
		return 0, false, err
	}
	if r.Kind == promql.KindNoData {
		return 0, false, nil
	}
	return r.Value, true, nil
}

// EvalDirect implements scaling.DirectMetricSource when src answers some
// queries at once (the embedded Evaluator's direct path).
func (m metricSource) EvalDirect(ctx context.Context, query string, at time.Time, vars map[string]string) (float64, bool, scaling.Direct) {
	d, ok := m.src.(directSource)
	if !ok {
		return 0, false, scaling.DirectNotTaken
	}
	r, how := d.EvalDirect(ctx, query, at, vars)
	switch how {
	case promql.DirectAnswered:
		return r.Value, r.Kind != promql.KindNoData, scaling.DirectAnswered
	case promql.DirectDeclined:
		return 0, false, scaling.DirectDeclined
	}
	return 0, false, scaling.DirectNotTaken
}

// directSource is a promql.Source that answers some queries at once, from
// memory (promql.Evaluator, and promql.FairSource over one).
type directSource interface {
	EvalDirect(ctx context.Context, query string, at time.Time, vars map[string]string) (promql.Result, promql.Direct)
}

// QuerySource is the trigger source of queries src evaluates: "promql"
// over the embedded Evaluator, "prometheus" over a Remote. Admission checks
// a trigger's query with checker (a query is required, within the limits,
// parses, yields a number, and uses only promql.TriggerPlaceholders) and
// refuses metadata, which no query source reads: in particular a trigger
// cannot name the server it is sent to.
func QuerySource(src promql.Source, checker *promql.TriggerChecker) scaling.Source {
	return scaling.Source{
		Validate: func(t scaling.Trigger, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if strings.TrimSpace(t.Query) == "" {
				errs = append(errs, field.Required(p.Child("query"),
					`must be a PromQL expression, e.g. sum(rate(http_requests_total{namespace="${namespace}"}[1m]))`))
			} else if err := checker.Check(t.Query); err != nil {
				errs = append(errs, field.Invalid(p.Child("query"), t.Query, err.Error()))
			}
			if len(t.Metadata) == 0 {
				return errs
			}
			for _, key := range slices.Sorted(maps.Keys(t.Metadata)) {
				errs = append(errs, field.Forbidden(p.Child("metadata").Key(key),
					"a query trigger reads no metadata; the server it is sent to is scaleplane's configuration (autoscaler.prometheusURL); remove metadata"))
			}
			return errs
		},
		New: checkedQueryScaler(scaling.QueryScaler(MetricSource(src)), checker),
	}
}

// checkedQueryScaler builds a query scaler only for a query admission would
// accept: an object stored before a bound existed (or while the webhook was
// bypassed) gets a scaler error, reported as an invalid trigger on every
// tick, and its query is never parsed, requested or sent.
func checkedQueryScaler(build scaling.ScalerConstructor, checker *promql.TriggerChecker) scaling.ScalerConstructor {
	return func(ctx context.Context, cfg scaling.ScalerConfig) (scaling.Scaler, error) {
		if q := cfg.Trigger.Query; strings.TrimSpace(q) != "" {
			if err := checker.Check(q); err != nil {
				return nil, fmt.Errorf("query: %w", err)
			}
		}
		return build(ctx, cfg)
	}
}

// NewSources builds the trigger sources of one component: "cron", "promql"
// over the embedded evaluator and, when remote is not nil, "prometheus"
// over a Prometheus-compatible server, which then is the default source.
// Give the same value to the webhook (webhooks.Options.Sources) and to the
// autoscaler (Options.Sources), so that admission accepts exactly the
// triggers the autoscaler can build. Queries are checked against limits at
// admission, as the evaluators check them before every evaluation.
func NewSources(embedded, remote promql.Source, limits promql.Limits) (*scaling.Sources, error) {
	s := scaling.NewSources()
	checker := promql.NewTriggerChecker(limits)
	if err := s.Register(scaling.SourceCron, scaling.CronSource()); err != nil {
		return nil, err
	}
	if embedded != nil {
		if err := s.Register(scaling.SourcePromQL, QuerySource(embedded, checker)); err != nil {
			return nil, err
		}
	}
	if remote != nil {
		if err := s.Register(scaling.SourcePrometheus, QuerySource(remote, checker)); err != nil {
			return nil, err
		}
		s.SetDefault(scaling.SourcePrometheus)
	}
	return s, nil
}
