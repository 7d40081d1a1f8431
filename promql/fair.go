package promql

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of FairOptions, also named in docs/promql.md.
const (
	// DefaultSlots is how many evaluations run at once over every
	// namespace: the autoscaler's ticks, the external scaler's calls and
	// the remote source's requests all take one.
	DefaultSlots = 8
	// DefaultMaxWaitingPerNamespace bounds one namespace's evaluations
	// waiting for a slot; past it an evaluation is refused at once.
	DefaultMaxWaitingPerNamespace = 64
	// DefaultSamplesPerMinute is one namespace's budget of samples loaded
	// by its evaluations per minute: 50 evaluations at the largest size
	// one may have (DefaultMaxSamples), far above what triggers polled
	// every 15 s over a few series cost.
	DefaultSamplesPerMinute = 50 * DefaultMaxSamples
	// DefaultEvalTimePerMinute is one namespace's budget of evaluation
	// time per minute: 30 s, half a core.
	DefaultEvalTimePerMinute = 30 * time.Second
)

// FairOptions configure a Fair scheduler. Zero fields take the defaults.
type FairOptions struct {
	// Slots is how many evaluations run at once, over every namespace.
	Slots int
	// SlotsPerNamespace is the most one namespace's evaluations take at
	// once, its concurrency share: the other slots stay free for the
	// other namespaces. Default half of Slots (at least 1).
	SlotsPerNamespace int
	// MaxWaitingPerNamespace bounds one namespace's evaluations waiting
	// for a slot.
	MaxWaitingPerNamespace int
	// SamplesPerMinute is one namespace's budget of samples its
	// evaluations load per minute; negative: no budget.
	SamplesPerMinute int64
	// EvalTimePerMinute is one namespace's budget of evaluation time per
	// minute; negative: no budget.
	EvalTimePerMinute time.Duration
	// Registerer receives the scheduler's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock budgets refill by. Default time.Now.
	Now func() time.Time
}

