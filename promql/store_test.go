package promql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

func series(name string, kv ...string) labels.Labels {
	return labels.FromStrings(append([]string{"__name__", name}, kv...)...)
}

// times returns the timestamps (s since dataStart) stored for every series.
func times(t *testing.T, s *Store, mint, maxt int64) map[string][]int64 {
	t.Helper()
	q, err := s.Querier(mint, maxt)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int64{}
	set := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for set.Next() {
		it := set.At().Iterator(nil)
		var ts []int64
		for it.Next() != chunkenc.ValNone {
			ts = append(ts, (it.AtT()-dataStart.UnixMilli())/1000)
		}
		out[set.At().Labels().Get("__name__")] = ts
	}
	return out
}

func TestStoreRetention(t *testing.T) {
	now := dataStart
	s := NewStore(Options{Retention: 10 * time.Minute, Now: func() time.Time { return now }})
	// "old" stops reporting after 5 minutes; "live" runs for 20 minutes.
	for sec := 0; sec <= 1200; sec += 5 {
		ts := dataStart.Add(time.Duration(sec) * time.Second).UnixMilli()
		if err := s.Append(series("live"), ts, float64(sec)); err != nil {
			t.Fatal(err)
		}
		if sec <= 300 {
			if err := s.Append(series("old"), ts, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	now = dataStart.Add(1200 * time.Second)

	// Queries see exactly the last 10 minutes, before and after trimming.
	got := times(t, s, 0, 1<<62)
	if diff := cmp.Diff([]int64{600, 1200}, []int64{got["live"][0], got["live"][len(got["live"])-1]}); diff != "" {
		t.Errorf("visible range of live (-want +got):\n%s", diff)
	}
	if _, ok := got["old"]; ok {
		t.Errorf("old series still visible: %v", got["old"])
	}
	s.Trim()
	st := s.Stats()
	// 241 samples live in chunks of 120; the first chunk (0..595 s) is
	// entirely older than 600 s and dropped, "old" is dropped entirely.
	if diff := cmp.Diff([]int{1, 121}, []int{st.SeriesCount, st.TotalPoints}); diff != "" {
		t.Errorf("[series, points] after Trim (-want +got):\n%s", diff)
	}
}

func TestStoreMaxSeries(t *testing.T) {
	now := dataStart
	s := NewStore(Options{MaxSeries: 2, MaxSeriesPerNamespace: -1, Retention: time.Minute, Now: func() time.Time { return now }})
	ts := dataStart.UnixMilli()
	for _, name := range []string{"a", "b"} {
		if err := s.Append(series(name), ts, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(series("c"), ts, 1); !errors.Is(err, ErrSeriesLimit) {
		t.Fatalf("third series: error = %v, want ErrSeriesLimit", err)
	}
	if err := s.Append(series("a"), ts+5000, 2); err != nil {
		t.Fatalf("existing series refused: %v", err)
	}
	if got := s.Stats().RefusedSeries; got != 1 {
		t.Errorf("RefusedSeries = %d, want 1", got)
	}
	// Once "b" ages out, its slot is free again.
	now = dataStart.Add(2 * time.Minute)
	if err := s.Append(series("a"), now.UnixMilli(), 3); err != nil {
		t.Fatal(err)
	}
	s.Trim()
	if err := s.Append(series("c"), now.UnixMilli(), 1); err != nil {
		t.Errorf("series after trim: %v", err)
	}
}

func TestStoreOrdering(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	ls := series("x")
	tests := []struct {
		t       int64
		v       float64
		wantErr error
	}{
		{t: 1000, v: 1},
		{t: 2000, v: 2},
		{t: 2000, v: 2}, // same sample again: dropped quietly
		{t: 2000, v: 3, wantErr: storage.ErrDuplicateSampleForTimestamp}, // conflicting value
		{t: 1500, v: 1, wantErr: storage.ErrOutOfOrderSample},
		{t: 3000, v: 4},
	}
	for i, tc := range tests {
		if err := s.Append(ls, tc.t, tc.v); !errors.Is(err, tc.wantErr) {
			t.Errorf("append %d: error = %v, want %v", i, err, tc.wantErr)
		}
	}
	if diff := cmp.Diff(map[string][]string{`{__name__="x"}`: {"1", "2", "4"}}, dump(t, s)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAppenderCommitAndRollback(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	app := s.Appender(context.Background())
	ref, err := app.Append(0, series("x"), 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Append(ref, labels.EmptyLabels(), 2000, 2); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, s); len(got) != 0 {
		t.Errorf("visible before Commit: %v", got)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Append(ref, labels.EmptyLabels(), 3000, 3); err != nil {
		t.Fatal(err)
	}
	if err := app.Rollback(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{`{__name__="x"}`: {"1", "2"}}, dump(t, s)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestIteratorAcrossChunks(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	for i := range 500 {
		if err := s.Append(series("x"), int64(i)*1000, float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	q, _ := s.Querier(100_000, 450_000)
	set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "x"))
	if !set.Next() {
		t.Fatal("no series")
	}
	it := set.At().Iterator(nil)
	var got []int64
	for _, seek := range []int64{50_000, 119_000, 120_000, 120_000, 239_500, 449_000, 460_000} {
		if it.Seek(seek) == chunkenc.ValNone {
			got = append(got, -1)
			continue
		}
		got = append(got, it.AtT())
	}
	// Seeks clamp to the querier's range and never go backwards.
	if diff := cmp.Diff([]int64{100_000, 119_000, 120_000, 120_000, 240_000, 449_000, -1}, got); diff != "" {
		t.Errorf("seek results (-want +got):\n%s", diff)
	}
	if st := s.Stats(); st.TotalPoints != 500 {
		t.Errorf("TotalPoints = %d", st.TotalPoints)
	}
}

// TestConcurrentAppendAndQuery is meant for -race: the scraper appends while
// the autoscaler and debug endpoint query and the store trims.
func TestConcurrentAppendAndQuery(t *testing.T) {
	s := NewStore(Options{Retention: time.Minute, Now: func() time.Time { return dataStart.Add(10 * time.Minute) }})
	ev := NewEvaluator(s, EvaluatorOptions{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			app := s.Appender(context.Background())
			for i := range 600 {
				for p := range 10 {
					_, _ = app.Append(0, series("x", "w", fmt.Sprint(w), "p", fmt.Sprint(p)), dataStart.Add(time.Duration(i)*time.Second).UnixMilli(), float64(i))
				}
				if err := app.Commit(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			if _, err := ev.Eval(context.Background(), `sum(rate(x[1m]))`, dataStart.Add(10*time.Minute), nil); err != nil {
				t.Error(err)
				return
			}
			s.Trim()
			_ = s.Stats()
		}
	}()
	wg.Wait()
	if got := s.Stats().SeriesCount; got != 40 {
		t.Errorf("SeriesCount = %d, want 40", got)
	}
}

func TestIteratorNextAfterSeekAndBounds(t *testing.T) {
	s := NewStore(Options{Retention: -1})
	for i := range 300 {
		if err := s.Append(series("x"), int64(i)*1000, float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	q, _ := s.Querier(130_000, 135_000)
	set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "x"))
	set.Next()
	walk := func(seek int64) []int64 {
		it := set.At().Iterator(nil)
		var got []int64
		vt := it.Next()
		if seek >= 0 {
			vt = it.Seek(seek)
		}
		for ; vt != chunkenc.ValNone; vt = it.Next() {
			got = append(got, it.AtT()/1000)
		}
		return got
	}
	tests := []struct {
		seek int64
		want []int64
	}{
		{seek: -1, want: []int64{130, 131, 132, 133, 134, 135}},
		{seek: 132_000, want: []int64{132, 133, 134, 135}},
		{seek: 0, want: []int64{130, 131, 132, 133, 134, 135}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, walk(tc.seek)); diff != "" {
			t.Errorf("seek %d (-want +got):\n%s", tc.seek, diff)
		}
	}
}

// TestStoreByteBudget: the store charges every series its labels,
// a fixed bookkeeping estimate and its chunks against Options.MaxBytes; a
// new series past it is refused (ErrBytesLimit) and counted, and while the
// store is past it (existing series grew their chunks) their samples are
// refused too, staleness markers excepted, until retention frees room.
// Label bytes count: a few series with long labels fill what many short
// ones would not.
func TestStoreByteBudget(t *testing.T) {
	now := dataStart
	long := strings.Repeat("v", 3000)
	// Room for two series of 3 KB labels and their first samples.
	budget := 2*newSeriesCost(series("big", "v", long)) + 100
	s := NewStore(Options{MaxBytes: budget, MaxBytesPerNamespace: -1, Retention: time.Minute, Now: func() time.Time { return now }})
	ts := dataStart.UnixMilli()
	type result struct {
		Errs                                []string
		Series                              int
		RefusedSeries, RefusedForBytes, Smp uint64
	}
	var got result
	record := func(err error) {
		switch {
		case err == nil:
			got.Errs = append(got.Errs, "ok")
		case errors.Is(err, ErrBytesLimit):
			got.Errs = append(got.Errs, "bytes limit")
		default:
			got.Errs = append(got.Errs, err.Error())
		}
	}
	record(s.Append(series("big", "v", "1"+long), ts, 1))
	record(s.Append(series("big", "v", "2"+long), ts, 1))
	// A third long series does not fit; a short one does not either: the
	// budget is bytes, not series.
	record(s.Append(series("big", "v", "3"+long), ts, 1))
	// Existing series keep taking samples until their chunks take the
	// store past the budget (100 bytes of room: a few dozen samples of
	// values that do not compress); then they are refused, but for
	// staleness markers.
	refusedAt := 0
	for i := 1; i <= 200 && refusedAt == 0; i++ {
		if err := s.Append(series("big", "v", "1"+long), ts+int64(i)*5000, math.Float64frombits(uint64(i)*0x9E3779B97F4A7C15)); errors.Is(err, ErrBytesLimit) {
			refusedAt = i
		}
	}
	if refusedAt == 0 {
		t.Fatal("200 incompressible samples never took the store past its budget")
	}
	record(s.Append(series("big", "v", "2"+long), ts+5000, 2))
	record(s.Append(series("big", "v", "2"+long), ts+10000, math.Float64frombits(value.StaleNaN)))
	st := s.Stats()
	got.Series, got.RefusedSeries, got.RefusedForBytes, got.Smp = st.SeriesCount, st.RefusedSeries, st.RefusedSeriesForBytes, st.RefusedSamples
	want := result{Errs: []string{"ok", "ok", "bytes limit", "bytes limit", "ok"}, Series: 2, RefusedSeries: 1, RefusedForBytes: 1, Smp: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if st.UsedBytes <= budget || st.UsedBytes > budget+200 {
		t.Errorf("used %d bytes, want a little over the budget of %d (one sample's growth)", st.UsedBytes, budget)
	}

	// Retention frees the room: once both series have expired, the store
	// charges nothing and takes a new series.
	now = now.Add(time.Duration(refusedAt)*5*time.Second + 2*time.Minute)
	s.Trim()
	if got := s.Stats().UsedBytes; got != 0 {
		t.Errorf("used %d bytes after every series expired, want 0", got)
	}
	if err := s.Append(series("big", "v", "3"+long), now.UnixMilli(), 1); err != nil {
		t.Errorf("a new series after retention: %v", err)
	}
}

// TestStoreByteAccount: what the store charges is what its series
// hold: after appends through both paths (Append, and transactions that
// cut and trim chunks) and series expiring, Usage.UsedBytes equals the
// labels, bookkeeping and chunk bytes of the series left.
func TestStoreByteAccount(t *testing.T) {
	now := dataStart
	s := NewStore(Options{Retention: 10 * time.Minute, Now: func() time.Time { return now }})
	for i := range 600 {
		now = dataStart.Add(time.Duration(i) * 5 * time.Second)
		app := s.Appender(context.Background())
		for j := range 20 {
			if _, err := app.Append(0, series("x", "j", fmt.Sprint(j)), now.UnixMilli(), float64(i*j)); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		if i < 300 {
			if err := s.Append(series("early"), now.UnixMilli(), float64(i)); err != nil {
				t.Fatal(err)
			}
		}
		if i%50 == 0 {
			s.Trim()
		}
	}
	s.Trim()
	var want int64
	s.eachSeries(func(ser *memSeries) {
		want += seriesCost(ser.labelsEnd()) + int64(ser.chunkBytes())
	})
	// The label strings, once each.
	want += s.syms.cost()
	u := s.Usage()
	if u.UsedBytes != want {
		t.Errorf("charged %d bytes, the series hold %d", u.UsedBytes, want)
	}
	if u.Series != 20 {
		t.Errorf("%d series left, want the 20 live ones", u.Series)
	}
	checkAccounts(t, s)
}

// TestStoreMaxSeriesPerNamespace: the store is shared by every tenant's
// triggers; one namespace's pods fill only their own share, the others
// keep theirs, and a namespace's series that age out free its share.
func TestStoreMaxSeriesPerNamespace(t *testing.T) {
	now := dataStart
	s := NewStore(Options{MaxSeries: 100, MaxSeriesPerNamespace: 2, Retention: time.Minute, Now: func() time.Time { return now }})
	ts := dataStart.UnixMilli()
	in := func(ns, name string) labels.Labels {
		return labels.FromStrings("__name__", name, LabelNamespace, ns)
	}
	for _, name := range []string{"a", "b"} {
		if err := s.Append(in("greedy", name), ts, 1); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Append(in("greedy", "c"), ts, 1)
	if !errors.Is(err, ErrSeriesLimit) || !strings.Contains(err.Error(), `metrics.maxSeriesPerNamespace (namespace "greedy")`) {
		t.Fatalf("a third series in one namespace: %v, want ErrSeriesLimit naming the setting and the namespace", err)
	}
	if err := s.Append(in("greedy", "a"), ts+5000, 2); err != nil {
		t.Errorf("an existing series of the full namespace: %v", err)
	}
	for _, name := range []string{"a", "b"} {
		if err := s.Append(in("quiet", name), ts, 1); err != nil {
			t.Errorf("another namespace's series %s: %v", name, err)
		}
	}
	st := s.Stats()
	if diff := cmp.Diff([]uint64{1, 1, 0}, []uint64{st.RefusedSeries, st.RefusedSeriesForNamespace, st.RefusedSeriesForBytes}); diff != "" {
		t.Errorf("[refused, for namespace, for bytes] (-want +got):\n%s", diff)
	}
	// Once greedy's "b" ages out, the namespace has room for one more.
	now = dataStart.Add(2 * time.Minute)
	if err := s.Append(in("greedy", "a"), now.UnixMilli(), 3); err != nil {
		t.Fatal(err)
	}
	s.Trim()
	if err := s.Append(in("greedy", "c"), now.UnixMilli(), 1); err != nil {
		t.Errorf("a series after trim: %v", err)
	}
	if err := s.Append(in("greedy", "d"), now.UnixMilli(), 1); !errors.Is(err, ErrSeriesLimit) {
		t.Errorf("past the share again: %v, want ErrSeriesLimit", err)
	}
}

// TestStoreByteShareLeavesOtherNamespaceRoom: one namespace's series with
// long labels fill at most its share of MaxBytes (a quarter by default);
// the series past it are refused with their own count, and another
// namespace's series still fit. Deleting the first namespace's series
// gives its share back at once.
func TestStoreByteShareLeavesOtherNamespaceRoom(t *testing.T) {
	s := NewStore(Options{MaxBytes: 4 << 20, MaxSeriesPerNamespace: 1000, Retention: -1})
	long := strings.Repeat("x", 4000)
	var kept []labels.Labels
	refused := 0
	for i := range 128 {
		b := labels.NewScratchBuilder(10)
		b.Add("__name__", "heavy")
		b.Add("namespace", "a")
		for j := range 8 {
			b.Add(fmt.Sprintf("l%d", j), fmt.Sprintf("%d-%d%s", i, j, long))
		}
		b.Sort()
		ls := b.Labels()
		switch err := s.Append(ls, 1000, 1); {
		case err == nil:
			kept = append(kept, ls)
		case errors.Is(err, ErrBytesLimit):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if refused == 0 {
		t.Fatal("namespace a's 128 series of 32 KB of labels all fit in a 4 MiB store: no share applied")
	}
	if used := s.NamespaceUsedBytes("a"); used > 1<<20 {
		t.Errorf("namespace a uses %d bytes, over its share of %d", used, 1<<20)
	}
	if got := s.Stats().RefusedSeriesForNamespaceBytes; got != uint64(refused) {
		t.Errorf("RefusedSeriesForNamespaceBytes = %d, want %d", got, refused)
	}
	for i := range 10 {
		if err := s.Append(labels.FromStrings("__name__", "queue", "namespace", "b", "pod", fmt.Sprint(i)), 1000, 1); err != nil {
			t.Fatalf("namespace b's series %d refused while a is at its share: %v", i, err)
		}
	}
	if n := s.Delete(kept); n != len(kept) {
		t.Errorf("Delete removed %d series, want %d", n, len(kept))
	}
	if used := s.NamespaceUsedBytes("a"); used != 0 {
		t.Errorf("namespace a still uses %d bytes after its series were deleted", used)
	}
	if err := s.Append(kept[0], 2000, 1); err != nil {
		t.Errorf("namespace a's series refused after its share was given back: %v", err)
	}
}

// newSeriesCost is what a series with these labels is charged when none of
// its label strings is in the store yet.
func newSeriesCost(lset labels.Labels) int64 {
	var t symbols
	cold, grown := t.internLabels(lset, 0)
	return seriesCost(len(cold)) + int64(grown)
}

// TestSeriesRecordFitsItsSizeClass: the series record is most of what a
// series costs besides its samples, and the allocator rounds it up to a
// size class; it must stay within the 48-byte one.
func TestSeriesRecordFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(memSeries{}); size > 48 {
		t.Errorf("memSeries is %d bytes, want at most 48", size)
	}
}
