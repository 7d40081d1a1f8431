package promql

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestIssue11Item7ScraperMetrics: scrapes, failures, their duration, the
// targets by health and the store's size reach the registerer, and a
// second scraper on the same registerer counts in the same series.
func TestIssue11Item7ScraperMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, exposition)
	}))
	defer srv.Close()
	reg := prometheus.NewPedanticRegistry()
	clock := newFakeClock()
	store := NewStore(Options{Now: clock.now})
	store.Request("queue_items", "http_requests_total")
	d := staticTargets(target(srv.URL+"/metrics", "up"), target("http://127.0.0.1:1/metrics", "down"))
	s := newTestScraper(t, store, clock, d, func(o *ScraperOptions) { o.Registerer = reg })
	// Before any scrape, every series is there at zero.
	if got := testutil.ToFloat64(s.metrics.scrapes); got != 0 {
		t.Errorf("scrapes before the first cycle: %v", got)
	}
	for range 2 {
		s.Cycle(t.Context())
		clock.step()
	}
	u := store.Usage()
	want := fmt.Sprintf(`
# HELP scaleplane_scrape_failures_total Scrapes that failed (unreachable, error status, bad body, too large); the target's series end with a staleness marker.
# TYPE scaleplane_scrape_failures_total counter
scaleplane_scrape_failures_total 2
# HELP scaleplane_scrape_targets Scrape targets after the latest cycle, by health (up, down, unknown before their first scrape).
# TYPE scaleplane_scrape_targets gauge
scaleplane_scrape_targets{health="down"} 1
scaleplane_scrape_targets{health="unknown"} 0
scaleplane_scrape_targets{health="up"} 1
# HELP scaleplane_scrapes_total Scrapes of workload pods by scaleplane's metrics pipeline.
# TYPE scaleplane_scrapes_total counter
scaleplane_scrapes_total 4
# HELP scaleplane_store_bytes Bytes of encoded chunks in the embedded metrics store after the latest scrape cycle.
# TYPE scaleplane_store_bytes gauge
scaleplane_store_bytes %d
# HELP scaleplane_store_samples Samples (staleness markers included) in the embedded metrics store after the latest scrape cycle.
# TYPE scaleplane_store_samples gauge
scaleplane_store_samples %d
# HELP scaleplane_store_series Series in the embedded metrics store after the latest scrape cycle.
# TYPE scaleplane_store_series gauge
scaleplane_store_series %d
`, u.Bytes, u.Samples, u.Series)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricScrapes, MetricScrapeFailures, MetricScrapeTargets, MetricStoreSeries, MetricStoreSamples, MetricStoreBytes); err != nil {
		t.Error(err)
	}
	// Three series kept (queue_items, two http_requests_total), two samples
	// each.
	if diff := cmp.Diff(Usage{Series: 3, Samples: 6, Bytes: u.Bytes}, u); diff != "" || u.Bytes == 0 {
		t.Errorf("store usage (-want +got):\n%s", diff)
	}
	if n := testutil.CollectAndCount(reg, MetricScrapeDuration); n != 1 {
		t.Errorf("%d %s series, want 1", n, MetricScrapeDuration)
	}

	again := newTestScraper(t, store, clock, d, func(o *ScraperOptions) { o.Registerer = reg })
	again.Cycle(t.Context())
	if got := testutil.ToFloat64(s.metrics.scrapes); got != 6 {
		t.Errorf("scrapes counted by two scrapers on one registerer: %v, want 6", got)
	}
}
