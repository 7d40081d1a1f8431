package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/credentials"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/externalscaler"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// triggerPipeline is what both the validating webhook and the autoscaler
// need of the metrics pipeline: the embedded store and its evaluator, and
// the trigger sources over them.
type triggerPipeline struct {
	store   *promql.Store
	eval    *promql.Evaluator
	sources *scaling.Sources
	// fair shares the evaluation slots and budgets among namespaces
	// (Config.Autoscaler.Fairness); every source evaluates under it.
	fair *promql.Fair
}

// newTriggerPipeline builds the embedded store (Config.Metrics), the PromQL
// evaluator, the remote source when Config.Autoscaler.PrometheusURL is set,
// and this App's trigger sources over them ("cron", "promql", and
// "prometheus", then the default), all held to the configured query limits.
func newTriggerPipeline(opts Options) (*triggerPipeline, error) {
	cfg := opts.Config
	store := promql.NewStore(storeOptions(cfg))
	limits := queryLimits(cfg)
	eval := promql.NewEvaluator(store, promql.EvaluatorOptions{Limits: limits})
	fair, err := promql.NewFair(fairOptions(cfg))
	if err != nil {
		return nil, err
	}
	var remote promql.Source
	if url := cfg.Autoscaler.PrometheusURL; url != "" {
		r, err := promql.NewRemote(promql.RemoteOptions{URL: url, Limits: limits})
		if err != nil {
			return nil, fmt.Errorf("autoscaler.prometheusURL: %w", err)
		}
		remote = promql.FairSource(r, fair)
	}
	sources, err := autoscaler.NewSources(promql.FairSource(eval, fair), remote, limits)
	if err != nil {
		return nil, err
	}
	return &triggerPipeline{store: store, eval: eval, sources: sources, fair: fair}, nil
}

// setupAutoscaler wires the trigger autoscaler and its metrics pipeline
// into mgr: the scraper (a leader-only Runnable fed by the autoscaler's
// Discoverer), the autoscaler's controllers over pipe's sources, and the
// endpoints on the metrics server: /debug/promql/eval, /debug/store,
// /debug/autoscaler/... and /activity/....
//
// The endpoints are added with AddMetricsServerExtraHandler, which works
// until Run; the metrics server (servers.go) serves them behind the same
// limits and, outside dev, the same authentication and authorization as
// /metrics.
func setupAutoscaler(mgr manager.Manager, opts Options, views []*profile.Compiled, pipe *triggerPipeline) (*autoscaler.Autoscaler, error) {
	cfg := opts.Config
	store, eval := pipe.store, pipe.eval
	limits := eval.Limits()
	as, err := autoscaler.New(autoscaler.Options{
		Views:           views,
		Sources:         pipe.sources,
		PollingInterval: seconds(cfg.Autoscaler.PollingIntervalSeconds),
		SampleTimeout:   limits.Timeout,
		TickTimeout:     seconds(cfg.Autoscaler.Queries.TickTimeoutSeconds),
		RequestQueries:  store.Registry().SetOwner,
		// Scalings of cluster-scoped workloads live beside scaleplane.
		Namespace: opts.Namespace,
		// The HPA controllers' owner: another owner's HPA is foreign to both.
		Owner: cfg.Webhook.Owner,
		// Several managers in one process (tests) need distinct names.
		SkipNameValidation: opts.SkipControllerNameValidation,
	})
	if err != nil {
		return nil, err
	}
	discoverer := as.Discoverer()
	if ec := cfg.Autoscaler.ExternalScaler; ec.BindAddress != "" {
		ext, err := externalscaler.New(externalscaler.Options{
			// The sources the autoscaler builds its scalers with, so KEDA's
			// answers come from the same evaluation and limits.
			Sources: pipe.sources,
			Reader:  mgr.GetCache(),
			// Its targets' pods are scraped and labelled as the
			// autoscaler's own workloads' are.
			Targets: as,
			// Live kinds too: the autoscaler's kinds now, on the leader
			// where this server runs.
			Kinds:          as.Kinds,
			Request:        store.Registry().SetOwner,
			SampleTimeout:  limits.Timeout,
			StreamInterval: seconds(cfg.Autoscaler.PollingIntervalSeconds),
			// The calls' slots are shared by namespace as the sources'
			// are (pipe.fair).
			MaxEvaluations:             cfg.Autoscaler.Fairness.EvaluationSlots,
			MaxEvaluationsPerNamespace: cfg.Autoscaler.Fairness.EvaluationSlotsPerNamespace,
			// Room for the longest query the limits allow, and KEDA's keys.
			MaxMetadataBytes: max(64<<10, limits.MaxQueryLength+16<<10),
			Log:              mgr.GetLogger().WithName("external-scaler"),
		})
		if err != nil {
			return nil, err
		}
		if err := mgr.Add(&externalScalerRunnable{srv: ext, addr: ec.BindAddress, certDir: ec.CertDir}); err != nil {
			return nil, fmt.Errorf("add external scaler: %w", err)
		}
		pods := promql.PodDiscoverer{Client: mgr.GetCache(), Workloads: ext.ScrapeWorkloads}
		triggers := discoverer
		discoverer = promql.DiscovererFunc(func(ctx context.Context) ([]promql.Target, error) {
			a, err := triggers.Targets(ctx)
			if err != nil {
				return nil, err
			}
			b, err := pods.Targets(ctx)
			return append(a, b...), err
		})
	}
	so := scraperOptions(cfg)
	so.Store = store
	so.Discoverer = discoverer
	so.Log = mgr.GetLogger().WithName("scraper")
	// Served by the manager's metrics server, next to controller-runtime's
	// own metrics.
	so.Registerer = metrics.Registry
	scraper, err := promql.NewScraper(so)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(scraper); err != nil {
		return nil, fmt.Errorf("add scraper: %w", err)
	}
	if err := as.SetupWithManager(mgr); err != nil {
		return nil, err
	}

	debug, err := promql.NewDebugHandler(store, eval, scraper, promql.DebugOptions{
		Dev: opts.Dev,
		// Outside dev the metrics server authenticates and authorizes
		// every request (servers.go); filtering here again would cost a
		// second TokenReview and SubjectAccessReview per request.
		Filter: filteredByMetricsServer,
		Log:    mgr.GetLogger().WithName("debug"),
		Limits: limits,
	})
	if err != nil {
		return nil, fmt.Errorf("debug endpoints: %w", err)
	}
	handlers := map[string]http.Handler{
		promql.DebugEvalPath:    debug,
		promql.DebugStorePath:   debug,
		autoscaler.ExplainPath:  as.Handler(),
		autoscaler.ActivityPath: as.Handler(),
	}
	for path, h := range handlers {
		if err := mgr.AddMetricsServerExtraHandler(path, h); err != nil {
			return nil, fmt.Errorf("serve %s on the metrics server: %w", path, err)
		}
	}
	return as, nil
}

