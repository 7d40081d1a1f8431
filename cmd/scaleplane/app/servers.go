package app

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/serving"
	"github.com/scaleplane/scaleplane/serving/metricsauth"
	"github.com/scaleplane/scaleplane/webhooks"
)

// limits turns a server's configured limits into serving's.
func limits(l configv1alpha2.ServerLimits, http2 bool) serving.Limits {
	return serving.Limits{
		ReadHeaderTimeout: seconds(l.ReadHeaderTimeoutSeconds),
		ReadTimeout:       seconds(l.ReadTimeoutSeconds),
		HandlerTimeout:    seconds(l.HandlerTimeoutSeconds),
		WriteTimeout:      seconds(l.WriteTimeoutSeconds),
		IdleTimeout:       seconds(l.IdleTimeoutSeconds),
		MaxInFlight:       int(l.MaxInFlight),
		MaxBodyBytes:      l.MaxRequestBodyBytes,
		MaxBufferedBytes:  l.MaxBufferedBytes,
		HTTP2:             http2,
	}
}

// newWebhookServer is the manager's webhook server, bounded by the
// configuration's servers.webhook.
func newWebhookServer(cfg *configv1alpha2.Configuration) (*webhooks.Server, error) {
	wc := cfg.Webhook
	return webhooks.NewServer(webhooks.ServerOptions{
		Options: webhook.Options{Host: wc.Host, Port: wc.Port, CertDir: wc.CertDir},
		Limits:  limits(cfg.Servers.Webhook, cfg.Servers.EnableHTTP2),
	})
}

// servers collects what the packages New sets up register on the metrics
// and probe servers, which Run then serves. controller-runtime's own
// metrics and probe servers cannot be given limits (their http.Server has
// a 32 s header timeout and nothing else), so the manager runs neither and
// every package sees them through servedManager.
type servers struct {
	mu      sync.Mutex
	started bool
	healthz healthz.Handler
	readyz  healthz.Handler
	extra   map[string]http.Handler
	// metricsCert reloads the metrics server's certificate from
	// Options.MetricsCertDir when one is given; serve runs it.
	metricsCert *certwatcher.CertWatcher
}

func newServers() *servers {
	return &servers{
		healthz: healthz.Handler{Checks: map[string]healthz.Checker{}},
		readyz:  healthz.Handler{Checks: map[string]healthz.Checker{}},
		extra:   map[string]http.Handler{},
	}
}

var errServing = errors.New("the servers have started; add checks and handlers before Run")

func (s *servers) addCheck(h *healthz.Handler, name string, check healthz.Checker) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errServing
	}
	h.Checks[name] = check
	return nil
}

// servedManager is the manager as New and the packages it sets up see it:
// health checks and metrics-server handlers go to scaleplane's servers.
type servedManager struct {
	manager.Manager
	s *servers
}

func (m servedManager) AddHealthzCheck(name string, check healthz.Checker) error {
	return m.s.addCheck(&m.s.healthz, name, check)
}

func (m servedManager) AddReadyzCheck(name string, check healthz.Checker) error {
	return m.s.addCheck(&m.s.readyz, name, check)
}

func (m servedManager) AddMetricsServerExtraHandler(path string, h http.Handler) error {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	switch {
	case m.s.started:
		return errServing
	case path == "/metrics":
		return errors.New("/metrics is the metrics server's own path")
	case m.s.extra[path] != nil:
		return fmt.Errorf("a handler is already registered at %s", path)
	}
	m.s.extra[path] = h
	return nil
}

// metricsHandler serves /metrics from controller-runtime's registry and
// every extra handler.
func (s *servers) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	for path, h := range s.extra {
		mux.Handle(path, h)
	}
	return mux
}

// probesHandler serves /healthz and /readyz (and /readyz/<check> for one
// check), as controller-runtime's probe server does.
func (s *servers) probesHandler() http.Handler {
	mux := http.NewServeMux()
	for path, h := range map[string]*healthz.Handler{"/healthz": &s.healthz, "/readyz": &s.readyz} {
		mux.Handle(path, http.StripPrefix(path, h))
		mux.Handle(path+"/", http.StripPrefix(path, h))
	}
	return mux
}

