package promql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Target is one metrics endpoint to scrape.
type Target struct {
	// URL is the full endpoint, e.g. http://10.0.0.7:8080/metrics.
	URL string
	// Labels are added to every sample scraped from the target (namespace,
	// pod and the workload's labels). A scraped label with the same name is
	// kept as exported_<name>, as Prometheus does with honor_labels: false.
	Labels labels.Labels
	// Invalid, when set, says why the target cannot be scraped (e.g. a bad
	// prometheus.io/port annotation). It is reported as down with this
	// error instead of disappearing silently.
	Invalid string
}

func (t Target) key() string { return t.URL + t.Labels.String() }

// Discoverer lists the targets to scrape. It is called once per scrape
// cycle; an error keeps the previous cycle's targets.
type Discoverer interface {
	Targets(ctx context.Context) ([]Target, error)
}

// DiscovererFunc adapts a function to Discoverer.
type DiscovererFunc func(ctx context.Context) ([]Target, error)

// Targets implements Discoverer.
func (f DiscovererFunc) Targets(ctx context.Context) ([]Target, error) { return f(ctx) }

// ScraperOptions configures a Scraper. Store and Discoverer are required;
// every other zero value means the documented default.
type ScraperOptions struct {
	// Store receives the samples; only names in Store.Registry() are kept.
	Store *Store
	// Discoverer lists the targets each cycle.
	Discoverer Discoverer
	// Interval between cycle starts. Default 5 s, SlimFaas' rhythm.
	Interval time.Duration
	// Timeout bounds one target's scrape, so a slow pod costs one
	// concurrency slot for at most this long. Default 4 s; capped at
	// Interval.
	Timeout time.Duration
	// MaxBodyBytes bounds one (decompressed) response; a larger one fails
	// the scrape instead of filling memory. Default 10 MiB
	// (DefaultMaxBodyBytes), Prometheus' body_size_limit.
	MaxBodyBytes int64
	// SampleLimit bounds the samples of requested metric names in one
	// scrape, duplicates included; a scrape over it fails as a whole and
	// stores nothing, as with Prometheus' sample_limit. Samples of names
	// no trigger requested are not counted: they are skipped unbuilt.
	// Default DefaultSampleLimit; negative: no limit.
	SampleLimit int
	// LabelLimit, LabelNameLengthLimit and LabelValueLengthLimit bound
	// every requested series (its target labels and metric name
	// included): one over them fails the scrape, as Prometheus'
	// label_limit, label_name_length_limit and label_value_length_limit
	// do. They also bound the longest line of a requested series, which
	// bounds the scrape's read buffer. Defaults DefaultLabelLimit,
	// DefaultLabelNameLengthLimit, DefaultLabelValueLengthLimit;
	// negative: no limit.
	LabelLimit, LabelNameLengthLimit, LabelValueLengthLimit int
	// Concurrency is how many targets are scraped at once. Default 32.
	Concurrency int
	// Client performs the requests. Default: a client with no overall
	// timeout (Timeout is applied per request) that does not follow
	// redirects off the pod.
	Client *http.Client
	// Now stamps samples. Default time.Now.
	Now func() time.Time
	// Log receives one line per target state change. Default: discard.
	Log logr.Logger
	// Registerer receives the scraper's and the store's metrics (scrapes,
	// failures, duration, targets by health, store series, samples and
	// bytes; see metrics.go). Nil publishes none. Scrapers sharing a
	// registerer share the series.
	Registerer prometheus.Registerer
}

// Health is the state of one target after its latest scrape.
type Health string

// Target health values.
const (
	HealthUnknown Health = "unknown"
	HealthUp      Health = "up"
	HealthDown    Health = "down"
)

// TargetHealth is what GET /debug/store reports per target.
type TargetHealth struct {
	URL                 string            `json:"url"`
	Labels              map[string]string `json:"labels,omitempty"`
	Health              Health            `json:"health"`
	LastError           string            `json:"lastError,omitempty"`
	LastScrape          time.Time         `json:"lastScrape,omitzero"`
	LastDurationSeconds float64           `json:"lastDurationSeconds"`
	// Samples is how many samples the last scrape kept (requested names).
	Samples int `json:"samples"`
}

// Scraper scrapes every target once per Interval into the Store. It is a
// controller-runtime manager Runnable.
type Scraper struct {
	opts ScraperOptions

	mtx          sync.Mutex
	targets      map[string]*targetState
	discoveryErr error
	metrics      *scraperMetrics
	limits       scrapeLimits
}

type targetState struct {
	target Target
	// seen are the series of the previous successful scrape, by the hash
	// of their labels, as the store's references (the store holds their
	// labels); a series missing from the next one gets a staleness marker.
	seen   map[uint64]storage.SeriesRef
	health TargetHealth
}

