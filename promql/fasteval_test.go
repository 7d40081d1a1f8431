package promql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

// directShapes are query templates the direct path plans; directQueries
// builds every combination with the operators and functions it knows.
func directQueries() []string {
	var out []string
	sels := []string{
		`m_total{namespace="${namespace}",job="${name}"}`,
		`m_total{job="${name}"}`,
		`m_total{namespace="${namespace}",pod!="${name}"}`,
		`{__name__="m_total",namespace="${namespace}"}`,
		`m_total{namespace=~"n.*"}`,
	}
	for _, op := range []string{"sum", "avg", "max", "min", "count"} {
		for _, sel := range sels {
			out = append(out, fmt.Sprintf("%s(%s)", op, sel))
			for _, fn := range []string{"rate", "irate", "increase", "avg_over_time", "max_over_time", "min_over_time"} {
				for _, rng := range []string{"30s", "1m", "2m30s"} {
					out = append(out, fmt.Sprintf("%s(%s(%s[%s]))", op, fn, sel, rng))
				}
			}
		}
	}
	// Numbers on either side, comparisons with and without bool, chains.
	agg := `sum(rate(m_total{namespace="${namespace}",job="${name}"}[1m]))`
	for _, op := range []string{"+", "-", "*", "/", "^", "%", "atan2", "==", "!=", ">", "<", ">=", "<=", "== bool", "!= bool", "> bool", "< bool", ">= bool", "<= bool"} {
		for _, n := range []string{"0", "1", "0.5", "NaN", "Inf", "-Inf"} {
			out = append(out, fmt.Sprintf("%s %s %s", agg, op, n), fmt.Sprintf("(%s) %s (%s)", n, op, agg))
		}
	}
	out = append(out, fmt.Sprintf("(%s > 0.5) * 60 - 1", agg), `2 * (1 + max(m_total{job="${name}"}) >= bool 50)`)
	return out
}

// fillRandom writes series of m_total for a few namespaces, jobs and
// pods: irregular steps, counter resets, NaN, ±Inf, staleness markers and
// gaps, between from and to.
func fillRandom(t testing.TB, s *Store, r *rand.Rand, from, to time.Time) {
	t.Helper()
	for ns := range 2 {
		for job := range 2 {
			for pod := range 1 + r.IntN(3) {
				lset := labels.FromStrings("__name__", "m_total", "namespace", fmt.Sprintf("n%d", ns), "job", fmt.Sprintf("j%d", job), "pod", fmt.Sprintf("j%d", pod))
				v := r.Float64() * 100
				for at := from.Add(time.Duration(r.IntN(30)) * time.Second); at.Before(to); at = at.Add(time.Duration(1+r.IntN(20)) * time.Second) {
					switch r.IntN(40) {
					case 0:
						v = 0 // a reset
					case 1:
						_ = s.Append(lset, at.UnixMilli(), math.Float64frombits(value.StaleNaN))
						continue
					case 2:
						_ = s.Append(lset, at.UnixMilli(), math.NaN())
						continue
					case 3:
						_ = s.Append(lset, at.UnixMilli(), math.Inf(1-2*r.IntN(2)))
						continue
					case 4:
						at = at.Add(2 * time.Minute) // a gap
					case 5:
						v = -v
					}
					v += r.Float64() * 10
					if err := s.Append(lset, at.UnixMilli(), v); err != nil {
						t.Fatalf("append: %v", err)
					}
				}
			}
		}
	}
}

// compareDirect evaluates query with the direct path and with the engine
// alone and reports any difference in result, error or samples charged.
func compareDirect(t *testing.T, direct, engine *Evaluator, query string, at time.Time, vars map[string]string) {
	t.Helper()
	var dc, ec Cost
	dr, derr := direct.Eval(withCost(context.Background(), &dc), query, at, vars)
	er, eerr := engine.Eval(withCost(context.Background(), &ec), query, at, vars)
	if (derr == nil) != (eerr == nil) || derr != nil && derr.Error() != eerr.Error() {
		t.Fatalf("%s at %v %v: direct error %v, engine error %v", query, at, vars, derr, eerr)
	}
	same := dr.Kind == er.Kind && (dr.Value == er.Value || math.IsNaN(dr.Value) && math.IsNaN(er.Value)) && labels.Equal(dr.Labels, er.Labels)
	if !same {
		t.Fatalf("%s at %v %v: direct %+v (%v), engine %+v (%v)", query, at, vars, dr, math.Float64bits(dr.Value), er, math.Float64bits(er.Value))
	}
	if dc.Samples != ec.Samples {
		t.Fatalf("%s at %v %v: direct charged %d samples, engine %d", query, at, vars, dc.Samples, ec.Samples)
	}
}

