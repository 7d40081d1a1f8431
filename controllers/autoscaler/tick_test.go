package autoscaler

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/workers"
	"github.com/scaleplane/scaleplane/internal/benchcmp"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// fillStore writes, for each workload name, one pod's http_requests_total
// counter growing by rps per second and a queue_depth gauge, every 5 s for
// the two minutes before now.
func fillStore(t testing.TB, s *promql.Store, ns string, names []string, rps, queue float64, now time.Time) {
	t.Helper()
	for _, name := range names {
		counter := labels.FromStrings("__name__", "http_requests_total", "namespace", ns, "job", name, "pod", name+"-0")
		gauge := labels.FromStrings("__name__", "queue_depth", "namespace", ns, "job", name, "pod", name+"-0")
		for i := 24; i >= 0; i-- {
			at := now.Add(-time.Duration(i) * 5 * time.Second)
			if err := s.Append(counter, at.UnixMilli(), float64(24-i)*5*rps); err != nil {
				t.Fatalf("append: %v", err)
			}
			if err := s.Append(gauge, at.UnixMilli(), queue); err != nil {
				t.Fatalf("append: %v", err)
			}
		}
	}
}

// newStoreAutoscaler is an autoscaler whose "promql" triggers read a store
// filled by the test, with the clock at now.
func newStoreAutoscaler(t testing.TB, now time.Time) (*Autoscaler, *promql.Store) {
	t.Helper()
	return newStoreAutoscalerWith(t, now, promql.Options{})
}

// newStoreAutoscalerWith is newStoreAutoscaler with the store's options
// (its clock is set to now).
func newStoreAutoscalerWith(t testing.TB, now time.Time, opts promql.Options) (*Autoscaler, *promql.Store) {
	t.Helper()
	opts.Now = func() time.Time { return now }
	store := promql.NewStore(opts)
	sources := testSources(t, promql.NewEvaluator(store, promql.EvaluatorOptions{Now: func() time.Time { return now }}))
	a, err := New(Options{Views: sampleViews(t), Sources: sources, Now: func() time.Time { return now }, RequestQueries: store.Registry().SetOwner})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return a, store
}

func TestDecideSamplesTheStore(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a, store := newStoreAutoscaler(t, now)
	fillStore(t, store, "shop", []string{"cart"}, 10, 7, now)
	k := a.byResource["rackedclusters"]

	type outcome struct {
		Desired  int32
		Action   scaling.ScaleAction
		Reason   string
		Problems string
	}
	cases := []struct {
		name string
		cfg  *scaling.Config
		cur  int32
		want outcome
	}{
		{"rate over the scraped counter", cfg(1, 10).trigger("rps", 4).obj(), 2,
			outcome{3, scaling.ActionScaleUp, "Scale up from 2 to 3: rps=10 over 2 replicas is 5 per replica, above the target 4: asks for ceil(10 / 4) = 3", ""}},
		{"the highest of two triggers", cfg(1, 10).trigger("rps", 4).trigger("queue", 1).query(`max(queue_depth{namespace="${namespace}",job="${name}"})`).obj(), 2,
			outcome{4, scaling.ActionScaleUp, "Scale up from 2 to 4: queue=7 over 2 replicas is 3.5 per replica, above the target 1: asks for ceil(7 / 1) = 7 (the highest of 2 triggers); limited to 4 by the scale-up limit without a behavior (max(2 × 2, 4) = 4)", ""}},
		{"no data keeps the count", cfg(1, 10).trigger("rps", 4).query(`sum(rate(missing_total{job="${name}"}[1m]))`).obj(), 2,
			outcome{2, scaling.ActionNone, "Keep 2: no trigger has usable data (rps: no data)", "invalid triggers keep the count: rps: no data"}},
		{"a broken query is reported", cfg(1, 10).trigger("rps", 4).query(`sum(rate(`).obj(), 2,
			outcome{2, scaling.ActionNone, "", "invalid"}},
		{"unknown source", &scaling.Config{MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(3)), Triggers: []scaling.Trigger{{Name: "x", Type: scaling.TargetValue, Threshold: 1, Source: "nope"}}}, 2,
			outcome{2, scaling.ActionNone, "", "invalid"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newWorkload(types.NamespacedName{Namespace: "shop", Name: "cart"}, 0)
			if i == 0 {
				// The store starts keeping a trigger's names when its scaler is
				// built, before any scrape.
				if store.Registry().Has("http_requests_total") {
					t.Fatal("the name was requested before any trigger")
				}
			}
			d := k.decide(context.Background(), nil, st, scaling.Workload{Replicas: ptr(tc.cur), Config: tc.cfg}, now, time.Time{})
			got := outcome{d.Desired, d.Action, d.Reason, triggerProblems(d)}
			if tc.want.Problems == "invalid" {
				// The message is the PromQL parser's or the registry's; only
				// its presence is ours.
				if got.Problems == "" {
					t.Errorf("no problem reported for %+v", d.Triggers)
				}
				got.Problems, got.Reason = "invalid", ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			// The registry holds the names the workload's live triggers read.
			if i == 1 && (!store.Registry().Has("http_requests_total") || !store.Registry().Has("queue_depth")) {
				t.Errorf("trigger names not requested from the store: %v", store.Registry().Names())
			}
		})
	}
}

