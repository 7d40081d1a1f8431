package autoscaler

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/scaleplane/scaleplane/promql"
)

// MetricsOptions configure NewWithMetrics. The zero value is the binary's
// defaults: a 15 s polling interval, pods scraped every 5 s, 30 minutes of
// samples, and the query limits of docs/profiles.md.
type MetricsOptions struct {
	// PollingInterval between evaluations of a workload's triggers.
	PollingInterval time.Duration
	// ScrapeInterval, Retention and MaxSeries bound the embedded store.
	ScrapeInterval time.Duration
	Retention      time.Duration
	MaxSeries      int
	// MaxSeriesPerNamespace bounds one namespace's series in the store,
	// so that one tenant's pods cannot take all of MaxSeries. Zero: a
	// quarter of MaxSeries; negative: no such bound.
	MaxSeriesPerNamespace int
	// PrometheusURL, when set, adds the "prometheus" source over that
	// server and makes it the default one.
	PrometheusURL string
	// Limits bound what one trigger query may cost (V10); zero fields take
	// the defaults.
	Limits promql.Limits
	// Owner is Options.Owner: the embedder's scaleplane.Options.Owner.
	Owner string
}

// NewWithMetrics builds the trigger autoscaler with everything it needs on
// mgr, in one call for an embedding operator: the embedded metric store,
// the scraper that fills it from the autoscaled workloads' pods (a
// leader-only runnable of mgr), the evaluator, and the trigger sources
// ("promql", "cron", and "prometheus" with PrometheusURL). Give the result
// to every kind (scaleplane's Builder.WithAutoscaler); each kind's loop is
// registered when the kind is set up. The scraper's own metrics join the
// manager's registry.
func NewWithMetrics(mgr manager.Manager, opts MetricsOptions) (*Autoscaler, error) {
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = 5 * time.Second
	}
	if opts.Retention <= 0 {
		opts.Retention = 30 * time.Minute
	}
	opts.Limits.ScrapeInterval = opts.ScrapeInterval
	limits := opts.Limits.WithDefaults()
	store := promql.NewStore(promql.Options{Retention: opts.Retention, MaxSeries: opts.MaxSeries, MaxSeriesPerNamespace: opts.MaxSeriesPerNamespace})
	eval := promql.NewEvaluator(store, promql.EvaluatorOptions{Limits: limits})
	// Every evaluation takes a slot of its namespace's fair share.
	fair, err := promql.NewFair(promql.FairOptions{Registerer: metrics.Registry})
	if err != nil {
		return nil, err
	}
	var remote promql.Source
	if opts.PrometheusURL != "" {
		r, err := promql.NewRemote(promql.RemoteOptions{URL: opts.PrometheusURL, Limits: limits})
		if err != nil {
			return nil, fmt.Errorf("autoscaler: PrometheusURL: %w", err)
		}
		remote = promql.FairSource(r, fair)
	}
	sources, err := NewSources(promql.FairSource(eval, fair), remote, limits)
	if err != nil {
		return nil, err
	}
	a, err := New(Options{
		Sources:         sources,
		PollingInterval: opts.PollingInterval,
		SampleTimeout:   limits.Timeout,
		RequestQueries:  store.Registry().SetOwner,
		Owner:           opts.Owner,
	})
	if err != nil {
		return nil, err
	}
	scraper, err := promql.NewScraper(promql.ScraperOptions{
		Store:      store,
		Discoverer: a.Discoverer(),
		Interval:   opts.ScrapeInterval,
		Registerer: metrics.Registry,
		Log:        mgr.GetLogger().WithName("scraper"),
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(scraper); err != nil {
		return nil, fmt.Errorf("autoscaler: add the scraper: %w", err)
	}
	return a, nil
}