func (o FairOptions) withDefaults() FairOptions {
	if o.Slots <= 0 {
		o.Slots = DefaultSlots
	}
	if o.SlotsPerNamespace <= 0 {
		o.SlotsPerNamespace = max(1, o.Slots/2)
	}
	o.SlotsPerNamespace = min(o.SlotsPerNamespace, o.Slots)
	if o.MaxWaitingPerNamespace <= 0 {
		o.MaxWaitingPerNamespace = DefaultMaxWaitingPerNamespace
	}
	if o.SamplesPerMinute == 0 {
		o.SamplesPerMinute = DefaultSamplesPerMinute
	}
	if o.EvalTimePerMinute == 0 {
		o.EvalTimePerMinute = DefaultEvalTimePerMinute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Why Fair refused an evaluation: the reason label of
// scaleplane_evaluations_throttled_total and ThrottledError.Reason.
const (
	ThrottledSamples = "samples_per_minute"
	ThrottledTime    = "eval_time_per_minute"
	ThrottledQueue   = "queue_full"
	ThrottledWait    = "wait_ended"
)

// Metric names of the fair scheduler.
const (
	MetricEvaluationsRunning   = "scaleplane_evaluations_running"
	MetricEvaluationsThrottled = "scaleplane_evaluations_throttled_total"
	MetricEvaluationSamples    = "scaleplane_evaluation_samples_total"
	MetricEvaluationSeconds    = "scaleplane_evaluation_seconds_total"
)

// ErrThrottled is what every ThrottledError wraps.
var ErrThrottled = errors.New("evaluation throttled")

// ThrottledError says why one namespace's evaluation was not run: it spent
// its budget, or too many of its evaluations wait already. The other
// namespaces are not affected.
type ThrottledError struct {
	Namespace string
	// Reason is one of the Throttled constants.
	Reason string
	// Used and Limit are the budget's figures (samples, or nanoseconds of
	// evaluation time, per minute; evaluations for a full queue).
	Used, Limit int64
}

func (e *ThrottledError) Error() string {
	switch e.Reason {
	case ThrottledSamples:
		return fmt.Sprintf("namespace %q spent its budget of %d samples per minute (%d used): its triggers load too many samples; use shorter ranges, fewer series or a longer polling interval, or raise autoscaler.fairness.samplesPerMinute", e.Namespace, e.Limit, e.Used)
	case ThrottledTime:
		return fmt.Sprintf("namespace %q spent its budget of %v of evaluation time per minute (%v used): its triggers are too slow to evaluate; simplify them or poll less often, or raise autoscaler.fairness.evalSecondsPerMinute", e.Namespace, time.Duration(e.Limit), time.Duration(e.Used))
	case ThrottledQueue:
		return fmt.Sprintf("namespace %q already has %d evaluations waiting, the most one namespace may; poll less often or raise autoscaler.fairness.maxWaitingPerNamespace", e.Namespace, e.Limit)
	}
	return fmt.Sprintf("namespace %q waited for an evaluation slot until its deadline: its share of %d slots was busy", e.Namespace, e.Limit)
}

func (e *ThrottledError) Unwrap() error { return ErrThrottled }

// Cost is what one evaluation spent, charged to its namespace's budget.
type Cost struct {
	// Samples loaded (the engine's total samples).
	Samples int64
	// Took is the evaluation's wall time.
	Took time.Duration
}

// Fair hands out evaluation slots to namespaces after the model of the
// API server's priority and fairness: each namespace queues its own
// evaluations, a freed slot goes to the next namespace in round-robin
// order whose share is not in use, and no namespace takes more than
// SlotsPerNamespace slots. Each namespace also has a budget of samples and
// evaluation time per minute (a token bucket refilled continuously); one
// that spent it is refused until it refills. So a namespace that floods,
// or runs costly queries, waits or is refused, and the others keep their
// pace. It is safe for concurrent use.
type Fair struct {
	opts FairOptions

	mu   sync.Mutex
	free int
	// tenants holds the namespaces running, waiting, or refilling.
	tenants map[string]*tenant
	// ring is the namespaces with waiters, in dispatch order; next is
	// where the next dispatch starts.
	ring []string
	next int

	running   *prometheus.GaugeVec
	throttled *prometheus.CounterVec
	samples   *prometheus.CounterVec
	seconds   *prometheus.CounterVec
}

type tenant struct {
	running int
	queue   []*waiter
	// samples and time are the tokens left; refilled at refilled.
	samples  float64
	time     float64
	refilled time.Time
}

type waiter struct {
	ready   chan struct{}
	granted bool
}

// NewFair returns a scheduler; it registers its metrics with
// opts.Registerer when set.
func NewFair(opts FairOptions) (*Fair, error) {
	o := opts.withDefaults()
	f := &Fair{opts: o, free: o.Slots, tenants: map[string]*tenant{},
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricEvaluationsRunning,
			Help: "Evaluations running now, by namespace."}, []string{"namespace"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEvaluationsThrottled,
			Help: "Evaluations refused or given up by the fair scheduler, by namespace and reason."}, []string{"namespace", reasonLabel}),
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEvaluationSamples,
			Help: "Samples loaded by evaluations, by namespace (charged to its samplesPerMinute budget)."}, []string{"namespace"}),
		seconds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricEvaluationSeconds,
			Help: "Evaluation time, by namespace (charged to its evalSecondsPerMinute budget)."}, []string{"namespace"}),
	}
	if o.Registerer != nil {
		var errs []error
		f.running, errs = register(o.Registerer, f.running, errs)
		f.throttled, errs = register(o.Registerer, f.throttled, errs)
		f.samples, errs = register(o.Registerer, f.samples, errs)
		f.seconds, errs = register(o.Registerer, f.seconds, errs)
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("register fair scheduler metrics: %w", err)
		}
	}
	return f, nil
}

// Load is how many of ns's evaluations run and wait now.
func (f *Fair) Load(ns string) (running, waiting int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.tenants[ns]; t != nil {
		return t.running, len(t.queue)
	}
	return 0, 0
}

// Options returns the scheduler's options, defaults filled in.
func (f *Fair) Options() FairOptions { return f.opts }

// tenantLocked returns ns's entry, its budget refilled to now.
func (f *Fair) tenantLocked(ns string, now time.Time) *tenant {
	t := f.tenants[ns]
	if t == nil {
		t = &tenant{samples: float64(f.opts.SamplesPerMinute), time: float64(f.opts.EvalTimePerMinute), refilled: now}
		f.tenants[ns] = t
		return t
	}
	if d := now.Sub(t.refilled); d > 0 {
		frac := float64(d) / float64(time.Minute)
		t.samples = min(float64(f.opts.SamplesPerMinute), t.samples+frac*float64(f.opts.SamplesPerMinute))
		t.time = min(float64(f.opts.EvalTimePerMinute), t.time+frac*float64(f.opts.EvalTimePerMinute))
		t.refilled = now
	}
	return t
}

