package app

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/promql"
)

// TestV10QueryLimitsFromConfig: the configuration's query bounds reach the
// limits every consumer applies, and config's documented defaults are
// package promql's (config cannot import promql, so the numbers are kept
// twice).
func TestV10QueryLimitsFromConfig(t *testing.T) {
	c := &config.Configuration{}
	c.Default()
	if diff := cmp.Diff(promql.Limits{ScrapeInterval: promql.DefaultScrapeInterval}.WithDefaults(), queryLimits(c)); diff != "" {
		t.Errorf("limits of a defaulted configuration (-promql defaults +config defaults):\n%s", diff)
	}
	c.Autoscaler.Queries = config.Queries{MaxLength: 1, MaxDepth: 2, MaxPointsPerSeries: 3, MaxRegexSize: 4, MaxSamples: 5, TimeoutSeconds: 6, TickTimeoutSeconds: 7}
	c.Metrics.ScrapeIntervalSeconds = 8
	want := promql.Limits{MaxQueryLength: 1, MaxDepth: 2, MaxPointsPerSeries: 3, MaxRegexSize: 4, MaxSamples: 5, Timeout: 6 * time.Second, ScrapeInterval: 8 * time.Second}
	if diff := cmp.Diff(want, queryLimits(c)); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}
