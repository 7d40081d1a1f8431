package scaling

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeSource answers queries from a map; unknown queries have no data.
type fakeSource struct {
	values map[string]float64
	err    error
	seen   []string
	vars   map[string]string
}

func (f *fakeSource) Eval(_ context.Context, query string, _ time.Time, vars map[string]string) (float64, bool, error) {
	f.seen = append(f.seen, query)
	f.vars = vars
	if f.err != nil {
		return 0, false, f.err
	}
	v, ok := f.values[query]
	return v, ok, nil
}

// testSources are cron and a query source over src, registered as
// "test-query" and as the default "promql".
func testSources(t *testing.T, src MetricSource) *Sources {
	t.Helper()
	s := NewSources()
	for name, source := range map[string]Source{
		SourceCron:   CronSource(),
		SourcePromQL: {New: QueryScaler(src)},
		"test-query": {New: QueryScaler(src)},
	} {
		if err := s.Register(name, source); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestQueryScaler(t *testing.T) {
	const query = `sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[1m]))`
	src := &fakeSource{values: map[string]float64{query: 42}}
	sources := testSources(t, src)
	ctx := context.Background()
	threshold := 3.0
	trigger := Trigger{Name: "rps", Type: TargetAverageValue, Source: "test-query", Threshold: 20, ActivationThreshold: &threshold, Query: query}
	s, err := sources.NewScaler(ctx, ScalerConfig{Trigger: trigger, Namespace: "shop", Name: "cart", Vars: map[string]string{"kind": "Function", "name": "ignored"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(ctx); err != nil {
			t.Errorf("close scaler: %v", err)
		}
	})
	got, err := s.Sample(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Sample{Value: 42, OK: true}, got); diff != "" {
		t.Errorf("Sample (-want +got):\n%s", diff)
	}
	// The source gets the query as written and the values to fill in:
	// escaping them is its business.
	if diff := cmp.Diff(map[string]string{"namespace": "shop", "name": "cart", "kind": "Function"}, src.vars); diff != "" {
		t.Errorf("placeholder values (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ScalerMetric{Name: "rps", Type: TargetAverageValue, Threshold: 20, ActivationThreshold: 3}, s.Metric()); diff != "" {
		t.Errorf("Metric (-want +got):\n%s", diff)
	}

	// No data is not zero.
	empty, err := sources.NewScaler(ctx, ScalerConfig{Trigger: Trigger{Name: "x", Source: "test-query", Query: "absent"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = empty.Sample(ctx, t0)
	if diff := cmp.Diff(Sample{}, got); diff != "" || err != nil {
		t.Errorf("Sample without data (-want +got):\n%s (err %v)", diff, err)
	}

	src.err = errors.New("boom")
	if _, err := s.Sample(ctx, t0); err == nil || !errors.Is(err, src.err) {
		t.Errorf("Sample error = %v, want it to wrap %v", err, src.err)
	}
	if _, err := sources.NewScaler(ctx, ScalerConfig{Trigger: Trigger{Name: "x", Source: "test-query"}}); err == nil {
		t.Error("NewScaler accepted an empty query")
	}
}

func TestSources(t *testing.T) {
	ctx := context.Background()
	s := testSources(t, &fakeSource{values: map[string]float64{"up": 1}})
	if _, err := s.NewScaler(ctx, ScalerConfig{Trigger: Trigger{Name: "x", Source: "nope"}}); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("unknown source: err = %v, want ErrUnknownSource", err)
	}
	// An empty source means the default, promql.
	sc, err := s.NewScaler(ctx, ScalerConfig{Trigger: Trigger{Name: "x", Query: "up"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := sc.Sample(ctx, t0); got != (Sample{Value: 1, OK: true}) {
		t.Errorf("empty source sampled %+v, want the promql scaler's {1 true}", got)
	}
	if diff := cmp.Diff([]string{SourceCron, SourcePromQL, "test-query"}, s.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	s.SetDefault(SourceCron)
	if _, ok := s.Lookup(""); !ok || s.Default() != SourceCron {
		t.Errorf("after SetDefault(cron): Default() = %q", s.Default())
	}
	// Registering is an error, not a panic, for what cannot work.
	var errs []string
	for _, bad := range []struct {
		name string
		src  Source
	}{{"", CronSource()}, {"nil-constructor", Source{}}} {
		if err := s.Register(bad.name, bad.src); err != nil {
			errs = append(errs, err.Error())
		}
	}
	want := []string{"register trigger source: the name is empty", `register trigger source "nil-constructor": the constructor is nil`}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("Register errors (-want +got):\n%s", diff)
	}
	// A nil registry is usable and empty.
	var none *Sources
	if _, ok := none.Lookup(""); ok || none.Names() != nil || none.Default() != "" {
		t.Error("a nil Sources is not empty")
	}
}

// TestSourcesNotShared: two registries (two managers in one process) do not
// see each other's sources.
func TestSourcesNotShared(t *testing.T) {
	a, b := NewSources(), NewSources()
	if err := a.Register("only-in-a", CronSource()); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Lookup("only-in-a"); ok {
		t.Error("a source registered in one Sources is visible in another")
	}
}

func TestCronScaler(t *testing.T) {
	ctx := context.Background()
	cron := func(md map[string]string) Trigger {
		return Trigger{Name: "office", Type: TargetAverageValue, Source: SourceCron, Threshold: 2, Metadata: md}
	}
	office := cron(map[string]string{"start": "08:00", "end": "18:00", "timezone": "Europe/Paris", "days": "Mon-Fri", "desiredReplicas": "3"})
	night := cron(map[string]string{"start": "22:00", "end": "06:00", "days": "Fri"})
	tests := []struct {
		name    string
		trigger Trigger
		now     string
		want    Sample
	}{
		// 2026-06-10 is a Wednesday; Paris is UTC+2 in June.
		{"inside the window: asks for desiredReplicas", office, "2026-06-10T06:00:00Z", Sample{Value: 6, OK: true, Active: true}},
		{"before the window", office, "2026-06-10T05:59:00Z", Sample{OK: true}},
		{"end is exclusive", office, "2026-06-10T16:00:00Z", Sample{OK: true}},
		{"weekend", office, "2026-06-13T09:00:00Z", Sample{OK: true}},
		{"winter: 08:00 CET is 07:00 UTC", office, "2026-01-14T06:30:00Z", Sample{OK: true}},
		{"winter: inside", office, "2026-01-14T07:00:00Z", Sample{Value: 6, OK: true, Active: true}},
		{"across midnight: Friday evening", night, "2026-06-12T23:00:00Z", Sample{Value: 2, OK: true, Active: true}},
		{"across midnight: Saturday morning belongs to Friday", night, "2026-06-13T05:59:00Z", Sample{Value: 2, OK: true, Active: true}},
		{"across midnight: Saturday evening is not Friday", night, "2026-06-13T23:00:00Z", Sample{OK: true}},
		{"across midnight: Friday morning belongs to Thursday", night, "2026-06-12T03:00:00Z", Sample{OK: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := testSources(t, nil).NewScaler(ctx, ScalerConfig{Trigger: tc.trigger})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Sample(ctx, mustTime(t, tc.now))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Sample (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCronScalerDecide: inside its window a cron trigger asks for exactly
// desiredReplicas, whatever the threshold, and wakes a workload at zero.
func TestCronScalerDecide(t *testing.T) {
	ctx := context.Background()
	cfg := mkConfig(0, 10).Idle(1, 300).Obj()
	cfg.Triggers = []Trigger{{Name: "office", Type: TargetAverageValue, Source: SourceCron, Threshold: 7,
		Metadata: map[string]string{"start": "08:00", "end": "18:00", "desiredReplicas": "4"}}}
	s, err := testSources(t, nil).NewScaler(ctx, ScalerConfig{Trigger: cfg.Triggers[0]})
	if err != nil {
		t.Fatal(err)
	}
	h := &History{}
	var got []int32
	cur := int32(0)
	for _, now := range []string{"2026-06-10T07:59:00Z", "2026-06-10T08:00:00Z", "2026-06-10T08:00:15Z"} {
		tm := mustTime(t, now)
		sample, err := s.Sample(ctx, tm)
		d := Decide(DecideInput{Now: tm, Current: cur, Config: cfg, Triggers: []TriggerResult{{Name: "office", Sample: sample, Err: err}}}, h)
		h.RecordScale(cfg, d)
		cur = d.Desired
		got = append(got, cur)
	}
	if diff := cmp.Diff([]int32{0, 1, 4}, got); diff != "" {
		t.Errorf("replicas per tick (-want +got):\n%s", diff)
	}
}

func TestCronScalerErrors(t *testing.T) {
	tests := []struct {
		name string
		typ  TargetType
		md   map[string]string
	}{
		{"Value type", TargetValue, map[string]string{"start": "08:00", "end": "09:00"}},
		{"missing start", TargetAverageValue, map[string]string{"end": "09:00"}},
		{"bad end", TargetAverageValue, map[string]string{"start": "08:00", "end": "9am"}},
		{"empty window", TargetAverageValue, map[string]string{"start": "08:00", "end": "08:00"}},
		{"bad zone", TargetAverageValue, map[string]string{"start": "08:00", "end": "09:00", "timezone": "Nowhere/City"}},
		{"bad day", TargetAverageValue, map[string]string{"start": "08:00", "end": "09:00", "days": "Mon-Fry"}},
		{"negative replicas", TargetAverageValue, map[string]string{"start": "08:00", "end": "09:00", "desiredReplicas": "-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testSources(t, nil).NewScaler(context.Background(), ScalerConfig{Trigger: Trigger{Name: "c", Type: tc.typ, Source: SourceCron, Threshold: 1, Metadata: tc.md}})
			if err == nil {
				t.Error("NewScaler accepted an invalid cron trigger")
			}
		})
	}
}

func TestParseWeekdays(t *testing.T) {
	tests := []struct {
		in   string
		want [7]bool // Sun..Sat
	}{
		{"", [7]bool{true, true, true, true, true, true, true}},
		{"Mon-Fri", [7]bool{false, true, true, true, true, true, false}},
		{"sat, SUN", [7]bool{true, false, false, false, false, false, true}},
		{"Fri-Mon", [7]bool{true, true, false, false, false, true, true}},
		{"Mon,Wed-Thu", [7]bool{false, true, false, true, true, false, false}},
	}
	for _, tc := range tests {
		got, err := parseWeekdays(tc.in)
		if err != nil {
			t.Errorf("parseWeekdays(%q): %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("parseWeekdays(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
