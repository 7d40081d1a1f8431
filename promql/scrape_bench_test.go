package promql

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// typicalExposition is what a pod of a web service exposes: Go runtime and
// process metrics, request counters and latency histograms per route, a few
// queues and a hundred application counters; 370 series, of which the
// triggers request three names (77 series).
func typicalExposition() string {
	var b strings.Builder
	b.WriteString("# HELP go_gc_duration_seconds A summary of the GC pause durations.\n# TYPE go_gc_duration_seconds summary\n")
	for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		fmt.Fprintf(&b, "go_gc_duration_seconds{quantile=%q} 4.1e-05\n", q)
	}
	b.WriteString("go_gc_duration_seconds_sum 0.0123\ngo_gc_duration_seconds_count 321\n")
	for i := range 40 {
		fmt.Fprintf(&b, "# HELP go_memstats_stat_%d_bytes A memory statistic.\n# TYPE go_memstats_stat_%d_bytes gauge\ngo_memstats_stat_%d_bytes %d\n", i, i, i, 1000000+i*4096)
	}
	for i := range 10 {
		fmt.Fprintf(&b, "# TYPE process_stat_%d gauge\nprocess_stat_%d %d.5\n", i, i, 1700000000+i)
	}
	routes := []string{"/", "/api/items", "/api/orders", "/healthz"}
	b.WriteString("# HELP http_requests_total Requests served.\n# TYPE http_requests_total counter\n")
	for _, r := range routes {
		for _, m := range []string{"GET", "POST"} {
			for _, c := range []string{"200", "404", "500"} {
				fmt.Fprintf(&b, "http_requests_total{code=%q,method=%q,route=%q} %d\n", c, m, r, len(r)*1000+len(c))
			}
		}
	}
	b.WriteString("# HELP http_request_duration_seconds Request latency.\n# TYPE http_request_duration_seconds histogram\n")
	les := []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"}
	for _, r := range routes {
		for i, le := range les {
			fmt.Fprintf(&b, "http_request_duration_seconds_bucket{route=%q,le=%q} %d\n", r, le, 100*(i+1))
		}
		fmt.Fprintf(&b, "http_request_duration_seconds_sum{route=%q} 123.456\nhttp_request_duration_seconds_count{route=%q} 1200\n", r, r)
	}
	b.WriteString("# TYPE queue_items gauge\n")
	for i := range 5 {
		fmt.Fprintf(&b, "queue_items{queue=\"q%d\"} %d\n", i, i*3)
	}
	for i := range 100 {
		fmt.Fprintf(&b, "# HELP app_events_%d_total Application events.\n# TYPE app_events_%d_total counter\napp_events_%d_total{kind=\"k\"} %d\n", i, i, i, i*7)
	}
	return b.String()
}

// typicalRequested are the names typical triggers select in
// typicalExposition.
var typicalRequested = []string{"http_requests_total", "http_request_duration_seconds_bucket", "queue_items"}

// bigExposition is as many distinct series of name as fit size bytes:
// what the hostile suite's cardinality bombs serve.
func bigExposition(name string, size int) string {
	var b strings.Builder
	b.Grow(size)
	for i := 0; b.Len() < size-64; i++ {
		fmt.Fprintf(&b, "%s{i=\"%d\"} 1\n", name, i)
	}
	return b.String()
}

// BenchmarkScrape measures one scrape of one target, fetch included (over
// loopback HTTP), into a store that requests typicalRequested:
//
//   - typical: a pod's typicalExposition (370 series, 77 requested);
//   - 10MiB-unrequested: 10 MiB of series of a name no trigger requests
//     (about 557,000 lines), which must cost a constant, not per series;
//   - 10MiB-requested: the same of a requested name, which the sample
//     limit refuses.
func BenchmarkScrape(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"typical", typicalExposition()},
		{"10MiB-unrequested", bigExposition("bench_unrequested", 10<<20)},
		{"10MiB-requested", bigExposition("queue_items", 10<<20)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(bc.body)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			clock := newFakeClock()
			store := NewStore(Options{Now: clock.now})
			store.Request(typicalRequested...)
			sc, err := NewScraper(ScraperOptions{Store: store, Discoverer: staticTargets(target(srv.URL+"/metrics", "p1")), Now: clock.now, MaxBodyBytes: 11 << 20})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				clock.step()
				sc.Cycle(context.Background())
			}
			b.StopTimer()
			h := sc.Health()[0]
			b.ReportMetric(float64(h.Samples), "kept/op")
			if h.Health != HealthUp {
				b.Logf("%s: %s: %s", bc.name, h.Health, h.LastError)
			}
		})
	}
}