// externalScalerRunnable serves the KEDA external scaler on the elected
// leader only: the scraper and the embedded store run there, so another
// replica would answer "no data".
type externalScalerRunnable struct {
	srv     *externalscaler.Server
	addr    string
	certDir string
}

func (r *externalScalerRunnable) Start(ctx context.Context) error {
	var creds credentials.TransportCredentials
	if r.certDir != "" {
		cfg, watch, err := externalscaler.ServerTLS(r.certDir)
		if err != nil {
			return err
		}
		go func() { _ = watch(ctx) }()
		creds = credentials.NewTLS(cfg)
	}
	lis, err := net.Listen("tcp", r.addr)
	if err != nil {
		return fmt.Errorf("external scaler: %w", err)
	}
	return r.srv.Serve(ctx, lis, creds)
}

func (r *externalScalerRunnable) NeedLeaderElection() bool { return true }

// queryLimits are the bounds of trigger queries (V10) the configuration
// sets; a range selector's points are counted at the scrape interval.
func queryLimits(cfg *configv1alpha2.Configuration) promql.Limits {
	q := cfg.Autoscaler.Queries
	return promql.Limits{
		MaxQueryLength:     q.MaxLength,
		MaxDepth:           q.MaxDepth,
		MaxPointsPerSeries: q.MaxPointsPerSeries,
		MaxRegexSize:       q.MaxRegexSize,
		MaxSamples:         q.MaxSamples,
		Timeout:            seconds(q.TimeoutSeconds),
		ScrapeInterval:     seconds(cfg.Metrics.ScrapeIntervalSeconds),
	}.WithDefaults()
}

// storeOptions are the embedded store's bounds the configuration sets.
func storeOptions(cfg *configv1alpha2.Configuration) promql.Options {
	m := cfg.Metrics
	return promql.Options{Retention: seconds(m.RetentionSeconds), MaxSeries: m.MaxSeries, MaxSeriesPerNamespace: m.MaxSeriesPerNamespace,
		MaxBytes: m.MaxStoreBytes, MaxBytesPerNamespace: m.MaxStoreBytesPerNamespace}
}

// fairOptions are the evaluation slots' shares and the namespaces' budgets
// the configuration sets; the metrics join controller-runtime's registry,
// served on the metrics server.
func fairOptions(cfg *configv1alpha2.Configuration) promql.FairOptions {
	f := cfg.Autoscaler.Fairness
	return promql.FairOptions{Slots: f.EvaluationSlots, SlotsPerNamespace: f.EvaluationSlotsPerNamespace, MaxWaitingPerNamespace: f.MaxWaitingPerNamespace,
		SamplesPerMinute: f.SamplesPerMinute, EvalTimePerMinute: seconds(f.EvalSecondsPerMinute), Registerer: metrics.Registry}
}

// scraperOptions are the scraper's interval and per-scrape bounds the
// configuration sets.
func scraperOptions(cfg *configv1alpha2.Configuration) promql.ScraperOptions {
	m := cfg.Metrics
	return promql.ScraperOptions{
		Interval:              seconds(m.ScrapeIntervalSeconds),
		MaxBodyBytes:          m.BodySizeLimitBytes,
		SampleLimit:           m.SampleLimit,
		LabelLimit:            m.LabelLimit,
		LabelNameLengthLimit:  m.LabelNameLengthLimit,
		LabelValueLengthLimit: m.LabelValueLengthLimit,
	}
}

// filteredByMetricsServer is the identity filter: the handler it is given
// is served only behind the metrics server's own filter.
func filteredByMetricsServer(_ logr.Logger, h http.Handler) (http.Handler, error) { return h, nil }

// seconds turns a configuration's seconds into a duration; 0 stays 0, which
// every consumer reads as its default.
func seconds(n int32) time.Duration { return time.Duration(n) * time.Second }
