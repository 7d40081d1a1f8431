package promql

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

const exposition = `# HELP http_requests_total Requests.
# TYPE http_requests_total counter
http_requests_total{code="200",pod="inner"} 10
http_requests_total{code="500"} 2
# TYPE queue_items gauge
queue_items 7
# TYPE latency_seconds histogram
latency_seconds_bucket{le="0.1"} 1
latency_seconds_bucket{le="1"} 3
latency_seconds_bucket{le="+Inf"} 4
latency_seconds_sum 2.5
latency_seconds_count 4
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.2
rpc_seconds_sum 9
rpc_seconds_count 30
# TYPE not_requested gauge
not_requested 1
`

// fakeClock advances one scrape interval per call to step.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ms.Store(dataStart.UnixMilli())
	return c
}
func (c *fakeClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) step()          { c.ms.Add(5000) }

// dump returns every stored sample as "labels value" lines per series, with
// staleness markers spelled "stale".
func dump(t *testing.T, s *Store, ms ...*labels.Matcher) map[string][]string {
	t.Helper()
	q, err := s.Querier(0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		ms = []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+")}
	}
	out := map[string][]string{}
	set := q.Select(context.Background(), true, nil, ms...)
	for set.Next() {
		ser := set.At()
		it := ser.Iterator(nil)
		var vals []string
		for it.Next() == chunkenc.ValFloat {
			_, v := it.At()
			if value.IsStaleNaN(v) {
				vals = append(vals, "stale")
			} else {
				vals = append(vals, fmt.Sprint(v))
			}
		}
		out[ser.Labels().String()] = vals
	}
	return out
}

func staticTargets(ts ...Target) Discoverer {
	return DiscovererFunc(func(context.Context) ([]Target, error) { return ts, nil })
}

func target(url, pod string) Target {
	return Target{URL: url, Labels: labels.FromStrings("namespace", "default", "pod", pod, "workload", "fn")}
}

func newTestScraper(t *testing.T, store *Store, clock *fakeClock, d Discoverer, mod func(*ScraperOptions)) *Scraper {
	t.Helper()
	opts := ScraperOptions{Store: store, Discoverer: d, Now: clock.now, Timeout: 2 * time.Second}
	if mod != nil {
		mod(&opts)
	}
	s, err := NewScraper(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func healthOf(s *Scraper) map[string]string {
	out := map[string]string{}
	for _, h := range s.Health() {
		v := string(h.Health)
		if h.LastError != "" {
			v += ": " + h.LastError
		}
		out[h.URL] = v
	}
	return out
}

func TestScrapeNormal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, exposition)
	}))
	defer srv.Close()

	clock := newFakeClock()
	store := NewStore(Options{Now: clock.now})
	store.Request("http_requests_total", "queue_items", "latency_seconds_bucket", "latency_seconds_count", "rpc_seconds", "rpc_seconds_sum")
	sc := newTestScraper(t, store, clock, staticTargets(target(srv.URL+"/metrics", "p1")), nil)
	sc.Cycle(context.Background())

	base := `namespace="default", pod="p1", workload="fn"`
	want := map[string][]string{
		`{__name__="http_requests_total", code="200", exported_pod="inner", ` + base + `}`:       {"10"},
		`{__name__="http_requests_total", code="500", ` + base + `}`:                             {"2"},
		`{__name__="queue_items", ` + base + `}`:                                                 {"7"},
		`{__name__="latency_seconds_bucket", le="0.1", ` + base + `}`:                            {"1"},
		`{__name__="latency_seconds_bucket", le="1", ` + base + `}`:                              {"3"},
		`{__name__="latency_seconds_bucket", le="+Inf", ` + base + `}`:                           {"4"},
		`{__name__="latency_seconds_count", ` + base + `}`:                                       {"4"},
		`{__name__="rpc_seconds", namespace="default", pod="p1", quantile="0.5", workload="fn"}`: {"0.2"},
		`{__name__="rpc_seconds_sum", ` + base + `}`:                                             {"9"},
	}
	if diff := cmp.Diff(want, dump(t, store)); diff != "" {
		t.Errorf("stored samples (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{srv.URL + "/metrics": "up"}, healthOf(sc)); diff != "" {
		t.Errorf("health (-want +got):\n%s", diff)
	}
}

