package app

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// setupAutoscaler wires the trigger autoscaler and its metrics pipeline
// into mgr: the embedded store (Config.Metrics), the PromQL evaluator, the
// remote source when Config.Autoscaler.PrometheusURL is set, the scraper
// (a leader-only Runnable fed by the autoscaler's Discoverer), the
// autoscaler's controllers, and the endpoints on the metrics server:
// /debug/promql/eval, /debug/store, /debug/autoscaler/... and /activity/....
//
// The endpoints are added with AddMetricsServerExtraHandler, which works
// until the manager starts; the metrics server wraps every extra handler
// with its FilterProvider (authentication and authorization outside dev),
// exactly as it wraps /metrics.
func setupAutoscaler(mgr manager.Manager, opts Options, views []*config.View) error {
	cfg := opts.Config
	store := promql.NewStore(promql.Options{
		Retention: seconds(cfg.Metrics.RetentionSeconds),
		MaxSeries: cfg.Metrics.MaxSeries,
	})
	eval := promql.NewEvaluator(store, promql.EvaluatorOptions{})
	defaultSource := scaling.SourcePromQL
	var remote promql.Source
	if url := cfg.Autoscaler.PrometheusURL; url != "" {
		r, err := promql.NewRemote(promql.RemoteOptions{URL: url})
		if err != nil {
			return fmt.Errorf("autoscaler.prometheusURL: %w", err)
		}
		remote, defaultSource = r, scaling.SourcePrometheus
	}
	// Trigger sources are registered process-wide (package scaling's
	// registry), which is what lets library users add their own.
	autoscaler.RegisterSources(eval, remote)

	as, err := autoscaler.New(autoscaler.Options{
		Views:           views,
		PollingInterval: seconds(cfg.Autoscaler.PollingIntervalSeconds),
		DefaultSource:   defaultSource,
		OnTriggerQuery:  store.RequestQuery,
		// Several managers in one process (tests) need distinct names.
		SkipNameValidation: opts.SkipControllerNameValidation,
	})
	if err != nil {
		return err
	}
	scraper, err := promql.NewScraper(promql.ScraperOptions{
		Store:      store,
		Discoverer: as.Discoverer(),
		Interval:   seconds(cfg.Metrics.ScrapeIntervalSeconds),
		Log:        mgr.GetLogger().WithName("scraper"),
		// Served by the manager's metrics server, next to
		// controller-runtime's own metrics.
		Registerer: metrics.Registry,
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(scraper); err != nil {
		return fmt.Errorf("add scraper: %w", err)
	}
	if err := as.SetupWithManager(mgr); err != nil {
		return err
	}

	debug, err := promql.NewDebugHandler(store, eval, scraper, promql.DebugOptions{
		Dev: opts.Dev,
		// Outside dev the metrics server's FilterProvider wraps every
		// extra handler (New sets it whenever Dev is false); filtering
		// here again would cost a second TokenReview and
		// SubjectAccessReview per request.
		Filter: filteredByMetricsServer,
		Log:    mgr.GetLogger().WithName("debug"),
	})
	if err != nil {
		return fmt.Errorf("debug endpoints: %w", err)
	}
	handlers := map[string]http.Handler{
		promql.DebugEvalPath:    debug,
		promql.DebugStorePath:   debug,
		autoscaler.ExplainPath:  as.Handler(),
		autoscaler.ActivityPath: as.Handler(),
	}
	for path, h := range handlers {
		if err := mgr.AddMetricsServerExtraHandler(path, h); err != nil {
			return fmt.Errorf("serve %s on the metrics server: %w", path, err)
		}
	}
	return nil
}

// filteredByMetricsServer is the identity filter: the handler it is given
// is served only behind the metrics server's own filter.
func filteredByMetricsServer(_ logr.Logger, h http.Handler) (http.Handler, error) { return h, nil }

// seconds turns a configuration's seconds into a duration; 0 stays 0, which
// every consumer reads as its default.
func seconds(n int32) time.Duration { return time.Duration(n) * time.Second }
