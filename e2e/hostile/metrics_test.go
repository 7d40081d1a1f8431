package hostile

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/scaleplane/scaleplane/promql"
)

// metricsReport checks that the binary's /metrics show what the suite
// threw at it: the servers' own refusals (too large, too slow, too many),
// the review transport's, the webhooks' denials, the scrapes that failed
// by reason and the series the store refused. Each count must be at least
// what the suite itself saw, so none is left uncounted.
func (s *suite) metricsReport(t *testing.T) {
	t.Helper()
	families, err := s.scrapeMetrics()
	if err != nil {
		t.Fatal(err)
	}
	sum := func(name string, want map[string]string) int { return int(sumOf(families, name, want)) }
	type check struct {
		What         string
		AtLeast, Got int
	}
	refused := func(server, code string) int {
		return sum("scaleplane_http_requests_refused_total", map[string]string{"server": server, "code": code})
	}
	transport := func(code string) int {
		return sum("scaleplane_admission_requests_refused_total", map[string]string{"code": code})
	}
	s.mu.Lock()
	tooMany, down := s.tooMany, s.scrapeDown
	s.mu.Unlock()
	// failed is what the scraper counted under reason; every target the
	// suite saw down was scraped (and failed) at least once.
	failed := func(reason string) int {
		return sum(promql.MetricScrapeFailures, map[string]string{"reason": reason})
	}
	checks := []check{
		// The 8 MiB bodies, declared and chunked.
		{"webhook server: 413 too large", 2, refused("webhook", "413")},
		// The slow body and the 50 slow clients.
		{"webhook server: 408 too slow", 51, refused("webhook", "408")},
		{"webhook server: 429 at a bound", tooMany["webhook"], refused("webhook", "429")},
		// The 2 MiB bodies to the eval and activity endpoints.
		{"metrics server: 413 too large", 2, refused("metrics", "413")},
		{"metrics server: 429 at a bound", tooMany["metrics"], refused("metrics", "429")},
		// The raw reviews the transport refused: methods, content types,
		// and bodies that are no API server's review.
		{"review transport: 405", 2, transport("405")},
		{"review transport: 415", 3, transport("415")},
		{"review transport: 400", 15, transport("400")},
		{"webhooks: reviews denied", 1, sum("scaleplane_admission_reviews_total", map[string]string{"result": "denied"})},
		{"scrapes failed: timeout", down["too slow"], failed(promql.FailureTimeout)},
		{"scrapes failed: body too large", down["too large"], failed(promql.FailureBodyTooLarge)},
		{"scrapes failed: parse error", down["malformed"], failed(promql.FailureParse)},
		{"scrapes failed: http status", down["status"], failed(promql.FailureHTTPStatus)},
		{"scrapes failed: invalid target", down["bad annotation"], failed(promql.FailureInvalidTarget)},
		{"scrapes failed: connection", down["refused"], failed(promql.FailureConnection)},
		{"scrapes failed: sample limit", down["sample limit"], failed(promql.FailureSampleLimit)},
		{"scrapes failed: label limit", down["label limit"], failed(promql.FailureLabelLimit)},
		// The churning targets of the store's byte budget: refused at the
		// whole store's or, first, at their namespace's share of it.
		{"store: series refused at its byte budget", 1, sum(promql.MetricStoreRefused, map[string]string{"reason": promql.RefusedMaxBytes}) +
			sum(promql.MetricStoreRefused, map[string]string{"reason": promql.RefusedMaxBytesPerNamespace})},
	}
	var short []check
	for _, c := range checks {
		if c.Got < c.AtLeast {
			short = append(short, c)
		}
	}
	if diff := cmp.Diff([]check(nil), short); diff != "" {
		t.Errorf("metrics that count less than the suite saw answered (-want +got):\n%s", diff)
	}
	for _, c := range checks {
		t.Logf("metrics: %-35s %s", c.What, fmt.Sprintf("%d (the suite saw at least %d)", c.Got, c.AtLeast))
	}
}

// scrapeMetrics reads the binary's /metrics.
func (s *suite) scrapeMetrics() (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.bin.metricsBase+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.metrics.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return families, nil
}

// sumOf adds the counters (or gauges) of name whose labels include want.
func sumOf(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	for _, m := range families[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && have[k] == v
		}
		if match {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}