func TestScrapeFailures(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "queue_items 1\n") })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// Holds the scrape until the scraper gives up (or the test ends).
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "queue_items 1\n")
		fmt.Fprint(w, strings.Repeat("# padding comment line\n", 1000))
	})
	mux.HandleFunc("/malformed", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "queue_items{ 1 2 3\n") })
	mux.HandleFunc("/error", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)

	clock := newFakeClock()
	store := NewStore(Options{Now: clock.now})
	store.Request("queue_items")
	targets := []Target{
		target(srv.URL+"/ok", "ok"), target(srv.URL+"/slow", "slow"), target(srv.URL+"/huge", "huge"),
		target(srv.URL+"/malformed", "malformed"), target(srv.URL+"/error", "error"),
		{URL: "http://10.0.0.1:bad/metrics", Labels: labels.FromStrings("pod", "invalid"), Invalid: "annotation prometheus.io/port is \"bad\""},
	}
	// The timeout must be short enough to keep the test quick and long
	// enough for loopback responses on a loaded machine.
	sc := newTestScraper(t, store, clock, staticTargets(targets...), func(o *ScraperOptions) {
		o.Timeout = 300 * time.Millisecond
		o.MaxBodyBytes = 1024
	})
	sc.Cycle(context.Background())

	got := healthOf(sc)
	want := map[string]string{
		srv.URL + "/ok":               "up",
		srv.URL + "/slow":             "down: scrape " + srv.URL + "/slow: no response within 300ms; make the endpoint faster or raise the scrape timeout",
		srv.URL + "/huge":             "down: scrape " + srv.URL + "/huge: response exceeds 1024 bytes; expose fewer metrics or raise the body size limit",
		srv.URL + "/error":            "down: scrape " + srv.URL + "/error: server returned 500 Internal Server Error",
		"http://10.0.0.1:bad/metrics": "down: annotation prometheus.io/port is \"bad\"",
	}
	// The parser's wording is upstream's; only the prefix is ours.
	if m := got[srv.URL+"/malformed"]; !strings.HasPrefix(m, "down: parse metrics from "+srv.URL+"/malformed: ") {
		t.Errorf("malformed target health = %q, want a parse error", m)
	}
	delete(got, srv.URL+"/malformed")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("health (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{
		`{__name__="queue_items", namespace="default", pod="ok", workload="fn"}`: {"1"},
	}, dump(t, store)); diff != "" {
		t.Errorf("stored samples (-want +got):\n%s", diff)
	}
}

func TestScrapeStaleness(t *testing.T) {
	var (
		mtx  sync.Mutex
		body = map[string]string{"/a": "queue_items{q=\"x\"} 1\nqueue_items{q=\"y\"} 2\n", "/b": "queue_items 5\n"}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mtx.Lock()
		defer mtx.Unlock()
		b, ok := body[r.URL.Path]
		if !ok {
			http.Error(w, "gone", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, b)
	}))
	defer srv.Close()

	clock := newFakeClock()
	store := NewStore(Options{Now: clock.now})
	store.Request("queue_items")
	var (
		tmtx    sync.Mutex
		targets = []Target{target(srv.URL+"/a", "a"), target(srv.URL+"/b", "b"), target(srv.URL+"/c", "c")}
	)
	body["/c"] = "queue_items 9\n"
	d := DiscovererFunc(func(context.Context) ([]Target, error) {
		tmtx.Lock()
		defer tmtx.Unlock()
		return append([]Target(nil), targets...), nil
	})
	sc := newTestScraper(t, store, clock, d, nil)
	sc.Cycle(context.Background())

	// Cycle 2: series y vanishes from /a, pod b vanishes from discovery and
	// /c starts failing.
	clock.step()
	mtx.Lock()
	body["/a"] = "queue_items{q=\"x\"} 3\n"
	delete(body, "/c")
	mtx.Unlock()
	tmtx.Lock()
	targets = []Target{targets[0], targets[2]}
	tmtx.Unlock()
	sc.Cycle(context.Background())

	want := map[string][]string{
		`{__name__="queue_items", namespace="default", pod="a", q="x", workload="fn"}`: {"1", "3"},
		`{__name__="queue_items", namespace="default", pod="a", q="y", workload="fn"}`: {"2", "stale"},
		`{__name__="queue_items", namespace="default", pod="b", workload="fn"}`:        {"5", "stale"},
		`{__name__="queue_items", namespace="default", pod="c", workload="fn"}`:        {"9", "stale"},
	}
	if diff := cmp.Diff(want, dump(t, store)); diff != "" {
		t.Errorf("stored samples (-want +got):\n%s", diff)
	}
	// A stale series is gone for PromQL at once, not after the lookback.
	res, err := NewEvaluator(store, EvaluatorOptions{}).Eval(context.Background(), `count(queue_items)`, clock.now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Result{Kind: KindValue, Value: 1}, res, cmp.Comparer(labels.Equal)); diff != "" {
		t.Errorf("count after staleness (-want +got):\n%s", diff)
	}
}