// overBudget is why t may not start an evaluation, or nil.
func (f *Fair) overBudget(ns string, t *tenant) *ThrottledError {
	switch {
	case f.opts.SamplesPerMinute > 0 && t.samples <= 0:
		return &ThrottledError{Namespace: ns, Reason: ThrottledSamples, Limit: f.opts.SamplesPerMinute, Used: f.opts.SamplesPerMinute - int64(t.samples)}
	case f.opts.EvalTimePerMinute > 0 && t.time <= 0:
		return &ThrottledError{Namespace: ns, Reason: ThrottledTime, Limit: int64(f.opts.EvalTimePerMinute), Used: int64(f.opts.EvalTimePerMinute) - int64(t.time)}
	}
	return nil
}

// Acquire takes one of ns's slots, waiting in ns's queue until one is
// free or ctx ends. It returns a *ThrottledError when ns spent its budget,
// its queue is full, or ctx ended first. Call the returned release exactly
// once, with what the evaluation cost, as soon as it ends (failed or not):
// it hands the slot on.
func (f *Fair) Acquire(ctx context.Context, ns string) (release func(Cost), err error) {
	f.mu.Lock()
	t := f.tenantLocked(ns, f.opts.Now())
	if te := f.overBudget(ns, t); te != nil {
		f.mu.Unlock()
		f.throttled.WithLabelValues(ns, te.Reason).Inc()
		return nil, te
	}
	release = f.releaser(ns)
	if f.free > 0 && t.running < f.opts.SlotsPerNamespace && len(t.queue) == 0 {
		f.grantLocked(ns, t)
		f.mu.Unlock()
		return release, nil
	}
	if len(t.queue) >= f.opts.MaxWaitingPerNamespace {
		f.mu.Unlock()
		f.throttled.WithLabelValues(ns, ThrottledQueue).Inc()
		return nil, &ThrottledError{Namespace: ns, Reason: ThrottledQueue, Limit: int64(f.opts.MaxWaitingPerNamespace), Used: int64(f.opts.MaxWaitingPerNamespace)}
	}
	w := &waiter{ready: make(chan struct{})}
	if len(t.queue) == 0 {
		f.ring = append(f.ring, ns)
	}
	t.queue = append(t.queue, w)
	f.mu.Unlock()

	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
	}
	f.mu.Lock()
	if w.granted {
		// Granted as the context ended: hand the slot on.
		f.mu.Unlock()
		release(Cost{})
	} else {
		f.dequeueLocked(ns, t, w)
		f.mu.Unlock()
	}
	f.throttled.WithLabelValues(ns, ThrottledWait).Inc()
	return nil, &ThrottledError{Namespace: ns, Reason: ThrottledWait, Limit: int64(f.opts.SlotsPerNamespace)}
}

func (f *Fair) grantLocked(ns string, t *tenant) {
	f.free--
	t.running++
	f.running.WithLabelValues(ns).Set(float64(t.running))
}

// tryAcquire takes one of ns's slots when Acquire would grant one at
// once (ns is within its budget, has no waiters, and a slot is free); it
// reports false, taking nothing, when Acquire would refuse or wait. Give
// the slot back with release.
func (f *Fair) tryAcquire(ns string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tenantLocked(ns, f.opts.Now())
	if f.overBudget(ns, t) != nil || f.free <= 0 || t.running >= f.opts.SlotsPerNamespace || len(t.queue) > 0 {
		return false
	}
	f.grantLocked(ns, t)
	return true
}

// releaser is the release func of one slot of ns.
func (f *Fair) releaser(ns string) func(Cost) {
	var once sync.Once
	return func(c Cost) {
		once.Do(func() { f.release(ns, c) })
	}
}

// release gives back one slot of ns, charging c to its budget.
func (f *Fair) release(ns string, c Cost) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tenantLocked(ns, f.opts.Now())
	t.running--
	f.free++
	t.samples -= float64(c.Samples)
	t.time -= float64(c.Took)
	f.running.WithLabelValues(ns).Set(float64(t.running))
	f.samples.WithLabelValues(ns).Add(float64(c.Samples))
	f.seconds.WithLabelValues(ns).Add(c.Took.Seconds())
	f.dispatchLocked()
	if t.running == 0 && len(t.queue) == 0 && t.samples >= float64(f.opts.SamplesPerMinute) && t.time >= float64(f.opts.EvalTimePerMinute) {
		// Idle with its whole budget: forgotten, with its gauge, so
		// namespaces that come and go leave nothing behind.
		delete(f.tenants, ns)
		f.running.DeleteLabelValues(ns)
	}
}