// serve binds the metrics and probe addresses and adds their servers to
// the manager, which starts them first among its runnables. closeAll
// closes the listeners, for when the manager does not (it never started
// them).
func (a *App) serve() (closeAll func(), err error) {
	srvs, err := a.servers.build(a.opts, a.Manager.GetHTTPClient(), a.Manager.GetLogger())
	closeAll = func() {
		for _, s := range srvs {
			_ = s.Listener.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	for _, s := range srvs {
		if err := a.Manager.Add(s); err != nil {
			closeAll()
			return nil, fmt.Errorf("add the %s server: %w", s.Name, err)
		}
	}
	if cw := a.servers.metricsCert; cw != nil {
		if err := a.Manager.Add(cw); err != nil {
			closeAll()
			return nil, fmt.Errorf("add the metrics certificate watcher: %w", err)
		}
	}
	return closeAll, nil
}

// build returns the metrics and probe servers opts ask for, listening.
// Outside dev the metrics server is TLS with a self-signed certificate,
// behind Kubernetes authentication and authorization (httpClient reaches
// the API server). Checks and handlers cannot be added afterwards.
func (s *servers) build(opts Options, httpClient *http.Client, log logr.Logger) (srvs []*manager.Server, err error) {
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	defer func() {
		if err != nil {
			for _, s := range srvs {
				_ = s.Listener.Close()
			}
			srvs = nil
		}
	}()
	cfg := opts.Config.Servers
	add := func(name, addr string, h http.Handler, l serving.Limits, secure bool) error {
		srv, err := serving.NewServer(name, h, l)
		if err != nil {
			return err
		}
		var tc *tls.Config
		switch {
		case secure && name == "metrics" && opts.MetricsCertDir != "":
			// A certificate the user provides (--metrics-cert-path), reloaded
			// when it is renewed, as controller-runtime's metrics server does.
			cw, err := certwatcher.New(filepath.Join(opts.MetricsCertDir, opts.MetricsCertName), filepath.Join(opts.MetricsCertDir, opts.MetricsKeyName))
			if err != nil {
				return fmt.Errorf("%s server certificate: %w", name, err)
			}
			s.metricsCert = cw
			tc = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cw.GetCertificate}
			serving.NextProtos(l.HTTP2)(tc)
		case secure:
			if tc, err = serving.SelfSignedTLS(); err != nil {
				return fmt.Errorf("%s server: %w", name, err)
			}
			serving.NextProtos(l.HTTP2)(tc)
		}
		ln, err := serving.Listen(addr, tc)
		if err != nil {
			return fmt.Errorf("%s server: %w", name, err)
		}
		grace := l.WriteTimeout
		srvs = append(srvs, &manager.Server{Name: name, Server: srv, Listener: ln, ShutdownTimeout: &grace})
		return nil
	}
	if opts.MetricsAddr != "0" {
		h := s.metricsHandler()
		if !opts.Dev {
			auth, err := metricsauth.Authenticate(opts.RestConfig, httpClient, metricsauth.AuthOptions{Log: log.WithName("metrics-auth")})
			if err != nil {
				return nil, fmt.Errorf("metrics server authentication: %w", err)
			}
			h = auth(h)
		}
		if opts.OnMetricsRequest != nil {
			h = observed(h, opts.OnMetricsRequest)
		}
		if err := add("metrics", opts.MetricsAddr, h, limits(cfg.Metrics, cfg.EnableHTTP2), !opts.Dev); err != nil {
			return srvs, err
		}
	}
	if opts.ProbeAddr != "0" {
		// Probes are plain HTTP from the kubelet: no TLS, so no HTTP/2.
		if err := add("probes", opts.ProbeAddr, s.probesHandler(), limits(cfg.Probes, false), false); err != nil {
			return srvs, err
		}
	}
	return srvs, nil
}

// observed calls observe after h answered each request, with the status it
// wrote (200 when it wrote none).
func observed(h http.Handler, observe func(*http.Request, int)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		observe(r, sw.status)
	})
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's own writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