func directPair(s *Store, now time.Time) (direct, engine *Evaluator) {
	clock := func() time.Time { return now }
	return NewEvaluator(s, EvaluatorOptions{Now: clock}), NewEvaluator(s, EvaluatorOptions{Now: clock, EngineOnly: true})
}

// TestDirectPathMatchesEngine: for every shape the direct path plans, over
// random data with resets, NaN, ±Inf, staleness markers, gaps and a
// retention cutoff, it returns what the engine returns (value bits, kind,
// labels, errors) and charges the same samples.
func TestDirectPathMatchesEngine(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(1, 2))
	s := NewStore(Options{Now: func() time.Time { return now }, Retention: 20 * time.Minute})
	fillRandom(t, s, r, now.Add(-30*time.Minute), now)
	direct, engine := directPair(s, now)
	queries := directQueries()
	for _, q := range queries {
		if newDirectPlan(q, TriggerVars("", "", "", "")) == nil {
			t.Fatalf("the direct path does not plan %s", q)
		}
	}
	for range 10000 {
		q := queries[r.IntN(len(queries))]
		at := now.Add(-time.Duration(r.IntN(25*60)) * time.Second)
		vars := TriggerVars(fmt.Sprintf("n%d", r.IntN(3)), fmt.Sprintf("j%d", r.IntN(3)), "Kind", "kinds")
		compareDirect(t, direct, engine, q, at, vars)
	}
}

// TestDirectPathLeavesOtherQueriesToTheEngine: queries and values the
// direct path does not cover as the engine does are not planned, or not
// evaluated by the plan, and still give the engine's answer.
func TestDirectPathLeavesOtherQueriesToTheEngine(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(3, 4))
	s := NewStore(Options{Now: func() time.Time { return now }})
	fillRandom(t, s, r, now.Add(-30*time.Minute), now)
	direct, engine := directPair(s, now)
	unplanned := []string{
		`sum by (pod) (rate(m_total{job="${name}"}[1m]))`,
		`sum without () (m_total{job="${name}"})`,
		`sum(rate(m_total{job="${name}"}[1m] offset 1m))`,
		`sum(m_total{job="${name}"} @ 100)`,
		`sum(idelta(m_total{job="${name}"}[1m]))`,
		`sum(m_total{job="${name}"}) > sum(m_total)`,
		`sum(m_total{job="${name}"}) + time()`,
		`-sum(m_total{job="${name}"})`,
		`sum(m_total{job="${name}"}) and on() vector(1)`,
		`sum(m_total{job=~"${name}"})`,
		`sum(${name}{job="x"})`,
		`sum(m_total{job="${name}-0"})`,
		`rate(m_total{job="${name}"}[1m])`,
		`quantile(0.5, m_total{job="${name}"})`,
		`sum(rate(m_total{job="${name}"}[1m:10s]))`,
		`sum(m_total{job="scaleplane_placeholder_0"})`,
	}
	for _, q := range unplanned {
		if newDirectPlan(q, TriggerVars("", "", "", "")) != nil {
			t.Errorf("the direct path plans %s", q)
		}
		compareDirect(t, direct, engine, q, now, TriggerVars("n0", "j0", "Kind", "kinds"))
	}
	// Values that would need escaping, or that add to the regular
	// expression bound, or are empty: the engine's.
	for _, name := range []string{`j"0`, `j\0`, "j.0", "", "j(0"} {
		q := `sum(m_total{namespace="${namespace}",job="${name}"})`
		if _, _, how := direct.evalDirect(context.Background(), s, q, now, TriggerVars("n0", name, "Kind", "kinds")); how == DirectAnswered {
			t.Errorf("the direct path evaluated name %q", name)
		}
		compareDirect(t, direct, engine, q, now, TriggerVars("n0", name, "Kind", "kinds"))
	}
	// A native histogram in the window: the engine's.
	app := s.Appender(context.Background())
	hl := labels.FromStrings("__name__", "h_total", "namespace", "n0", "job", "j0")
	for i := range 5 {
		h := &histogram.Histogram{Count: uint64(10 * i), Sum: float64(i), Schema: 0,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{int64(10 * i)}}
		if _, err := app.AppendHistogram(0, hl, now.Add(time.Duration(i-5)*10*time.Second).UnixMilli(), h, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`sum(h_total{job="${name}"})`, `sum(rate(h_total{job="${name}"}[1m]))`} {
		if _, _, how := direct.evalDirect(context.Background(), s, q, now, TriggerVars("n0", "j0", "Kind", "kinds")); how == DirectAnswered {
			t.Errorf("the direct path evaluated %s over a native histogram", q)
		}
		compareDirect(t, direct, engine, q, now, TriggerVars("n0", "j0", "Kind", "kinds"))
	}
	// Unknown placeholders are reported as the engine path reports them.
	compareDirect(t, direct, engine, `sum(m_total{job="${nope}"})`, now, TriggerVars("n0", "j0", "Kind", "kinds"))
}

