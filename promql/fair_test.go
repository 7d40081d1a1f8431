package promql

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestFairFloodLeavesOtherNamespaceItsSlots: namespace a holds its whole
// share and queues many more evaluations; b still gets a slot at once, and
// when one of a's ends, waiting b goes before a's queue.
func TestFairFloodLeavesOtherNamespaceItsSlots(t *testing.T) {
	f, err := NewFair(FairOptions{Slots: 4, SlotsPerNamespace: 2, SamplesPerMinute: -1, EvalTimePerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var held []func(Cost)
	for range 2 {
		r, err := f.Acquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	// a's flood waits in a's queue: its share is in use.
	flood, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var granted sync.Map
	for i := range 20 {
		wg.Go(func() {
			if r, err := f.Acquire(flood, "a"); err == nil {
				granted.Store(i, true)
				r(Cost{})
			}
		})
	}
	waitFor(t, func() bool { return queued(f, "a") == 20 })
	// b runs at once, twice (its share), although a waits.
	b1, err := f.Acquire(ctx, "b")
	if err != nil {
		t.Fatalf("b refused while a floods: %v", err)
	}
	b2, err := f.Acquire(ctx, "b")
	if err != nil {
		t.Fatalf("b's second evaluation refused while a floods: %v", err)
	}
	// b's third waits; a slot of b's frees and goes to b, not to a.
	done := make(chan func(Cost))
	go func() {
		r, err := f.Acquire(ctx, "b")
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	waitFor(t, func() bool { return queued(f, "b") == 1 })
	b1(Cost{})
	b3 := <-done
	if n := running(f, "a"); n != 2 {
		t.Errorf("a runs %d evaluations, want its share of 2", n)
	}
	b2(Cost{})
	b3(Cost{})
	for _, r := range held {
		r(Cost{})
	}
	wg.Wait()
	n := 0
	granted.Range(func(any, any) bool { n++; return true })
	if n != 20 {
		t.Errorf("a's queue got %d of its 20 evaluations once b was done, want all", n)
	}
}

// TestFairRoundRobinAmongWaitingNamespaces: with one slot, freed slots go
// to waiting namespaces in turn, not to the one with the longest queue.
func TestFairRoundRobinAmongWaitingNamespaces(t *testing.T) {
	f, err := NewFair(FairOptions{Slots: 1, SlotsPerNamespace: 1, SamplesPerMinute: -1, EvalTimePerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := f.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 16)
	var wg sync.WaitGroup
	enqueue := func(ns string) {
		wg.Go(func() {
			r, err := f.Acquire(ctx, ns)
			if err != nil {
				t.Error(err)
				return
			}
			order <- ns
			r(Cost{})
		})
	}
	for range 6 {
		enqueue("a")
	}
	waitFor(t, func() bool { return queued(f, "a") == 6 })
	enqueue("b")
	waitFor(t, func() bool { return queued(f, "b") == 1 })
	first(Cost{})
	wg.Wait()
	close(order)
	pos := 0
	for ns := range order {
		if ns == "b" {
			break
		}
		pos++
	}
	// a was first in the ring, so one of a's goes, then b.
	if pos > 1 {
		t.Errorf("b ran after %d of a's queued evaluations, want at most 1", pos)
	}
}

// TestFairBudgetRefusesOnlySpender: a namespace over its samples budget is
// refused with a ThrottledError, counted by reason; another namespace
// still runs; the budget refills with time.
func TestFairBudgetRefusesOnlySpender(t *testing.T) {
	now := time.Unix(1000, 0)
	reg := prometheus.NewRegistry()
	f, err := NewFair(FairOptions{SamplesPerMinute: 1000, EvalTimePerMinute: time.Second, Registerer: reg, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := f.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	r(Cost{Samples: 5000})
	_, err = f.Acquire(ctx, "a")
	var te *ThrottledError
	if !errors.As(err, &te) || te.Reason != ThrottledSamples || !errors.Is(err, ErrThrottled) {
		t.Fatalf("a over its samples budget: got %v, want a ThrottledError for samples", err)
	}
	if r, err := f.Acquire(ctx, "b"); err != nil {
		t.Fatalf("b refused for a's spending: %v", err)
	} else {
		r(Cost{Took: 2 * time.Second})
	}
	if _, err := f.Acquire(ctx, "b"); !errors.As(err, &te) || te.Reason != ThrottledTime {
		t.Fatalf("b over its time budget: got %v, want a ThrottledError for time", err)
	}
	if got := testutil.ToFloat64(f.throttled.WithLabelValues("a", ThrottledSamples)); got != 1 {
		t.Errorf("%s{namespace=a,reason=%s} = %v, want 1", MetricEvaluationsThrottled, ThrottledSamples, got)
	}
	// 5000 samples over a budget of 1000 a minute: 4 minutes and a bit.
	now = now.Add(5 * time.Minute)
	if r, err := f.Acquire(ctx, "a"); err != nil {
		t.Fatalf("a still refused once its budget refilled: %v", err)
	} else {
		r(Cost{})
	}
}

// TestFairQueueBoundRefusesAtOnce: past MaxWaitingPerNamespace an
// evaluation is refused without waiting.
func TestFairQueueBoundRefusesAtOnce(t *testing.T) {
	f, err := NewFair(FairOptions{Slots: 1, MaxWaitingPerNamespace: 2, SamplesPerMinute: -1, EvalTimePerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := f.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer r(Cost{})
	for range 2 {
		go func() { _, _ = f.Acquire(ctx, "a") }()
	}
	waitFor(t, func() bool { return queued(f, "a") == 2 })
	var te *ThrottledError
	if _, err := f.Acquire(ctx, "a"); !errors.As(err, &te) || te.Reason != ThrottledQueue {
		t.Fatalf("got %v, want a ThrottledError for a full queue", err)
	}
}

// TestFairSourceFailedEvaluationGivesSlotBack: an evaluation that fails at
// the engine's sample bound frees its slot when it returns and is charged
// at least that bound.
func TestFairSourceFailedEvaluationGivesSlotBack(t *testing.T) {
	store := NewStore(Options{Retention: -1})
	for i := range 50 {
		for ts := range int64(100) {
			if err := store.Append(labels.FromStrings("__name__", "heavy", "namespace", "a", "i", string(rune('a'+i%26))+string(rune('a'+i/26))), ts*1000, float64(ts)); err != nil {
				t.Fatal(err)
			}
		}
	}
	f, err := NewFair(FairOptions{Slots: 1, SamplesPerMinute: 1 << 40, EvalTimePerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	ev := NewEvaluator(store, EvaluatorOptions{Limits: Limits{MaxSamples: 100}})
	src := FairSource(ev, f)
	_, err = src.Eval(context.Background(), `sum(max_over_time(heavy{namespace="${namespace}"}[90s]))`, time.Unix(99, 0), map[string]string{"namespace": "a"})
	if err == nil {
		t.Fatal("evaluation over MaxSamples succeeded")
	}
	if n := running(f, "a"); n != 0 {
		t.Errorf("failed evaluation still holds %d slots", n)
	}
	if got := testutil.ToFloat64(f.samples.WithLabelValues("a")); got < 100 {
		t.Errorf("failed evaluation charged %v samples, want at least MaxSamples (100)", got)
	}
	// The one slot is free for b at once.
	r, err := f.Acquire(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	r(Cost{})
}

func queued(f *Fair, ns string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.tenants[ns]; t != nil {
		return len(t.queue)
	}
	return 0
}

func running(f *Fair, ns string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.tenants[ns]; t != nil {
		return t.running
	}
	return 0
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("condition not met within 10s: %v", err)
	}
}

// BenchmarkFairOverhead is what taking and giving back a slot costs an
// evaluation, uncontended and with 4 namespaces contending.
func BenchmarkFairOverhead(b *testing.B) {
	b.Run("uncontended", func(b *testing.B) {
		f, _ := NewFair(FairOptions{})
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			r, err := f.Acquire(ctx, "a")
			if err != nil {
				b.Fatal(err)
			}
			r(Cost{Samples: 1})
		}
	})
	b.Run("contended", func(b *testing.B) {
		f, _ := NewFair(FairOptions{Slots: 2, SamplesPerMinute: -1, EvalTimePerMinute: -1})
		ctx := context.Background()
		b.ReportAllocs()
		b.SetParallelism(4)
		nss := []string{"a", "b", "c", "d"}
		var i int
		var mu sync.Mutex
		b.RunParallel(func(pb *testing.PB) {
			mu.Lock()
			ns := nss[i%len(nss)]
			i++
			mu.Unlock()
			for pb.Next() {
				r, err := f.Acquire(ctx, ns)
				if err != nil {
					b.Fatal(err)
				}
				r(Cost{})
			}
		})
	})
}

// TestRegistryOneOffNamesExpire: a name requested one-off (a debug query)
// leaves the registry once nobody asked for it over the store's
// retention; a name an owner holds is not taken one-off, so it leaves with
// its owner.
func TestRegistryOneOffNamesExpire(t *testing.T) {
	now := time.Unix(10_000, 0)
	s := NewStore(Options{Retention: time.Minute, Now: func() time.Time { return now }})
	ev := NewEvaluator(s, EvaluatorOptions{Now: func() time.Time { return now }})
	if err := s.Registry().SetOwner("w", `sum(owned)`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`sum(owned)`, `sum(debug_only)`} {
		if _, err := ev.Eval(context.Background(), q, time.Time{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Registry().Has("debug_only") {
		t.Fatal("an evaluated query's name was not requested")
	}
	now = now.Add(2 * time.Minute)
	s.Trim()
	if s.Registry().Has("debug_only") {
		t.Error("a one-off name nobody asked for over the retention is still requested")
	}
	if err := s.Registry().SetOwner("w"); err != nil {
		t.Fatal(err)
	}
	if n := s.Registry().Len(); n != 0 {
		t.Errorf("registry holds %v after its owner left, want nothing", s.Registry().Names())
	}
}
