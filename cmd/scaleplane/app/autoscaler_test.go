package app

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// TestV10QueryLimitsFromConfig: the configuration's query bounds reach the
// limits every consumer applies, and config's documented defaults are
// package promql's (config cannot import promql, so the numbers are kept
// twice).
func TestV10QueryLimitsFromConfig(t *testing.T) {
	c := &configv1alpha2.Configuration{}
	c.Default()
	if diff := cmp.Diff(promql.Limits{ScrapeInterval: promql.DefaultScrapeInterval}.WithDefaults(), queryLimits(c)); diff != "" {
		t.Errorf("limits of a defaulted configuration (-promql defaults +config defaults):\n%s", diff)
	}
	c.Autoscaler.Queries = configv1alpha2.Queries{MaxLength: 1, MaxDepth: 2, MaxPointsPerSeries: 3, MaxRegexSize: 4, MaxSamples: 5, TimeoutSeconds: 6, TickTimeoutSeconds: 7}
	c.Metrics.ScrapeIntervalSeconds = 8
	want := promql.Limits{MaxQueryLength: 1, MaxDepth: 2, MaxPointsPerSeries: 3, MaxRegexSize: 4, MaxSamples: 5, Timeout: 6 * time.Second, ScrapeInterval: 8 * time.Second}
	if diff := cmp.Diff(want, queryLimits(c)); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}

// TestScrapeLimitsFromConfig: the configuration's store and scrape
// bounds reach the store and the scraper, and config's documented defaults
// are package promql's.
func TestScrapeLimitsFromConfig(t *testing.T) {
	c := &configv1alpha2.Configuration{}
	c.Default()
	type bounds struct {
		Store                                 promql.Options
		Body                                  int64
		Samples, Labels, NameLen, ValueLength int
	}
	got := func(c *configv1alpha2.Configuration) bounds {
		so := scraperOptions(c)
		return bounds{storeOptions(c), so.MaxBodyBytes, so.SampleLimit, so.LabelLimit, so.LabelNameLengthLimit, so.LabelValueLengthLimit}
	}
	defaults := bounds{promql.Options{Retention: promql.DefaultRetention, MaxSeries: promql.DefaultMaxSeries, MaxSeriesPerNamespace: promql.DefaultMaxSeries / 4, MaxBytes: promql.DefaultMaxBytes, MaxBytesPerNamespace: promql.DefaultMaxBytes / 4},
		promql.DefaultMaxBodyBytes, promql.DefaultSampleLimit, promql.DefaultLabelLimit, promql.DefaultLabelNameLengthLimit, promql.DefaultLabelValueLengthLimit}
	if diff := cmp.Diff(defaults, got(c)); diff != "" {
		t.Errorf("bounds of a defaulted configuration (-promql defaults +config defaults):\n%s", diff)
	}
	c.Metrics = configv1alpha2.Metrics{ScrapeIntervalSeconds: 1, RetentionSeconds: 2, MaxSeries: 3, MaxSeriesPerNamespace: 10, MaxStoreBytes: 4, MaxStoreBytesPerNamespace: 11, BodySizeLimitBytes: 5,
		SampleLimit: 6, LabelLimit: 7, LabelNameLengthLimit: 8, LabelValueLengthLimit: 9}
	want := bounds{promql.Options{Retention: 2 * time.Second, MaxSeries: 3, MaxSeriesPerNamespace: 10, MaxBytes: 4, MaxBytesPerNamespace: 11}, 5, 6, 7, 8, 9}
	if diff := cmp.Diff(want, got(c)); diff != "" {
		t.Errorf("bounds (-want +got):\n%s", diff)
	}
}

// TestTriggerSourcesPerApp: each App builds its own trigger sources (two
// managers in one process no longer share a process-wide registry), with
// "cron" and "promql", "prometheus" only with a server, which is then the
// default.
func TestTriggerSourcesPerApp(t *testing.T) {
	c := &configv1alpha2.Configuration{}
	c.Default()
	a, err := newTriggerPipeline(Options{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	withRemote := &configv1alpha2.Configuration{Autoscaler: configv1alpha2.Autoscaler{PrometheusURL: "http://127.0.0.1:9090"}}
	withRemote.Default()
	b, err := newTriggerPipeline(Options{Config: withRemote})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.sources.Register("only-in-a", scaling.CronSource()); err != nil {
		t.Fatal(err)
	}
	type view struct {
		Names   []string
		Default string
	}
	got := []view{{a.sources.Names(), a.sources.Default()}, {b.sources.Names(), b.sources.Default()}}
	want := []view{
		{[]string{"cron", "only-in-a", "promql"}, "promql"},
		{[]string{"cron", "prometheus", "promql"}, "prometheus"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sources of two apps (-want +got):\n%s", diff)
	}
}