// FuzzDirectPathMatchesEngine is TestDirectPathMatchesEngine over the
// fuzzer's data seeds, query choices and evaluation times.
func FuzzDirectPathMatchesEngine(f *testing.F) {
	f.Add(uint64(1), uint16(0), uint16(0), uint8(0))
	f.Add(uint64(7), uint16(77), uint16(600), uint8(2))
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	queries := directQueries()
	f.Fuzz(func(t *testing.T, seed uint64, query, back uint16, name uint8) {
		r := rand.New(rand.NewPCG(seed, seed^0x5eed))
		s := NewStore(Options{Now: func() time.Time { return now }, Retention: 20 * time.Minute})
		fillRandom(t, s, r, now.Add(-30*time.Minute), now)
		direct, engine := directPair(s, now)
		at := now.Add(-time.Duration(back%1800) * time.Second)
		vars := TriggerVars(fmt.Sprintf("n%d", name%3), fmt.Sprintf("j%d", (name/3)%3), "Kind", "kinds")
		compareDirect(t, direct, engine, queries[int(query)%len(queries)], at, vars)
	})
}

// BenchmarkDirectPath is one trigger query of the common shape over a
// store of 10,000 workloads, with the direct path and with the engine.
func BenchmarkDirectPath(b *testing.B) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s := NewStore(Options{Now: func() time.Time { return now }, MaxSeries: -1, MaxBytes: -1})
	for i := range 1000 {
		lset := labels.FromStrings("__name__", "http_requests_total", "namespace", "shop", "job", fmt.Sprintf("w%d", i), "pod", fmt.Sprintf("w%d-0", i))
		for j := 24; j >= 0; j-- {
			_ = s.Append(lset, now.Add(-time.Duration(j)*5*time.Second).UnixMilli(), float64(24-j)*50)
		}
	}
	q := `sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[1m]))`
	direct, engine := directPair(s, now)
	for _, tc := range []struct {
		name string
		ev   *Evaluator
	}{{"direct", direct}, {"engine", engine}} {
		b.Run(tc.name, func(b *testing.B) {
			vars := TriggerVars("shop", "w7", "Kind", "kinds")
			b.ReportAllocs()
			for range b.N {
				if r, err := tc.ev.Eval(context.Background(), q, now, vars); err != nil || r.Value != 10 {
					b.Fatalf("%+v %v", r, err)
				}
			}
		})
	}
}

