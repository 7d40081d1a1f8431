package promql

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Metric names the scraper publishes when ScraperOptions.Registerer is set;
// config/prometheus's alerts and dashboard use them.
const (
	MetricScrapeTargets  = "scaleplane_scrape_targets"
	MetricScrapes        = "scaleplane_scrapes_total"
	MetricScrapeFailures = "scaleplane_scrape_failures_total"
	MetricScrapeDuration = "scaleplane_scrape_duration_seconds"
	MetricStoreSeries    = "scaleplane_store_series"
	MetricStoreSamples   = "scaleplane_store_samples"
	MetricStoreBytes     = "scaleplane_store_bytes"
	MetricStoreRefused   = "scaleplane_store_refused_series_total"
	// MetricStoreRefusedSamples counts samples of existing series refused
	// while the store was past metrics.maxStoreBytes.
	MetricStoreRefusedSamples = "scaleplane_store_refused_samples_total"
	// MetricStoreUsedBytes is what the store charges against
	// metrics.maxStoreBytes.
	MetricStoreUsedBytes = "scaleplane_store_used_bytes"
	healthLabel          = "health"
	reasonLabel          = "reason"
)

// Why a scrape failed: the reason label of scaleplane_scrape_failures_total.
const (
	// FailureInvalidTarget: the pod's annotations do not make a URL.
	FailureInvalidTarget = "invalid_target"
	// FailureConnection: no HTTP answer (refused, reset, DNS, TLS).
	FailureConnection = "connection"
	// FailureTimeout: no answer, or no whole body, within the timeout.
	FailureTimeout = "timeout"
	// FailureHTTPStatus: an answer other than 200.
	FailureHTTPStatus = "http_status"
	// FailureBodyTooLarge: more than metrics.bodySizeLimitBytes.
	FailureBodyTooLarge = "body_too_large"
	// FailureParse: not the Prometheus text format.
	FailureParse = "parse_error"
	// FailureSampleLimit: more samples of requested names than
	// metrics.sampleLimit.
	FailureSampleLimit = "sample_limit"
	// FailureLabelLimit: a requested series over metrics.labelLimit,
	// labelNameLengthLimit or labelValueLengthLimit.
	FailureLabelLimit = "label_limit"
)

var failureReasons = []string{FailureInvalidTarget, FailureConnection, FailureTimeout, FailureHTTPStatus,
	FailureBodyTooLarge, FailureParse, FailureSampleLimit, FailureLabelLimit}

// Why the store refused a new series: the reason label of
// scaleplane_store_refused_series_total.
const (
	RefusedMaxSeries             = "max_series"
	RefusedMaxBytes              = "max_bytes"
	RefusedMaxSeriesPerNamespace = "max_series_per_namespace"
	RefusedMaxBytesPerNamespace  = "max_bytes_per_namespace"
)

// scraperMetrics are a scraper's and its store's numbers. Every series,
// each reason of the labelled ones included, is exported at zero from the
// start, so an alert on a ratio has both sides before the first scrape;
// only the leader scrapes, so the other replicas keep reporting zero.
type scraperMetrics struct {
	scrapes         prometheus.Counter
	failures        *prometheus.CounterVec
	duration        prometheus.Histogram
	targets         *prometheus.GaugeVec
	series, samples prometheus.Gauge
	bytes, used     prometheus.Gauge
	refused         *prometheus.CounterVec
	refusedSamples  prometheus.Counter
	// last are the store's refusal counts at the previous cycle: the
	// store counts, the metrics add what changed.
	last Usage
}

func newScraperMetrics(reg prometheus.Registerer) (*scraperMetrics, error) {
	m := &scraperMetrics{
		scrapes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricScrapes,
			Help: "Scrapes of workload pods by scaleplane's metrics pipeline.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricScrapeFailures,
			Help: "Scrapes that failed, by reason (connection, timeout, http_status, body_too_large, parse_error, sample_limit, label_limit, invalid_target); the target's series end with a staleness marker.",
		}, []string{reasonLabel}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricScrapeDuration,
			Help:    "Time one scrape of a pod took, fetch and parse included.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}),
		targets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricScrapeTargets,
			Help: "Scrape targets after the latest cycle, by health (up, down, unknown before their first scrape).",
		}, []string{healthLabel}),
		series: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricStoreSeries,
			Help: "Series in the embedded metrics store after the latest scrape cycle.",
		}),
		samples: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricStoreSamples,
			Help: "Samples (staleness markers included) in the embedded metrics store after the latest scrape cycle.",
		}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricStoreBytes,
			Help: "Bytes of encoded chunks in the embedded metrics store after the latest scrape cycle.",
		}),
		used: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricStoreUsedBytes,
			Help: "What the embedded metrics store charges against metrics.maxStoreBytes (labels, per-series bookkeeping and chunks) after the latest scrape cycle.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricStoreRefused,
			Help: "New series the embedded store refused, by reason: it held metrics.maxSeries series (max_series), metrics.maxSeriesPerNamespace series of the sample's namespace (max_series_per_namespace), metrics.maxStoreBytes bytes (max_bytes) or metrics.maxStoreBytesPerNamespace bytes of the sample's namespace (max_bytes_per_namespace).",
		}, []string{reasonLabel}),
		refusedSamples: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricStoreRefusedSamples,
			Help: "Samples of existing series the embedded store refused while it was past metrics.maxStoreBytes.",
		}),
	}
	for _, h := range []Health{HealthUp, HealthDown, HealthUnknown} {
		m.targets.WithLabelValues(string(h))
	}
	for _, r := range failureReasons {
		m.failures.WithLabelValues(r)
	}
	for _, r := range []string{RefusedMaxSeries, RefusedMaxBytes, RefusedMaxSeriesPerNamespace, RefusedMaxBytesPerNamespace} {
		m.refused.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	m.scrapes, errs = register(reg, m.scrapes, errs)
	m.failures, errs = register(reg, m.failures, errs)
	m.duration, errs = register(reg, m.duration, errs)
	m.targets, errs = register(reg, m.targets, errs)
	m.series, errs = register(reg, m.series, errs)
	m.samples, errs = register(reg, m.samples, errs)
	m.bytes, errs = register(reg, m.bytes, errs)
	m.used, errs = register(reg, m.used, errs)
	m.refused, errs = register(reg, m.refused, errs)
	m.refusedSamples, errs = register(reg, m.refusedSamples, errs)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register scraper metrics: %w", err)
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// its name: a process that builds several scrapers (tests, a restarted
// manager) keeps counting in the same series.
func register[T prometheus.Collector](reg prometheus.Registerer, c T, errs []error) (T, []error) {
	err := reg.Register(c)
	if err == nil {
		return c, errs
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, errs
		}
	}
	return c, append(errs, err)
}

