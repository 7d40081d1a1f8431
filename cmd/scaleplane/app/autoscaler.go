package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/credentials"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/externalscaler"
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
	discoverer := as.Discoverer()
	if ec := cfg.Autoscaler.ExternalScaler; ec.BindAddress != "" {
		ext, err := externalscaler.New(externalscaler.Options{
			// The constructor the autoscaler builds its scalers with.
			NewScaler:      scaling.NewScaler,
			DefaultSource:  defaultSource,
			Reader:         mgr.GetCache(),
			Views:          views,
			Request:        store.Registry().SetOwner,
			StreamInterval: seconds(cfg.Autoscaler.PollingIntervalSeconds),
			Log:            mgr.GetLogger().WithName("external-scaler"),
		})
		if err != nil {
			return err
		}
		if err := mgr.Add(&externalScalerRunnable{srv: ext, addr: ec.BindAddress, certDir: ec.CertDir}); err != nil {
			return fmt.Errorf("add external scaler: %w", err)
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
	scraper, err := promql.NewScraper(promql.ScraperOptions{
		Store:      store,
		Discoverer: discoverer,
		Interval:   seconds(cfg.Metrics.ScrapeIntervalSeconds),
		Log:        mgr.GetLogger().WithName("scraper"),
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
		w, err := certwatcher.New(filepath.Join(r.certDir, "tls.crt"), filepath.Join(r.certDir, "tls.key"))
		if err != nil {
			return fmt.Errorf("external scaler certificate: %w", err)
		}
		go func() { _ = w.Start(ctx) }()
		creds = credentials.NewTLS(&tls.Config{GetCertificate: w.GetCertificate, MinVersion: tls.VersionTLS12})
	}
	lis, err := net.Listen("tcp", r.addr)
	if err != nil {
		return fmt.Errorf("external scaler: %w", err)
	}
	return r.srv.Serve(ctx, lis, creds)
}

func (r *externalScalerRunnable) NeedLeaderElection() bool { return true }

// filteredByMetricsServer is the identity filter: the handler it is given
// is served only behind the metrics server's own filter.
func filteredByMetricsServer(_ logr.Logger, h http.Handler) (http.Handler, error) { return h, nil }

// seconds turns a configuration's seconds into a duration; 0 stays 0, which
// every consumer reads as its default.
func seconds(n int32) time.Duration { return time.Duration(n) * time.Second }