// dispatchLocked hands free slots to waiting namespaces in round-robin
// order, skipping those using their whole share.
func (f *Fair) dispatchLocked() {
	for f.free > 0 && len(f.ring) > 0 {
		granted := false
		for i := 0; i < len(f.ring) && f.free > 0; i++ {
			idx := (f.next + i) % len(f.ring)
			ns := f.ring[idx]
			t := f.tenants[ns]
			if t.running >= f.opts.SlotsPerNamespace {
				continue
			}
			w := t.queue[0]
			t.queue = t.queue[1:]
			w.granted = true
			f.grantLocked(ns, t)
			close(w.ready)
			granted = true
			if len(t.queue) == 0 {
				f.ring = append(f.ring[:idx], f.ring[idx+1:]...)
				f.next = idx
			} else {
				f.next = idx + 1
			}
			if len(f.ring) > 0 {
				f.next %= len(f.ring)
			} else {
				f.next = 0
			}
			break
		}
		if !granted {
			return
		}
	}
}

func (f *Fair) dequeueLocked(ns string, t *tenant, w *waiter) {
	for i, q := range t.queue {
		if q == w {
			t.queue = append(t.queue[:i], t.queue[i+1:]...)
			break
		}
	}
	if len(t.queue) > 0 {
		return
	}
	for i, r := range f.ring {
		if r == ns {
			f.ring = append(f.ring[:i], f.ring[i+1:]...)
			if f.next > i {
				f.next--
			}
			if len(f.ring) > 0 {
				f.next %= len(f.ring)
			} else {
				f.next = 0
			}
			break
		}
	}
}

// costKey carries a *Cost through an evaluation, for the Evaluator to fill
// with what the engine counted.
type costKey struct{}

// withCost returns ctx carrying c.
func withCost(ctx context.Context, c *Cost) context.Context {
	return context.WithValue(ctx, costKey{}, c)
}

// costOf is the Cost ctx carries, nil if none: only an evaluation under
// a Fair reads the engine's counts.
func costOf(ctx context.Context) *Cost {
	c, _ := ctx.Value(costKey{}).(*Cost)
	return c
}

// FairSource is src evaluated under f: each evaluation takes a slot of the
// namespace its vars name (the ${namespace} placeholder; "" for queries
// without one), and its cost is charged to that namespace's budget. Give
// every Source of a process (the Evaluator, Remote) the same Fair, so that
// the autoscaler and the external scaler share the slots fairly.
func FairSource(src Source, f *Fair) Source { return fairSource{src: src, fair: f} }

type fairSource struct {
	src  Source
	fair *Fair
}

// EvalDirect is Eval for a query the Evaluator's direct path answers
// (see Evaluator.EvalDirect), when ns's slot is granted at once: it takes
// the slot, evaluates and charges the cost as Eval does. It answers
// DirectNotTaken, with nothing taken or charged, when the query is not
// planned or the slot would be refused or waited for; Eval then does
// both. When the path declines after loading samples it charges them and
// answers DirectDeclined: Eval under DirectDeclinedContext then hands the
// query to the engine without loading them again.
func (s fairSource) EvalDirect(ctx context.Context, query string, at time.Time, vars map[string]string) (Result, Direct) {
	e, ok := s.src.(*Evaluator)
	if !ok || !e.directPlanned(query, vars) {
		return Result{}, DirectNotTaken
	}
	ns := vars["namespace"]
	if !s.fair.tryAcquire(ns) {
		return Result{}, DirectNotTaken
	}
	if at.IsZero() {
		at = e.now()
	}
	start := time.Now()
	r, samples, how := e.evalDirect(ctx, e.direct, query, at, vars)
	// Charged whether it answered or declined: the samples were loaded.
	s.fair.release(ns, Cost{Samples: samples, Took: time.Since(start)})
	return r, how
}

func (s fairSource) Eval(ctx context.Context, query string, at time.Time, vars map[string]string) (Result, error) {
	ns := vars["namespace"]
	release, err := s.fair.Acquire(ctx, ns)
	if err != nil {
		return Result{}, err
	}
	var c Cost
	start := time.Now()
	r, err := s.src.Eval(withCost(ctx, &c), query, at, vars)
	c.Took = time.Since(start)
	release(c)
	return r, err
}
