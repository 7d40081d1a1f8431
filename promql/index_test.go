package promql

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
)

// selectNames runs a sorted Select and returns the label sets it found.
func selectNames(t *testing.T, s *Store, ms ...*labels.Matcher) []string {
	t.Helper()
	q, err := s.Querier(0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	set := q.Select(context.Background(), true, nil, ms...)
	for set.Next() {
		out = append(out, set.At().Labels().String())
	}
	return out
}

// TestIndexSelectsWhatAScanSelects checks the postings against a scan of
// every series, after series expired (their slots are freed and reused)
// and new ones came.
func TestIndexSelectsWhatAScanSelects(t *testing.T) {
	now := dataStart
	s := NewStore(Options{Retention: time.Minute, Now: func() time.Time { return now }})
	var live []labels.Labels
	add := func(at time.Time, ls labels.Labels) {
		t.Helper()
		if err := s.Append(ls, at.UnixMilli(), 1); err != nil {
			t.Fatal(err)
		}
	}
	// 40 series; the odd pods stop reporting and expire.
	for p := range 20 {
		for _, name := range []string{"reqs_total", "queue"} {
			ls := series(name, "job", fmt.Sprintf("j%d", p%3), "pod", fmt.Sprintf("p%02d", p))
			add(dataStart, ls)
			if p%2 == 0 {
				add(dataStart.Add(2*time.Minute), ls)
				live = append(live, ls)
			}
		}
	}
	now = dataStart.Add(2 * time.Minute)
	s.Trim()
	// New series take the freed slots.
	for p := range 5 {
		ls := series("reqs_total", "job", "new", "pod", fmt.Sprintf("n%d", p), "zone", "a")
		add(now, ls)
		live = append(live, ls)
	}
	cases := [][]*labels.Matcher{
		{labels.MustNewMatcher(labels.MatchEqual, "__name__", "reqs_total")},
		{labels.MustNewMatcher(labels.MatchEqual, "__name__", "reqs_total"), labels.MustNewMatcher(labels.MatchEqual, "job", "j1")},
		{labels.MustNewMatcher(labels.MatchEqual, "__name__", "queue"), labels.MustNewMatcher(labels.MatchEqual, "pod", "p04")},
		{labels.MustNewMatcher(labels.MatchEqual, "__name__", "queue"), labels.MustNewMatcher(labels.MatchEqual, "pod", "p03")}, // expired
		{labels.MustNewMatcher(labels.MatchEqual, "job", "j2"), labels.MustNewMatcher(labels.MatchNotEqual, "__name__", "queue")},
		{labels.MustNewMatcher(labels.MatchRegexp, "pod", "p0[0-4]|n1"), labels.MustNewMatcher(labels.MatchRegexp, "__name__", "queue|reqs_total")},
		{labels.MustNewMatcher(labels.MatchRegexp, "pod", "p1.*")},
		{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"), labels.MustNewMatcher(labels.MatchEqual, "zone", "")},
		{labels.MustNewMatcher(labels.MatchNotEqual, "zone", "")},
		{labels.MustNewMatcher(labels.MatchNotRegexp, "job", "j.*")},
		{labels.MustNewMatcher(labels.MatchEqual, "job", "none")},
		{labels.MustNewMatcher(labels.MatchEqual, "missing", "x")},
	}
	for _, ms := range cases {
		var sets []labels.Labels
		for _, ls := range live {
			if matchesAll(ls, ms) {
				sets = append(sets, ls)
			}
		}
		slices.SortFunc(sets, labels.Compare)
		var want []string
		for _, ls := range sets {
			want = append(want, ls.String())
		}
		if diff := cmp.Diff(want, selectNames(t, s, ms...)); diff != "" {
			t.Errorf("Select(%v) (-want +got):\n%s", ms, diff)
		}
	}
	if got := s.Stats().SeriesCount; got != len(live) {
		t.Errorf("SeriesCount = %d, want %d", got, len(live))
	}
}

// BenchmarkSelectOne selects one series by three equality matchers (what
// an autoscaler trigger does) from stores of growing size: with the
// inverted index the cost stays flat.
func BenchmarkSelectOne(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := NewStore(Options{Retention: -1, MaxSeries: -1})
			for i := range n {
				ls := series("http_requests_total", "namespace", "bench", "job", fmt.Sprintf("w%06d", i), "pod", fmt.Sprintf("w%06d-0", i))
				if err := s.Append(ls, 1000, 1); err != nil {
					b.Fatal(err)
				}
			}
			q, err := s.Querier(0, 2000)
			if err != nil {
				b.Fatal(err)
			}
			ms := []*labels.Matcher{
				labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_requests_total"),
				labels.MustNewMatcher(labels.MatchEqual, "namespace", "bench"),
				labels.MustNewMatcher(labels.MatchEqual, "job", fmt.Sprintf("w%06d", n/2)),
			}
			b.ReportAllocs()
			for b.Loop() {
				set := q.Select(context.Background(), false, nil, ms...)
				if !set.Next() {
					b.Fatal("no series")
				}
			}
		})
	}
}

// matchesAll reports whether lset matches every matcher, as Select's
// answer must.
func matchesAll(lset labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(lset.Get(m.Name)) {
			return false
		}
	}
	return true
}