func (m *scraperMetrics) observeScrape(seconds float64, err error) {
	m.scrapes.Inc()
	if err != nil {
		m.failures.WithLabelValues(failureReason(err)).Inc()
	}
	m.duration.Observe(seconds)
}

// observeCycle publishes target health and the store's size after a cycle.
func (m *scraperMetrics) observeCycle(health []TargetHealth, u Usage) {
	counts := map[Health]int{HealthUp: 0, HealthDown: 0, HealthUnknown: 0}
	for _, h := range health {
		counts[h.Health]++
	}
	for h, n := range counts {
		m.targets.WithLabelValues(string(h)).Set(float64(n))
	}
	m.series.Set(float64(u.Series))
	m.samples.Set(float64(u.Samples))
	m.bytes.Set(float64(u.Bytes))
	m.used.Set(float64(u.UsedBytes))
	// Several scrapers (tests) may share the counters; each adds what its
	// own store refused since its previous cycle.
	if d := u.RefusedSeries - m.last.RefusedSeries; d > 0 {
		m.refused.WithLabelValues(RefusedMaxSeries).Add(float64(d))
	}
	if d := u.RefusedSeriesForBytes - m.last.RefusedSeriesForBytes; d > 0 {
		m.refused.WithLabelValues(RefusedMaxBytes).Add(float64(d))
	}
	if d := u.RefusedSeriesForNamespace - m.last.RefusedSeriesForNamespace; d > 0 {
		m.refused.WithLabelValues(RefusedMaxSeriesPerNamespace).Add(float64(d))
	}
	if d := u.RefusedSeriesForNamespaceBytes - m.last.RefusedSeriesForNamespaceBytes; d > 0 {
		m.refused.WithLabelValues(RefusedMaxBytesPerNamespace).Add(float64(d))
	}
	if d := u.RefusedSamples - m.last.RefusedSamples; d > 0 {
		m.refusedSamples.Add(float64(d))
	}
	m.last = u
}

// Usage is the store's size: cheap enough to read after every scrape
// cycle, unlike Stats, which decodes every timestamp.
type Usage struct {
	Series  int
	Samples int
	// Bytes are the encoded chunks' bytes; UsedBytes is what the store
	// charges against Options.MaxBytes (labels, bookkeeping and chunks).
	Bytes     int
	UsedBytes int64
	// RefusedSeries counts new series refused at Options.MaxSeries,
	// RefusedSeriesForBytes those refused at Options.MaxBytes,
	// RefusedSeriesForNamespace those refused at
	// Options.MaxSeriesPerNamespace, RefusedSeriesForNamespaceBytes those
	// refused at Options.MaxBytesPerNamespace, and RefusedSamples the
	// samples refused while the store or the namespace was past its bytes.
	RefusedSeries, RefusedSeriesForBytes, RefusedSeriesForNamespace, RefusedSeriesForNamespaceBytes, RefusedSamples uint64
}

// Usage counts the store's series, samples and encoded bytes from chunk
// headers, without decoding samples.
func (s *Store) Usage() Usage {
	u := Usage{
		RefusedSeries:                  s.refused.Load(),
		RefusedSeriesForBytes:          s.refusedBytes.Load(),
		RefusedSeriesForNamespace:      s.refusedNamespace.Load(),
		RefusedSeriesForNamespaceBytes: s.refusedNamespaceBytes.Load(),
		RefusedSamples:                 s.refusedSamples.Load(),
		UsedBytes:                      s.used.Load(),
	}
	s.mtx.RLock()
	defer s.mtx.RUnlock()
	s.eachSeries(func(ser *memSeries) {
		u.Series++
		ser.lock()
		var c closedChunk
		for rest := ser.closed(); rest != ""; {
			c, rest = nextClosed(rest, c.maxT)
			u.Bytes += len(c.data) - 1
			if chk, err := chunkenc.FromData(c.encoding(), c.bytes()); err == nil {
				u.Samples += chk.NumSamples()
			}
		}
		if _, b, n, _, _, ok := ser.head(); ok {
			u.Bytes += len(b)
			u.Samples += n
		}
		ser.unlock()
	})
	return u
}