// TestFairDirectPathTakesASlotAndChargesAsEval: under a Fair, a query the
// direct path answers takes a slot of its namespace only when one is free
// at once, and charges the samples Eval charges through the engine; with
// no slot free, or a spent budget, it declines and leaves both to Eval.
func TestFairDirectPathTakesASlotAndChargesAsEval(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s := NewStore(Options{Now: func() time.Time { return now }})
	fillRandom(t, s, rand.New(rand.NewPCG(5, 6)), now.Add(-30*time.Minute), now)
	direct, engine := directPair(s, now)
	newFair := func() *Fair {
		f, err := NewFair(FairOptions{Slots: 2, SlotsPerNamespace: 1, SamplesPerMinute: 1_000_000, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	q := `sum(rate(m_total{namespace="${namespace}",job="${name}"}[2m]))`
	vars := TriggerVars("n0", "j0", "Kind", "kinds")
	fd, fe := newFair(), newFair()
	dr, how := FairSource(direct, fd).(fairSource).EvalDirect(context.Background(), q, now, vars)
	if how != DirectAnswered {
		t.Fatal("the direct path declined a planned query with a free slot")
	}
	er, err := FairSource(engine, fe).Eval(context.Background(), q, now, vars)
	if err != nil || dr.Value != er.Value {
		t.Fatalf("direct %+v, engine %+v (%v)", dr, er, err)
	}
	// Both charged the same samples and gave their slot back.
	if fd.tenants["n0"].samples != fe.tenants["n0"].samples || fd.tenants["n0"].running != 0 || fd.free != 2 {
		t.Errorf("direct left budget %v, running %d, free %d; engine left budget %v",
			fd.tenants["n0"].samples, fd.tenants["n0"].running, fd.free, fe.tenants["n0"].samples)
	}

	// The namespace's one slot is taken: the direct path declines.
	release, err := fd.Acquire(context.Background(), "n0")
	if err != nil {
		t.Fatal(err)
	}
	if _, how := FairSource(direct, fd).(fairSource).EvalDirect(context.Background(), q, now, vars); how != DirectNotTaken {
		t.Errorf("with the namespace's slot taken the direct path answered %v, want DirectNotTaken (nothing read)", how)
	}
	release(Cost{Samples: 2_000_000})
	// The budget is spent: it declines, and Eval says the query is throttled.
	if _, how := FairSource(direct, fd).(fairSource).EvalDirect(context.Background(), q, now, vars); how != DirectNotTaken {
		t.Errorf("over the namespace's budget the direct path answered %v, want DirectNotTaken (nothing read)", how)
	}
	if _, err := FairSource(direct, fd).Eval(context.Background(), q, now, vars); !errors.Is(err, ErrThrottled) {
		t.Errorf("Eval over the budget: %v, want ErrThrottled", err)
	}
}

// TestDirectPathConcurrent evaluates from many goroutines at once (run
// with -race): the plans, the scratch pool and the store are shared.
func TestDirectPathConcurrent(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s := NewStore(Options{Now: func() time.Time { return now }})
	fillRandom(t, s, rand.New(rand.NewPCG(7, 8)), now.Add(-30*time.Minute), now)
	direct, engine := directPair(s, now)
	queries := directQueries()
	want := make([]Result, len(queries))
	for i, q := range queries {
		want[i], _ = engine.Eval(context.Background(), q, now, TriggerVars("n1", "j1", "K", "k"))
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range queries {
				i = (i + g*31) % len(queries)
				got, err := direct.Eval(context.Background(), queries[i], now, TriggerVars("n1", "j1", "K", "k"))
				if err != nil || got.Kind != want[i].Kind || got.Value != want[i].Value && !(math.IsNaN(got.Value) && math.IsNaN(want[i].Value)) {
					errs <- fmt.Errorf("%s: got %+v (%v), want %+v", queries[i], got, err, want[i])
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestFairDirectPathChargesTheSamplesItLoadedBeforeDeclining: a query the
// direct path starts and leaves to the engine near Limits.MaxSamples has
// still loaded its samples; under a Fair the namespace is charged for
// them, so a tenant cannot make every evaluation cost more than its
// budget shows.
func TestFairDirectPathChargesTheSamplesItLoadedBeforeDeclining(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s := NewStore(Options{Now: func() time.Time { return now }})
	for i := range 4 {
		lset := labels.FromStrings("__name__", "m_total", "namespace", "n0", "job", "j0", "i", strconv.Itoa(i))
		for j := 119; j >= 0; j-- {
			_ = s.Append(lset, now.Add(-time.Duration(j)*time.Second).UnixMilli(), float64(120-j))
		}
	}
	ev := NewEvaluator(s, EvaluatorOptions{Now: func() time.Time { return now }, Limits: Limits{MaxSamples: 400}})
	f, err := NewFair(FairOptions{Slots: 2, SlotsPerNamespace: 1, SamplesPerMinute: 1_000_000, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	q := `sum(rate(m_total{namespace="${namespace}",job="${name}"}[2m]))`
	vars := TriggerVars("n0", "j0", "Kind", "kinds")
	if _, how := FairSource(ev, f).(fairSource).EvalDirect(context.Background(), q, now, vars); how == DirectAnswered {
		t.Fatal("the direct path answered a query over half of MaxSamples")
	}
	spent := 0.0
	if tn := f.tenants["n0"]; tn != nil {
		spent = 1_000_000 - tn.samples
	}
	if spent < 200 {
		t.Errorf("the namespace was charged %v samples for a direct evaluation that loaded more than 200", spent)
	}
}

// TestDirectPathDeclinedAfterLoadingLoadsOnce: a query the direct path
// reads and then leaves to the engine (here: over half of MaxSamples) is
// loaded once by the direct path and once by the engine, not a second
// time by Eval's own direct attempt; its namespace is charged exactly
// those two loads.
func TestDirectPathDeclinedAfterLoadingLoadsOnce(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s := NewStore(Options{Now: func() time.Time { return now }})
	for i := range 4 {
		lset := labels.FromStrings("__name__", "m_total", "namespace", "n0", "job", "j0", "i", strconv.Itoa(i))
		for j := 119; j >= 0; j-- {
			_ = s.Append(lset, now.Add(-time.Duration(j)*time.Second).UnixMilli(), float64(120-j))
		}
	}
	clock := func() time.Time { return now }
	limits := Limits{MaxSamples: 800}
	ev := NewEvaluator(s, EvaluatorOptions{Now: clock, Limits: limits})
	engine := NewEvaluator(s, EvaluatorOptions{Now: clock, Limits: limits, EngineOnly: true})
	newFair := func() *Fair {
		f, err := NewFair(FairOptions{Slots: 2, SlotsPerNamespace: 1, SamplesPerMinute: 1_000_000, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	charged := func(f *Fair) float64 { return 1_000_000 - f.tenantLocked("n0", now).samples }
	q := `sum(rate(m_total{namespace="${namespace}",job="${name}"}[2m]))`
	vars := TriggerVars("n0", "j0", "Kind", "kinds")

	fe := newFair()
	want, err := FairSource(engine, fe).Eval(context.Background(), q, now, vars)
	if err != nil {
		t.Fatal(err)
	}
	load := charged(fe)

	f := newFair()
	src := FairSource(ev, f)
	_, how := src.(fairSource).EvalDirect(context.Background(), q, now, vars)
	if how != DirectDeclined {
		t.Fatalf("EvalDirect of a query over half of MaxSamples answered %v, want DirectDeclined", how)
	}
	if got := charged(f); got != load {
		t.Fatalf("the declined direct attempt charged %v samples, want the %v it loaded", got, load)
	}
	got, err := src.Eval(DirectDeclinedContext(context.Background()), q, now, vars)
	if err != nil || got.Value != want.Value {
		t.Fatalf("Eval after the decline: %+v (%v), want the engine's %+v", got, err, want)
	}
	if got := charged(f); got != 2*load {
		t.Errorf("the namespace was charged %v samples for the declined query, want %v: one load by the direct path, one by the engine", got, 2*load)
	}
}

// cancelAfterFirstCheck is a context whose first Err is nil and every
// later one context.Canceled: it ends while an evaluation runs.
type cancelAfterFirstCheck struct {
	context.Context
	checks int
}

func (c *cancelAfterFirstCheck) Err() error {
	if c.checks++; c.checks > 1 {
		return context.Canceled
	}
	return nil
}

// TestDirectPathStopsWhenItsContextEnds: a selector matching many series
// does not keep the direct path reading them after the caller's context
// ended (a timeout, a lost lease); it declines, and Eval's engine reports
// the context's error.
func TestDirectPathStopsWhenItsContextEnds(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s := NewStore(Options{Now: func() time.Time { return now }})
	for i := range 5000 {
		_ = s.Append(labels.FromStrings("__name__", "m", "namespace", "n0", "job", "j0", "i", strconv.Itoa(i)), now.Add(-time.Second).UnixMilli(), 1)
	}
	ev, _ := directPair(s, now)
	q := `sum(m{namespace="${namespace}",job="${name}"})`
	vars := TriggerVars("n0", "j0", "Kind", "kinds")
	if r, how := ev.EvalDirect(context.Background(), q, now, vars); how != DirectAnswered || r.Value != 5000 {
		t.Fatalf("with a live context: %+v %v", r, how)
	}
	if r, how := ev.EvalDirect(&cancelAfterFirstCheck{Context: context.Background()}, q, now, vars); how == DirectAnswered {
		t.Errorf("the direct path read every series after its context ended: %+v", r)
	}
}