func TestScalersRebuiltOnlyWhenTriggersChange(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	built := 0
	a, _ := newStoreAutoscaler(t, now)
	if err := a.opts.Sources.Register("counting", scaling.Source{New: func(context.Context, scaling.ScalerConfig) (scaling.Scaler, error) {
		built++
		return constScaler{}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	k := a.byResource["rackedclusters"]
	st := newWorkload(types.NamespacedName{Namespace: "shop", Name: "cart"}, 0)
	c := &scaling.Config{MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(5)),
		Triggers: []scaling.Trigger{{Name: "c", Type: scaling.TargetAverageValue, Threshold: 1, Source: "counting"}}}
	var got []int
	for _, change := range []func(){nil, nil, func() { c.MaxReplicas = ptr(int32(6)) }, func() { c.Triggers[0].Threshold = 2 }, nil} {
		if change != nil {
			change()
		}
		k.ensureScalers(context.Background(), st, c)
		got = append(got, built)
	}
	if diff := cmp.Diff([]int{1, 1, 1, 2, 2}, got); diff != "" {
		t.Errorf("scalers built after each tick (-want +got):\n%s", diff)
	}
}

type constScaler struct{}

func (constScaler) Metric() scaling.ScalerMetric { return scaling.ScalerMetric{} }
func (constScaler) Sample(context.Context, time.Time) (scaling.Sample, error) {
	return scaling.Sample{Value: 1, OK: true}, nil
}
func (constScaler) Close(context.Context) error { return nil }

func TestScrapeWorkloads(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a, _ := newStoreAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	add := func(name string, state State, c *scaling.Config) {
		st := k.get(types.NamespacedName{Namespace: "shop", Name: name})
		k.ensureScalers(context.Background(), st, c)
		st.publish(state, "", 0, nil)
	}
	add("scraped", StateAutoscaling, cfg(1, 5).trigger("rps", 1).obj())
	add("paused", StatePaused, cfg(1, 5).trigger("rps", 1).obj())
	add("idle-only", StateAutoscaling, cfg(0, 5).idle(1, 60).obj())

	type target struct {
		Namespace, Selector string
		Labels              map[string]string
	}
	var got []target
	for _, w := range a.ScrapeWorkloads() {
		got = append(got, target{w.Namespace, w.Selector.String(), w.Labels})
	}
	// Every rack's pods: the group label of the /scale selector is left out.
	want := []target{{"shop", k8slabels.SelectorFromSet(k8slabels.Set{"samples.scaleplane.io/cluster": "scraped"}).String(),
		map[string]string{"job": "scraped", "workload": "scraped", "workload_kind": "RackedCluster"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scrape workloads (-want +got):\n%s", diff)
	}
}

// BenchmarkTick10000 is one tick of 10,000 autoscaled workloads with two
// triggers each (a rate over a counter and a gauge), sampled from the
// embedded store holding two minutes of data for every one of them, and
// decided with a warm History: everything a tick costs but the /scale
// writes.
func BenchmarkTick10000(b *testing.B) { benchmarkTick(b, 10_000, false) }

// BenchmarkTick1000 is the same with a tenth of the workloads, to show how
// a tick's cost grows with their number.
func BenchmarkTick1000(b *testing.B) { benchmarkTick(b, 1_000, false) }

// BenchmarkTick1000Fair is BenchmarkTick1000 with every evaluation taking
// a slot of its namespace's fair share, as the binary runs them: the
// difference is the fair scheduler's cost per evaluation.
func BenchmarkTick1000Fair(b *testing.B) { benchmarkTick(b, 1_000, true) }

// BenchmarkTick100000 is BenchmarkTick10000 with ten times the workloads:
// the size one replica is meant to tick within its polling interval.
// `make bench` runs it with -cpu 1.
func BenchmarkTick100000(b *testing.B) { benchmarkTick(b, 100_000, false) }

// BenchmarkTick100000Engine is BenchmarkTick100000 with every query
// evaluated by Prometheus' engine (promql.EvaluatorOptions.EngineOnly):
// what triggers outside the store's direct path cost at this size.
func BenchmarkTick100000Engine(b *testing.B) { benchmarkTickWith(b, 100_000, false, true) }

func benchmarkTick(b *testing.B, n int, fair bool) { benchmarkTickWith(b, n, fair, false) }

func benchmarkTickWith(b *testing.B, n int, fair, engineOnly bool) {
	runPerWorkload(b, n, newTickBenchWith(b, n, fair, engineOnly))
}

// runPerWorkload runs tick, one round over n workloads, b.N times and
// reports its wall time, CPU time and allocations per workload.
func runPerWorkload(b *testing.B, n int, tick func()) {
	var before, after runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	runtime.ReadMemStats(&before)
	cpu := processCPU()
	for range b.N {
		tick()
	}
	cpu = processCPU() - cpu
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/workload")
	// CPU time varies less than wall time on a machine shared with other
	// work; it includes the garbage collector's.
	b.ReportMetric(float64(cpu)/float64(b.N*n), "cpu-ns/workload")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*n), "allocs/workload")
}

// newTickBench fills a store with two minutes of samples for n workloads
// with the two triggers BenchmarkTick10000 describes, builds their
// scalers and warms their History, and returns one tick over all of them.
func newTickBench(tb testing.TB, n int, fair bool) func() {
	return newTickBenchWith(tb, n, fair, false)
}

// newTickBenchWith is newTickBench, with every query sent to the engine
// when engineOnly is set (promql.EvaluatorOptions.EngineOnly).
func newTickBenchWith(tb testing.TB, n int, fair, engineOnly bool) func() {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	// The store's default limits hold 100,000 series; the benchmark
	// keeps two per workload.
	a, store := newStoreAutoscalerWith(tb, now, promql.Options{MaxSeries: -1, MaxBytes: -1})
	if engineOnly {
		a.opts.Sources = testSources(tb, promql.NewEvaluator(store, promql.EvaluatorOptions{Now: func() time.Time { return now }, EngineOnly: true}))
	}
	if fair {
		f, err := promql.NewFair(promql.FairOptions{SamplesPerMinute: -1, EvalTimePerMinute: -1})
		if err != nil {
			tb.Fatal(err)
		}
		a.opts.Sources = testSources(tb, promql.FairSource(promql.NewEvaluator(store, promql.EvaluatorOptions{Now: func() time.Time { return now }}), f))
	}
	// 10,000 workloads per namespace: 20,000 series, under the store's
	// default series limit per namespace.
	const perNamespace = 10_000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("w%06d", i)
	}
	for from := 0; from < n; from += perNamespace {
		fillStore(tb, store, fmt.Sprintf("bench%d", from/perNamespace), names[from:min(from+perNamespace, n)], 10, 3, now)
	}
	k := a.byResource["rackedclusters"]
	c := cfg(1, 20).trigger("rps", 4).trigger("queue", 1).query(`max(queue_depth{namespace="${namespace}",job="${name}"})`).obj()
	states := make([]*workload, n)
	w := scaling.Workload{Replicas: ptr(int32(3)), Config: c}
	ctx := context.Background()
	for i, name := range names {
		states[i] = k.get(types.NamespacedName{Namespace: fmt.Sprintf("bench%d", i/perNamespace), Name: name})
		k.decide(ctx, nil, states[i], w, now, time.Time{}) // builds scalers, warms the History
	}
	return func() {
		for _, st := range states {
			d := k.decide(ctx, nil, st, w, now, time.Time{})
			if d.Triggers[0].Value != 10 || d.Triggers[1].Value != 3 {
				tb.Fatalf("unexpected samples: %+v", d.Triggers)
			}
		}
	}
}

// TestTickAllocationsWithinBaseline holds a tick's allocations per
// workload to the stored baseline of BenchmarkTick1000
// (hack/bench/baseline.txt, refreshed by `make bench-baseline`), within
// benchcmp.DefaultOptions' margin. Allocation counts do not depend on the
// machine, so this runs in `make test`; time does, and only `make bench`
// compares it.
func TestTickAllocationsWithinBaseline(t *testing.T) {
	if raceDetector() {
		t.Skip("the race detector makes sync.Pool drop entries (fmt's among them), so allocation counts are not the baseline's")
	}
	base, err := benchcmp.ParseFile("../../hack/bench/baseline.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, ok := base["BenchmarkTick1000"]
	if !ok || b.Metrics["allocs/op"] == 0 {
		t.Fatalf("hack/bench/baseline.txt holds no allocs/op for BenchmarkTick1000")
	}
	const n = 200
	tick := newTickBench(t, n, false)
	got := testing.AllocsPerRun(3, tick) / n
	want := b.Metrics["allocs/op"] / 1000
	t.Logf("allocations per workload: %.1f (baseline %.1f)", got, want)
	if limit := want * benchcmp.DefaultOptions.MaxAllocRatio; got > limit {
		t.Errorf("a tick allocates %.1f times per workload, over %.1f (%.2f × the baseline's %.1f): find the new allocations with -memprofile, or refresh the baseline with `make bench-baseline` and say why",
			got, limit, benchcmp.DefaultOptions.MaxAllocRatio, want)
	}
}

// TestSamplesRunOnReusedGoroutines: a trigger's sample runs on a goroutine
// left by an earlier one (see workers.RunDetached), not on a new goroutine whose
// stack the query engine must grow again.
func TestSamplesRunOnReusedGoroutines(t *testing.T) {
	tick := newTickBenchWith(t, 50, false, true)
	before := workers.DetachedStarted()
	tick()
	if started := workers.DetachedStarted() - before; started > 2 {
		t.Errorf("100 samples taken one after the other started %d goroutines, want at most 2", started)
	}
}

// TestDirectSamplesTakenInline: samples the store's direct path answers
// (scaling.DirectSampler) are taken on the tick's goroutine, with the same
// values the engine gives (newTickBench checks them): no goroutine, no
// timeout of their own.
func TestDirectSamplesTakenInline(t *testing.T) {
	tick := newTickBench(t, 50, false)
	before := workers.DetachedStarted()
	allocs := testing.AllocsPerRun(2, tick)
	if started := workers.DetachedStarted() - before; started != 0 {
		t.Errorf("100 samples the direct path answers started %d goroutines, want none", started)
	}
	// The engine's path allocates over a hundred times per sample.
	if allocs/50 > 20 {
		t.Errorf("a tick allocates %.1f times per workload, want at most 20: the samples did not take the direct path", allocs/50)
	}
}

// TestDirectSampleDeclinedAfterLoadingGoesStraightToTheEngine: a sample
// the store's direct path reads and then leaves to the engine (here: over
// half of the evaluator's MaxSamples) is loaded once by the direct path
// and once by the engine, not once more by the engine's caller trying the
// direct path again; the fair scheduler charges the namespace those two
// loads.
func TestDirectSampleDeclinedAfterLoadingGoesStraightToTheEngine(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a, store := newStoreAutoscaler(t, now)
	fillStore(t, store, "shop", []string{"cart"}, 10, 7, now)
	k := a.byResource["rackedclusters"]
	w := scaling.Workload{Replicas: ptr(int32(3)), Config: cfg(1, 20).trigger("rps", 4).obj()}
	// charged is what one decide charges "shop" under a fresh Fair over
	// an evaluator with opts.
	charged := func(opts promql.EvaluatorOptions) float64 {
		t.Helper()
		reg := prometheus.NewRegistry()
		f, err := promql.NewFair(promql.FairOptions{SamplesPerMinute: -1, EvalTimePerMinute: -1, Registerer: reg, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		opts.Now, opts.Limits = clock, promql.Limits{MaxSamples: 20}
		a.opts.Sources = testSources(t, promql.FairSource(promql.NewEvaluator(store, opts), f))
		st := newWorkload(types.NamespacedName{Namespace: "shop", Name: "cart"}, 0)
		if d := k.decide(context.Background(), nil, st, w, now, time.Time{}); d.Triggers[0].Value != 10 {
			t.Fatalf("sample: %+v", d.Triggers[0])
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range families {
			if mf.GetName() == promql.MetricEvaluationSamples {
				for _, m := range mf.GetMetric() {
					if m.GetLabel()[0].GetValue() == "shop" {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		t.Fatalf("no %s for shop", promql.MetricEvaluationSamples)
		return 0
	}
	load := charged(promql.EvaluatorOptions{EngineOnly: true})
	if got := charged(promql.EvaluatorOptions{}); got != 2*load {
		t.Errorf("a sample the direct path declined charged %v samples, want %v: one load by the direct path, one by the engine (one load is %v)", got, 2*load, load)
	}
}

// blockingScaler reads nothing until its context ends, like a remote
// server that never answers.
type blockingScaler struct{}

func (blockingScaler) Metric() scaling.ScalerMetric { return scaling.ScalerMetric{} }
func (blockingScaler) Sample(ctx context.Context, _ time.Time) (scaling.Sample, error) {
	<-ctx.Done()
	return scaling.Sample{}, ctx.Err()
}
func (blockingScaler) Close(context.Context) error { return nil }

// TestV10TickTimeout: the triggers of one workload share one budget per
// tick. With three triggers that never answer and a per-sample timeout of
// an hour, the tick ends when the budget is spent: the first trigger fails
// with the deadline, the others are not read, and the count is kept.
func TestV10TickTimeout(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a, err := New(Options{Views: sampleViews(t), Sources: testSources(t, nil), Now: func() time.Time { return now }, SampleTimeout: time.Hour, TickTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	k := a.byResource["rackedclusters"]
	c := &scaling.Config{MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(5))}
	for _, name := range []string{"a", "b", "c"} {
		c.Triggers = append(c.Triggers, scaling.Trigger{Name: name, Type: scaling.TargetAverageValue, Threshold: 1, Source: "blocking"})
	}
	st := newWorkload(types.NamespacedName{Namespace: "shop", Name: "cart"}, 0)
	d := k.decide(context.Background(), nil, st, scaling.Workload{Replicas: ptr(int32(2)), Config: c}, now, time.Time{})
	var got []string
	for _, tr := range d.Triggers {
		got = append(got, tr.Problem)
	}
	notRead := "not read: the tick's 10ms for all triggers was spent on the triggers before it; make them faster or raise autoscaler.queries.tickTimeoutSeconds"
	spent := "no answer before the tick's 10ms for all triggers ran out (autoscaler.queries.tickTimeoutSeconds): stopped waiting: context deadline exceeded"
	// The scaler itself may see the deadline before the wait gives up on
	// it (both race on one timer): the same problem, without the wait's
	// words.
	if len(got) > 0 && got[0] == strings.Replace(spent, "stopped waiting: ", "", 1) {
		got[0] = spent
	}
	want := []string{spent, notRead, notRead}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trigger errors (-want +got):\n%s", diff)
	}
	if d.Desired != 2 {
		t.Errorf("desired = %d, want the current 2 kept", d.Desired)
	}
}

// raceDetector reports whether the test binary was built with -race.
func raceDetector() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
