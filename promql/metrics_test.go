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

// TestScraperMetrics: scrapes, failures, their duration, the
// targets by health and the store's size reach the registerer, and a
// second scraper on the same registerer counts in the same series.
func TestScraperMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, testExposition)
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
# HELP scaleplane_scrape_failures_total Scrapes that failed, by reason (connection, timeout, http_status, body_too_large, parse_error, sample_limit, label_limit, invalid_target); the target's series end with a staleness marker.
# TYPE scaleplane_scrape_failures_total counter
scaleplane_scrape_failures_total{reason="body_too_large"} 0
scaleplane_scrape_failures_total{reason="connection"} 2
scaleplane_scrape_failures_total{reason="http_status"} 0
scaleplane_scrape_failures_total{reason="invalid_target"} 0
scaleplane_scrape_failures_total{reason="label_limit"} 0
scaleplane_scrape_failures_total{reason="parse_error"} 0
scaleplane_scrape_failures_total{reason="sample_limit"} 0
scaleplane_scrape_failures_total{reason="timeout"} 0
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
# HELP scaleplane_store_used_bytes What the embedded metrics store charges against metrics.maxStoreBytes (labels, per-series bookkeeping and chunks) after the latest scrape cycle.
# TYPE scaleplane_store_used_bytes gauge
scaleplane_store_used_bytes %d
# HELP scaleplane_store_refused_series_total New series the embedded store refused, by reason: it held metrics.maxSeries series (max_series), metrics.maxSeriesPerNamespace series of the sample's namespace (max_series_per_namespace), metrics.maxStoreBytes bytes (max_bytes) or metrics.maxStoreBytesPerNamespace bytes of the sample's namespace (max_bytes_per_namespace).
# TYPE scaleplane_store_refused_series_total counter
scaleplane_store_refused_series_total{reason="max_bytes"} 0
scaleplane_store_refused_series_total{reason="max_bytes_per_namespace"} 0
scaleplane_store_refused_series_total{reason="max_series"} 0
scaleplane_store_refused_series_total{reason="max_series_per_namespace"} 0
# HELP scaleplane_store_refused_samples_total Samples of existing series the embedded store refused while it was past metrics.maxStoreBytes.
# TYPE scaleplane_store_refused_samples_total counter
scaleplane_store_refused_samples_total 0
`, u.Bytes, u.Samples, u.Series, u.UsedBytes)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricScrapes, MetricScrapeFailures, MetricScrapeTargets, MetricStoreSeries,
		MetricStoreSamples, MetricStoreBytes, MetricStoreUsedBytes, MetricStoreRefused, MetricStoreRefusedSamples); err != nil {
		t.Error(err)
	}
	// Three series kept (queue_items, two http_requests_total), two samples
	// each; the store charges them their labels, bookkeeping and chunks.
	if diff := cmp.Diff(Usage{Series: 3, Samples: 6, Bytes: u.Bytes, UsedBytes: u.UsedBytes}, u); diff != "" || u.Bytes == 0 || u.UsedBytes < 3*seriesOverhead+int64(u.Bytes) {
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