// NewScraper validates opts and returns a scraper.
func NewScraper(opts ScraperOptions) (*Scraper, error) {
	if opts.Store == nil {
		return nil, errors.New("new scraper: Store is required")
	}
	if opts.Discoverer == nil {
		return nil, errors.New("new scraper: Discoverer is required")
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 4 * time.Second
	}
	opts.Timeout = min(opts.Timeout, opts.Interval)
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	defaultInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defaultInt(&opts.SampleLimit, DefaultSampleLimit)
	defaultInt(&opts.LabelLimit, DefaultLabelLimit)
	defaultInt(&opts.LabelNameLengthLimit, DefaultLabelNameLengthLimit)
	defaultInt(&opts.LabelValueLengthLimit, DefaultLabelValueLengthLimit)
	if opts.Concurrency <= 0 {
		opts.Concurrency = 32
	}
	if opts.Client == nil {
		opts.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	m, err := newScraperMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new scraper: %w", err)
	}
	return &Scraper{opts: opts, targets: map[string]*targetState{}, metrics: m, limits: newScrapeLimits(opts)}, nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader autoscales, so only the leader needs the samples.
func (*Scraper) NeedLeaderElection() bool { return true }

// Start runs a cycle every Interval until ctx ends. It implements
// manager.Runnable.
func (s *Scraper) Start(ctx context.Context) error {
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	for {
		s.Cycle(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Cycle discovers targets, scrapes them all (at most Concurrency at once),
// marks the series of vanished targets stale and trims the store. Start
// calls it every Interval; tests call it directly.
func (s *Scraper) Cycle(ctx context.Context) {
	targets, err := s.opts.Discoverer.Targets(ctx)

	s.mtx.Lock()
	s.discoveryErr = err
	var states []*targetState
	if err == nil {
		wanted := make(map[string]struct{}, len(targets))
		for _, t := range targets {
			k := t.key()
			wanted[k] = struct{}{}
			if _, ok := s.targets[k]; !ok {
				s.targets[k] = &targetState{target: t, health: TargetHealth{URL: t.URL, Labels: t.Labels.Map(), Health: HealthUnknown}}
			}
		}
		for k, st := range s.targets {
			if _, ok := wanted[k]; !ok {
				// The pod is gone: its series leave the store now, rather
				// than linger for the 5 minute lookback and hold their
				// bytes against the namespace's share until retention.
				s.dropSeries(st)
				delete(s.targets, k)
			}
		}
	} else {
		s.opts.Log.Error(err, "discover scrape targets; keeping the previous targets")
	}
	for _, st := range s.targets {
		states = append(states, st)
	}
	s.mtx.Unlock()

	sem := make(chan struct{}, s.opts.Concurrency)
	var wg sync.WaitGroup
	for _, st := range states {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.scrapeTarget(ctx, st)
		}()
	}
	wg.Wait()
	s.opts.Store.Trim()
	s.metrics.observeCycle(s.Health(), s.opts.Store.Usage())
}

// DiscoveryError is the error of the latest discovery, nil when it worked.
func (s *Scraper) DiscoveryError() error {
	s.mtx.Lock()
	defer s.mtx.Unlock()
	return s.discoveryErr
}

// Health returns every target's state, sorted by URL.
func (s *Scraper) Health() []TargetHealth {
	s.mtx.Lock()
	out := make([]TargetHealth, 0, len(s.targets))
	for _, st := range s.targets {
		out = append(out, st.health)
	}
	s.mtx.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out
}

func (s *Scraper) scrapeTarget(ctx context.Context, st *targetState) {
	start := s.opts.Now()
	n, err := s.scrape(ctx, st, start)
	s.metrics.observeScrape(s.opts.Now().Sub(start).Seconds(), err)
	h := TargetHealth{
		URL:                 st.target.URL,
		Labels:              st.health.Labels,
		Health:              HealthUp,
		LastScrape:          start,
		LastDurationSeconds: s.opts.Now().Sub(start).Seconds(),
		Samples:             n,
	}
	if err != nil {
		h.Health, h.LastError = HealthDown, err.Error()
		// Prometheus ends a failing target's series too: a dead pod must
		// not keep feeding its last value to the autoscaler.
		s.markStale(st, start)
	}
	s.mtx.Lock()
	if st.health.Health != h.Health {
		s.opts.Log.Info("scrape target changed health", "url", h.URL, "health", h.Health, "error", h.LastError)
	}
	st.health = h
	s.mtx.Unlock()
}

// dropSeries removes the series a target that went away had.
func (s *Scraper) dropSeries(st *targetState) {
	refs := make([]storage.SeriesRef, 0, len(st.seen))
	for _, ref := range st.seen {
		refs = append(refs, ref)
	}
	s.opts.Store.deleteRefs(refs)
	st.seen = nil
}

// markStale appends a staleness marker to every series the target had.
func (s *Scraper) markStale(st *targetState, at time.Time) {
	if len(st.seen) == 0 {
		return
	}
	t := at.UnixMilli()
	for _, ref := range st.seen {
		s.opts.Store.appendStale(ref, t)
	}
	st.seen = nil
}

func (s *Scraper) scrape(ctx context.Context, st *targetState, at time.Time) (int, error) {
	if st.target.Invalid != "" {
		return 0, &scrapeError{reason: FailureInvalidTarget, err: errors.New(st.target.Invalid)}
	}
	url := st.target.URL
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	body, err := s.get(ctx, url)
	if err != nil {
		return 0, err
	}
	defer body.Close()

	t := at.UnixMilli()
	app := s.opts.Store.Appender(ctx)
	// seen are this scrape's series; a series the store refused is kept
	// with reference 0, so that its repeats are not tried again.
	seen := make(map[uint64]storage.SeriesRef, len(st.seen))
	var (
		refused  int
		firstErr error
	)
	err = readExposition(body, s.limits, s.opts.Store.Registry().snapshot(), st.target.Labels, func(ls labels.Labels, v float64) error {
		h := ls.Hash()
		if _, dup := seen[h]; dup {
			// Prometheus keeps the first sample of a series in a scrape.
			return nil
		}
		ref, err := app.Append(0, ls, t, v)
		if err != nil {
			// MaxSeries or MaxBytes: the scrape goes on, the series is
			// counted by the store and left out.
			refused++
			if firstErr == nil {
				firstErr = err
			}
			seen[h] = 0
			return nil
		}
		seen[h] = ref
		return nil
	})
	if err != nil {
		// A scrape that fails stores nothing, as in Prometheus.
		_ = app.Rollback()
		return 0, s.scrapeFailure(ctx, url, err)
	}
	if err := app.Commit(); err != nil {
		// Ordering problems, or the store past its byte budget: the
		// scrape worked, so the target stays up, but the problem is
		// logged.
		s.opts.Log.Error(err, "store scraped samples", "url", url)
	}
	kept := 0
	for h, ref := range seen {
		if ref == 0 {
			delete(seen, h)
			continue
		}
		kept++
	}
	for h, ref := range st.seen {
		if _, ok := seen[h]; !ok {
			s.opts.Store.appendStale(ref, t)
		}
	}
	st.seen = seen
	if refused > 0 {
		s.opts.Log.Error(firstErr, "the store refused new series of a scrape", "url", url, "refused", refused)
	}
	return kept, nil
}

// scrapeError is a failed scrape; reason is the failures metric's label.
type scrapeError struct {
	reason string
	err    error
}

func (e *scrapeError) Error() string { return e.err.Error() }
func (e *scrapeError) Unwrap() error { return e.err }

// failureReason is the failures metric's label for a scrape's error.
func failureReason(err error) string {
	var se *scrapeError
	if errors.As(err, &se) {
		return se.reason
	}
	return FailureConnection
}

// scrapeFailure turns an error of reading or parsing url's body into what
// the target reports, with the reason it is counted under.
func (s *Scraper) scrapeFailure(ctx context.Context, url string, err error) error {
	switch {
	case errors.Is(err, errBodyTooLarge):
		return &scrapeError{reason: FailureBodyTooLarge, err: fmt.Errorf("scrape %s: response exceeds %d bytes; expose fewer metrics or raise metrics.bodySizeLimitBytes", url, s.opts.MaxBodyBytes)}
	case errors.Is(err, errSampleLimit):
		return &scrapeError{reason: FailureSampleLimit, err: fmt.Errorf("scrape %s: %w", url, err)}
	case errors.Is(err, errLabelLimit):
		return &scrapeError{reason: FailureLabelLimit, err: fmt.Errorf("scrape %s: %w", url, err)}
	case errors.Is(err, errParse):
		return &scrapeError{reason: FailureParse, err: fmt.Errorf("parse metrics from %s: %w", url, err)}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &scrapeError{reason: FailureTimeout, err: fmt.Errorf("scrape %s: body not read within %s; make the endpoint faster or raise the scrape timeout", url, s.opts.Timeout)}
	}
	return &scrapeError{reason: FailureConnection, err: fmt.Errorf("read %s: %w", url, err)}
}

// get requests url and returns the body of a 200 answer, read at most
// MaxBodyBytes and one byte more (so that a larger one is told apart).
func (s *Scraper) get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &scrapeError{reason: FailureInvalidTarget, err: fmt.Errorf("build request for %s: %w", url, err)}
	}
	// Only the text format is parsed; ask for it explicitly so servers
	// that default to OpenMetrics or protobuf answer in it.
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain))+";q=1,*/*;q=0.1")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(s.opts.Timeout.Seconds(), 'f', -1, 64))
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &scrapeError{reason: FailureTimeout, err: fmt.Errorf("scrape %s: no response within %s; make the endpoint faster or raise the scrape timeout", url, s.opts.Timeout)}
		}
		return nil, &scrapeError{reason: FailureConnection, err: fmt.Errorf("scrape %s: %w", url, err)}
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &scrapeError{reason: FailureHTTPStatus, err: fmt.Errorf("scrape %s: server returned %s", url, resp.Status)}
	}
	return readCloser{Reader: io.LimitReader(resp.Body, s.opts.MaxBodyBytes+1), Closer: resp.Body}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

var _ storage.Appendable = (*Store)(nil)
