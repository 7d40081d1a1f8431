package promql

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

const testExposition = `# HELP http_requests_total Requests.
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
		fmt.Fprint(w, testExposition)
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
		srv.URL + "/huge":             "down: scrape " + srv.URL + "/huge: response exceeds 1024 bytes; expose fewer metrics or raise metrics.bodySizeLimitBytes",
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

	// Cycle 2: series y vanishes from /a, pod b vanishes from discovery
	// (its series leave the store) and /c starts failing.
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

// servePages serves body[path] at every path, as text.
func servePages(t *testing.T, pages map[string]string) *httptest.Server {
	t.Helper()
	var mtx sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mtx.Lock()
		b, ok := pages[r.URL.Path]
		mtx.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// lines is n series of name, each with a distinct label i.
func lines(name string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s{i=\"%d\"} 1\n", name, i)
	}
	return b.String()
}

// TestScrapeLimits: Prometheus' sample_limit, label_limit,
// label_name_length_limit, label_value_length_limit and body_size_limit,
// each at its bound (up) and one past it (down with the setting to change,
// counted under its reason, nothing stored). Samples of names no trigger
// requested count against nothing, and the target labels (namespace, pod,
// workload: 3) and the metric name count as labels.
func TestScrapeLimits(t *testing.T) {
	labelsOf := func(n int) string {
		var b strings.Builder
		b.WriteString("queue_items{")
		for i := range n {
			fmt.Fprintf(&b, "l%d=\"v\",", i)
		}
		b.WriteString("} 1\n")
		return b.String()
	}
	tests := []struct {
		name, body string
		// health and the start of the error after the URL, and the
		// failures metric's reason.
		wantHealth, wantError, wantReason string
		wantSamples                       int
		// maxBody, when set, replaces the 1 MiB body limit.
		maxBody int64
	}{
		{name: "samples at the limit, beside unrequested ones", body: lines("queue_items", 100) + lines("not_requested", 5000),
			wantHealth: "up", wantSamples: 100},
		{name: "one sample over the limit", body: lines("queue_items", 101),
			wantHealth: "down", wantError: "sample limit exceeded: more than metrics.sampleLimit (100) samples", wantReason: FailureSampleLimit},
		// Repeats count, as in Prometheus.
		{name: "one series repeated over the limit", body: strings.Repeat("queue_items 1\n", 101),
			wantHealth: "down", wantError: "sample limit exceeded", wantReason: FailureSampleLimit},
		{name: "labels at the limit (6 + 3 target + name)", body: labelsOf(6), wantHealth: "up", wantSamples: 1},
		{name: "one label over the limit", body: labelsOf(7),
			wantHealth: "down", wantError: `label limit exceeded: a series of "queue_items" has 11 labels, more than metrics.labelLimit (10)`, wantReason: FailureLabelLimit},
		{name: "label name at the limit", body: `queue_items{` + strings.Repeat("n", 20) + `="v"} 1` + "\n", wantHealth: "up", wantSamples: 1},
		{name: "label name over the limit", body: `queue_items{` + strings.Repeat("n", 21) + `="v"} 1` + "\n",
			wantHealth: "down", wantError: `label limit exceeded: a series of "queue_items" has a label name of 21 bytes`, wantReason: FailureLabelLimit},
		{name: "label value at the limit", body: `queue_items{a="` + strings.Repeat("v", 40) + `"} 1` + "\n", wantHealth: "up", wantSamples: 1},
		{name: "label value over the limit", body: `queue_items{a="` + strings.Repeat("v", 41) + `"} 1` + "\n",
			wantHealth: "down", wantError: `label limit exceeded: a series of "queue_items" has a value of 41 bytes for label "a"`, wantReason: FailureLabelLimit},
		// An exported_ name is the one checked.
		{name: "a label renamed past the name limit", body: `queue_items{` + strings.Repeat("n", 12) + `="1",pod="inner"} 1` + "\n", wantHealth: "up", wantSamples: 1},
		// Unrequested series are not checked: they are never built.
		{name: "unrequested series over every label limit", body: labelsOf(0) + `not_requested{` + strings.Repeat("n", 100) + `="` + strings.Repeat("v", 100) + `"} 1` + "\n" + strings.Replace(labelsOf(50), "queue_items", "not_requested", 1),
			wantHealth: "up", wantSamples: 1},
		{name: "body at the limit", body: lines("queue_items", 10) + "#" + strings.Repeat(" ", 4096-len(lines("queue_items", 10))-2) + "\n", maxBody: 4096,
			wantHealth: "up", wantSamples: 10},
		{name: "body one byte over the limit", body: lines("queue_items", 10) + "#" + strings.Repeat(" ", 4096-len(lines("queue_items", 10))-1) + "\n", maxBody: 4096,
			wantHealth: "down", wantError: "response exceeds 4096 bytes; expose fewer metrics or raise metrics.bodySizeLimitBytes", wantReason: FailureBodyTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := servePages(t, map[string]string{"/metrics": tc.body})
			clock := newFakeClock()
			store := NewStore(Options{Now: clock.now})
			store.Request("queue_items")
			sc := newTestScraper(t, store, clock, staticTargets(target(srv.URL+"/metrics", "p")), func(o *ScraperOptions) {
				o.SampleLimit, o.LabelLimit, o.LabelNameLengthLimit, o.LabelValueLengthLimit, o.MaxBodyBytes = 100, 10, 20, 40, 1<<20
				if tc.maxBody != 0 {
					o.MaxBodyBytes = tc.maxBody
				}
			})
			sc.Cycle(context.Background())
			h := sc.Health()[0]
			prefix := "scrape " + srv.URL + "/metrics: "
			type result struct {
				Health, ErrorStart, Reason string
				Samples, Stored            int
			}
			got := result{Health: string(h.Health), Samples: h.Samples, Stored: store.Stats().SeriesCount}
			if h.LastError != "" {
				got.ErrorStart = strings.TrimPrefix(h.LastError, prefix)[:min(len(tc.wantError), len(strings.TrimPrefix(h.LastError, prefix)))]
				got.Reason = reasonCounted(t, sc)
			}
			want := result{Health: tc.wantHealth, ErrorStart: tc.wantError, Reason: tc.wantReason, Samples: tc.wantSamples, Stored: tc.wantSamples}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nerror: %s", diff, h.LastError)
			}
		})
	}
}

// reasonCounted is the one reason the scraper's failures metric counted.
func reasonCounted(t *testing.T, sc *Scraper) string {
	t.Helper()
	var reasons []string
	for _, r := range failureReasons {
		if testutil.ToFloat64(sc.metrics.failures.WithLabelValues(r)) > 0 {
			reasons = append(reasons, r)
		}
	}
	if len(reasons) != 1 {
		t.Errorf("failure reasons counted: %v, want one", reasons)
		return strings.Join(reasons, ",")
	}
	return reasons[0]
}

// TestScrapeFailureStoresNothing: a scrape that fails part way (its
// sample limit crossed after 50 series were read, or its body found too
// large after many series) stores none of its samples, and the series of
// its previous scrape end with a staleness marker, as in Prometheus.
func TestScrapeFailureStoresNothing(t *testing.T) {
	pages := map[string]string{"/limit": lines("queue_items", 50), "/size": lines("queue_items", 50)}
	srv := servePages(t, pages)
	clock := newFakeClock()
	store := NewStore(Options{Now: clock.now})
	store.Request("queue_items")
	sc := newTestScraper(t, store, clock, staticTargets(target(srv.URL+"/limit", "limit"), target(srv.URL+"/size", "size")), func(o *ScraperOptions) {
		o.SampleLimit, o.MaxBodyBytes = 60, 2000
	})
	sc.Cycle(context.Background())
	first := store.Stats()
	clock.step()
	pages["/limit"] = lines("queue_items", 61)
	pages["/size"] = lines("queue_items", 40) + "#" + strings.Repeat(" ", 2000) + "\n"
	sc.Cycle(context.Background())
	up := 0
	for _, h := range sc.Health() {
		if h.Health == HealthUp {
			up++
		}
	}
	// Every series: one sample, then a staleness marker; the failed scrapes
	// (61 and 40 series read) added nothing, not even series.
	var values []string
	for _, vs := range dump(t, store) {
		values = append(values, strings.Join(vs, ","))
	}
	sort.Strings(values)
	values = slices.Compact(values)
	got := []any{first.SeriesCount, up, store.Stats().SeriesCount, values}
	if diff := cmp.Diff([]any{100, 0, 100, []string{"1,stale"}}, got); diff != "" {
		t.Errorf("[series after the first cycle, targets up, series after the failures, values] (-want +got):\n%s", diff)
	}
}

// TestScrapeLongLines: a line longer than the label limits allow a
// requested series to be (here 6 labels, the name and 3 target labels
// among them, of 10 and 20 bytes: 6*(10+40+6)+64 = 400 bytes, raised to the
// read window) is skipped unread when it is a
// comment or a series nobody requested, and fails the scrape as a label
// limit when its name was requested; the lines around it are read.
func TestScrapeLongLines(t *testing.T) {
	long := strings.Repeat("x", 3*windowSize)
	tests := []struct{ name, body, want string }{
		{"a comment", "queue_items 1\n# " + long + "\nqueue_items{a=\"b\"} 2\n", "up 2"},
		{"an unrequested series", "queue_items 1\nnot_requested{a=\"" + long + "\"} 1\nqueue_items{a=\"b\"} 2\n", "up 2"},
		{"an unrequested name", "queue_items 1\n" + long + " 1\nqueue_items{a=\"b\"} 2\n", "up 2"},
		{"an unrequested quoted name", "queue_items 1\n{\"not.requested\", a=\"" + long + "\"} 1\nqueue_items{a=\"b\"} 2\n", "up 2"},
		{"the last line", "queue_items 1\nnot_requested{a=\"" + long + "\"} 1", "up 1"},
		{"a requested series", "queue_items 1\nqueue_items{a=\"" + long + "\"} 1\n", "down label_limit"},
		{"a requested quoted name", "{\"queue_items\", a=\"" + long + "\"} 1\n", "down label_limit"},
		{"a name that is not first", "{a=\"" + long + "\", \"queue_items\"} 1\n", "down label_limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := servePages(t, map[string]string{"/metrics": tc.body})
			clock := newFakeClock()
			store := NewStore(Options{Now: clock.now})
			store.Request("queue_items")
			sc := newTestScraper(t, store, clock, staticTargets(target(srv.URL+"/metrics", "p")), func(o *ScraperOptions) {
				o.LabelLimit, o.LabelNameLengthLimit, o.LabelValueLengthLimit = 6, 10, 20
			})
			if sc.limits.maxLine != windowSize {
				t.Fatalf("longest line %d, want the window, %d", sc.limits.maxLine, windowSize)
			}
			sc.Cycle(context.Background())
			h := sc.Health()[0]
			got := fmt.Sprintf("%s %d", h.Health, h.Samples)
			if h.Health == HealthDown {
				got = "down " + reasonCounted(t, sc)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q (%s)", got, tc.want, h.LastError)
			}
		})
	}
}

// TestScrapeUnrequestedAllocs: reading a 10 MiB page of a name no
// trigger requests (about 557,000 series, what the hostile suite serves)
// allocates per read window, never per series: the same few allocations
// per 256 KiB whether the page holds short or long lines, and a few
// hundred in all against 5.3 million with the client objects the scraper
// built before.
func TestScrapeUnrequestedAllocs(t *testing.T) {
	page := bigExposition("not_requested", 10<<20)
	names := map[string]struct{}{"queue_items": {}}
	target := labels.FromStrings("pod", "p")
	lim := newScrapeLimits(ScraperOptions{MaxBodyBytes: 11 << 20, LabelLimit: 64, LabelNameLengthLimit: 256, LabelValueLengthLimit: 4096})
	read := func() {
		err := readExposition(strings.NewReader(page), lim, names, target, func(labels.Labels, float64) error {
			t.Fatal("an unrequested series was built")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	read() // fills the window pool
	allocs := testing.AllocsPerRun(5, read)
	windows := float64(len(page)/windowSize + 1)
	t.Logf("%d series, %d bytes: %.0f allocations (%.1f per 256 KiB window)", strings.Count(page, "\n"), len(page), allocs, allocs/windows)
	// A parser per window (3), its first series' offsets (3).
	if perWindow := allocs / windows; perWindow > 8 {
		t.Errorf("%.0f allocations for %.0f windows (%.1f each), want at most 8 per window: something allocates per series", allocs, windows, perWindow)
	}
}