func TestScrapeThousandTargets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE http_requests_total counter\nhttp_requests_total{code=\"200\"} 1\nhttp_requests_total{code=\"500\"} 2\nignored 3\n")
	}))
	defer srv.Close()
	var targets []Target
	for i := range 1000 {
		targets = append(targets, target(fmt.Sprintf("%s/metrics/%d", srv.URL, i), fmt.Sprintf("pod-%d", i)))
	}
	clock := newFakeClock()
	store := NewStore(Options{Now: clock.now})
	store.Request("http_requests_total")
	sc := newTestScraper(t, store, clock, staticTargets(targets...), func(o *ScraperOptions) { o.Concurrency = 64 })
	sc.Cycle(context.Background())

	up := 0
	for _, h := range sc.Health() {
		if h.Health == HealthUp && h.Samples == 2 {
			up++
		}
	}
	st := store.Stats()
	got := []int{up, st.SeriesCount, st.TotalPoints}
	if diff := cmp.Diff([]int{1000, 2000, 2000}, got); diff != "" {
		t.Errorf("[targets up, series, points] (-want +got):\n%s", diff)
	}
	res, err := NewEvaluator(store, EvaluatorOptions{}).Eval(context.Background(), `sum(http_requests_total)`, clock.now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Value != 3000 {
		t.Errorf("sum over 1000 targets = %v, want 3000", res.Value)
	}
}

func TestScraperStartStopsWithContext(t *testing.T) {
	var cycles atomic.Int32
	done := make(chan struct{})
	d := DiscovererFunc(func(context.Context) ([]Target, error) {
		if cycles.Add(1) == 2 {
			close(done)
		}
		return nil, nil
	})
	clock := newFakeClock()
	sc := newTestScraper(t, NewStore(Options{Now: clock.now}), clock, d, func(o *ScraperOptions) { o.Interval = 10 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sc.Start(ctx) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("scraper did not run two cycles within 10s")
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Start returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after cancel")
	}
}

func TestDiscoveryErrorKeepsTargets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "queue_items 1\n") }))
	defer srv.Close()
	fail := false
	d := DiscovererFunc(func(context.Context) ([]Target, error) {
		if fail {
			return nil, fmt.Errorf("list pods: forbidden")
		}
		return []Target{target(srv.URL, "a")}, nil
	})
	clock := newFakeClock()
	store := NewStore(Options{Now: clock.now})
	store.Request("queue_items")
	sc := newTestScraper(t, store, clock, d, nil)
	sc.Cycle(context.Background())
	fail = true
	clock.step()
	sc.Cycle(context.Background())
	if got := fmt.Sprint(sc.DiscoveryError()); got != "list pods: forbidden" {
		t.Errorf("DiscoveryError = %q", got)
	}
	if diff := cmp.Diff(map[string][]string{
		`{__name__="queue_items", namespace="default", pod="a", workload="fn"}`: {"1", "1"},
	}, dump(t, store)); diff != "" {
		t.Errorf("stored samples (-want +got):\n%s", diff)
	}
}
