package promql

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	prom "github.com/prometheus/prometheus/promql"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Paths of the debug endpoints.
const (
	DebugEvalPath  = "/debug/promql/eval"
	DebugStorePath = "/debug/store"
)

// minEvalBody is the least body size the eval endpoint accepts; a body
// may be up to eight times the longest query (JSON escaping, placeholder
// values), so that a query within the limits always fits.
const minEvalBody = 64 << 10

// The evaluation times the eval endpoint accepts: the Unix epoch to the
// last second a time.Time holds in int64 nanoseconds (2262-04-11), past
// which the engine's timestamps wrap around.
const (
	minNowUnixSeconds = 0
	maxNowUnixSeconds = math.MaxInt64 / 1_000_000_000
)

// DebugOptions decides who may call the debug endpoints.
type DebugOptions struct {
	// Filter wraps both endpoints. Outside dev mode it must be the metrics
	// server's authentication and authorization filter
	// (controller-runtime filters.WithAuthenticationAndAuthorization), so
	// the endpoints need exactly the rights /metrics needs.
	Filter metricsserver.Filter
	// Log is handed to Filter.
	Log logr.Logger
	// ServerFiltered says the handler is mounted as an extra handler of a
	// controller-runtime metrics server whose FilterProvider is set: that
	// server already wraps extra handlers with its filter, so Filter may be
	// nil.
	ServerFiltered bool
	// Dev serves without a filter. Only `scaleplane dev` sets it.
	Dev bool
	// Now is the evaluation time when a request gives none. Default
	// time.Now.
	Now func() time.Time
	// Limits bound the queries the eval endpoint accepts, as they bound
	// trigger queries (V10): a query over them is answered 422 before it is
	// parsed or evaluated. Zero fields take the defaults of Limits.
	Limits Limits
}

// NewDebugHandler returns a handler serving DebugEvalPath and
// DebugStorePath (mount it at both, or at "/debug/"). scraper may be nil.
// Without Dev it refuses to build unless a Filter is given, so the endpoints
// cannot be exposed unauthenticated by mistake.
func NewDebugHandler(store *Store, eval Source, scraper *Scraper, opts DebugOptions) (http.Handler, error) {
	if store == nil || eval == nil {
		return nil, errors.New("new debug handler: store and evaluator are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := opts.Limits.WithDefaults()
	d := &debugHandler{store: store, eval: eval, scraper: scraper, now: opts.Now, limits: l, maxBody: max(minEvalBody, 8*int64(l.MaxQueryLength))}
	mux := http.NewServeMux()
	mux.HandleFunc(DebugEvalPath, d.serveEval)
	mux.HandleFunc(DebugStorePath, d.serveStore)
	if opts.Dev || (opts.ServerFiltered && opts.Filter == nil) {
		return mux, nil
	}
	if opts.Filter == nil {
		return nil, errors.New("new debug handler: outside dev mode the debug endpoints need the metrics server's authentication filter; set DebugOptions.Filter (filters.WithAuthenticationAndAuthorization), or ServerFiltered when mounting on a metrics server with a FilterProvider")
	}
	log := opts.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	h, err := opts.Filter(log, mux)
	if err != nil {
		return nil, fmt.Errorf("wrap debug endpoints with the metrics filter: %w", err)
	}
	return h, nil
}

// ExtraHandlers maps both debug paths to h, for
// metricsserver.Options.ExtraHandlers.
func ExtraHandlers(h http.Handler) map[string]http.Handler {
	return map[string]http.Handler{DebugEvalPath: h, DebugStorePath: h}
}

type debugHandler struct {
	store   *Store
	eval    Source
	scraper *Scraper
	now     func() time.Time
	limits  Limits
	maxBody int64
}

// EvalRequest is the body of POST /debug/promql/eval.
type EvalRequest struct {
	Query string `json:"query"`
	// NowUnixSeconds is the evaluation time; absent means now.
	NowUnixSeconds *float64 `json:"nowUnixSeconds,omitempty"`
	// Vars fill ${name} placeholders, e.g. {"namespace": "default"}.
	Vars map[string]string `json:"vars,omitempty"`
}

// Position locates a parse error in the query (byte offsets).
type Position struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

type errorBody struct {
	Error    string    `json:"error"`
	Position *Position `json:"position,omitempty"`
	// Result is "no data", "NaN" or "Inf" on a 422 about the value.
	Result string `json:"result,omitempty"`
	// Bound, Limit and Value name the bound of Limits a query exceeds, on
	// a 422 about its cost.
	Bound string `json:"bound,omitempty"`
	Limit int64  `json:"limit,omitempty"`
	Value int64  `json:"value,omitempty"`
}

// problem is an RFC 7807 problem document.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, body errorBody) {
	writeJSON(w, status, "application/json", body)
}

func (d *debugHandler) serveEval(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, errorBody{Error: "use POST with a JSON body {\"query\": ...}"})
		return
	}
	req, status, msg := d.decodeEval(w, r)
	if status != 0 {
		writeError(w, status, errorBody{Error: msg})
		return
	}
	at := d.now()
	if req.NowUnixSeconds != nil {
		sec, frac := math.Modf(*req.NowUnixSeconds)
		at = time.Unix(int64(sec), int64(frac*1e9))
	}

	// The limits come first: nothing below parses a query over them.
	err := d.limits.Check(req.Query)
	// Register the names next: even a query that finds no data yet makes
	// the scraper start keeping its metrics.
	var expanded string
	if err == nil {
		expanded, err = Expand(req.Query, req.Vars)
	}
	if err == nil {
		var names []string
		if names, err = MetricNames(expanded); err == nil {
			d.store.Request(names...)
		} else {
			err = queryError(expanded, err)
		}
	}
	var res Result
	if err == nil {
		res, err = d.eval.Eval(r.Context(), req.Query, at, req.Vars)
	}

	var (
		le *LimitError
		qe *QueryError
		se *ShapeError
		ts prom.ErrTooManySamples
		to prom.ErrQueryTimeout
		qc prom.ErrQueryCanceled
	)
	switch {
	case errors.As(err, &le):
		body := errorBody{Error: le.Error(), Bound: le.Bound, Limit: le.Limit, Value: le.Value}
		if le.Start >= 0 {
			body.Position = &Position{Start: le.Start, End: le.End}
		}
		writeError(w, http.StatusUnprocessableEntity, body)
	case errors.As(err, &qe):
		body := errorBody{Error: qe.Err.Error()}
		if qe.Start >= 0 {
			body.Position = &Position{Start: qe.Start, End: qe.End}
		}
		writeError(w, http.StatusBadRequest, body)
	case errors.As(err, &se):
		writeError(w, http.StatusUnprocessableEntity, errorBody{Error: se.Error()})
	case errors.As(err, &ts):
		// The query's own cost, as a Prometheus server answers it (422):
		// sending it again costs the same.
		writeError(w, http.StatusUnprocessableEntity, errorBody{
			Error: fmt.Sprintf("the query holds more than %d samples in memory at once, over the limit of maxSamples; select fewer series or a shorter range, or raise the configured maxSamples", d.limits.MaxSamples),
			Bound: BoundSamples, Limit: int64(d.limits.MaxSamples),
		})
	case errors.As(err, &to):
		// A Prometheus server answers a timeout 503: a busy moment or the
		// query's cost, so it may pass later.
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, errorBody{
			Error: fmt.Sprintf("the evaluation took longer than %v, the limit of timeoutSeconds; make the query cheaper, try again, or raise the configured timeoutSeconds", d.limits.Timeout),
			Bound: BoundTimeout, Limit: int64(d.limits.Timeout / time.Second),
		})
	case errors.As(err, &qc):
		// The request's context ended: the server's handler timeout
		// (servers.metrics.handlerTimeoutSeconds), the caller hanging up,
		// or a shutdown. Nothing is wrong with the query.
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, errorBody{Error: "the evaluation was cancelled before it ended (the request's deadline passed, the caller left, or scaleplane is stopping); try again"})
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, "application/problem+json", problem{
			Type: "about:blank", Title: "Evaluation error", Status: http.StatusInternalServerError, Detail: err.Error(),
		})
	case res.Kind == KindNoData:
		writeError(w, http.StatusUnprocessableEntity, errorBody{
			Result: "no data",
			Error:  "query returned no data: no series matched at that time; check the metric name and labels, that the pods are scraped (GET " + DebugStorePath + ") and that the name was requested before the samples arrived",
		})
	case res.Kind == KindNaN || res.Kind == KindInf:
		writeError(w, http.StatusUnprocessableEntity, errorBody{
			Result: res.Kind.String(),
			Error:  fmt.Sprintf("PromQL result is %v (NaN or Infinity: probably a division by zero or a quantile over empty buckets)", res.Value),
		})
	default:
		writeJSON(w, http.StatusOK, "application/json", map[string]float64{"value": res.Value})
	}
}

// decodeEval reads the request strictly: a body over the size bound is 413,
// unknown fields, trailing data, a blank query or a time that is not a
// finite Unix time in range are 400, each with a message saying what to
// change. A zero status means req is usable.
func (d *debugHandler) decodeEval(w http.ResponseWriter, r *http.Request) (req EvalRequest, status int, msg string) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, d.maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	off := dec.InputOffset()
	if err == nil && dec.More() {
		// Whatever follows the object, a second value or garbage, is
		// refused: only the object was meant.
		var extra json.RawMessage
		if err = dec.Decode(&extra); err == nil {
			err = fmt.Errorf("unexpected data after the JSON object at offset %d; send exactly one object", off)
		} else if !errors.As(err, new(*http.MaxBytesError)) {
			err = fmt.Errorf("unexpected data after the JSON object at offset %d (%w); send exactly one object", off, err)
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return req, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over %d bytes; a query may be at most %d bytes long", tooLarge.Limit, d.limits.MaxQueryLength)
	case err != nil:
		return req, http.StatusBadRequest, fmt.Sprintf("invalid JSON body: %v", err)
	case strings.TrimSpace(req.Query) == "":
		return req, http.StatusBadRequest, "query is required"
	}
	if n := req.NowUnixSeconds; n != nil && !(*n >= minNowUnixSeconds && *n <= maxNowUnixSeconds) {
		return req, http.StatusBadRequest, fmt.Sprintf("nowUnixSeconds must be a finite number of seconds from %d to %d (2262-04-11), got %v; leave it out to evaluate now", minNowUnixSeconds, maxNowUnixSeconds, *n)
	}
	return req, 0, ""
}

// StoreSummary is the body of GET /debug/store.
type StoreSummary struct {
	RequestedMetricNames []string `json:"requestedMetricNames"`
	TimestampBuckets     int      `json:"timestampBuckets"`
	SeriesCount          int      `json:"seriesCount"`
	TotalPoints          int      `json:"totalPoints"`
	RefusedSeries        uint64   `json:"refusedSeries"`
	// RefusedSeriesForBytes are the refused series refused at
	// metrics.maxStoreBytes (the rest at metrics.maxSeries), and
	// RefusedSamples the samples refused while the store was past it.
	RefusedSeriesForBytes uint64 `json:"refusedSeriesForBytes"`
	// RefusedSeriesForNamespaceBytes are those refused at
	// metrics.maxStoreBytesPerNamespace.
	RefusedSeriesForNamespaceBytes uint64 `json:"refusedSeriesForNamespaceBytes"`
	RefusedSamples                 uint64 `json:"refusedSamples"`
	ChunkBytes                     int    `json:"chunkBytes"`
	// UsedBytes is what the store charges against metrics.maxStoreBytes.
	UsedBytes      int64          `json:"usedBytes"`
	Targets        []TargetHealth `json:"targets"`
	DiscoveryError string         `json:"discoveryError,omitempty"`
}

func (d *debugHandler) serveStore(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, errorBody{Error: "use GET"})
		return
	}
	st := d.store.Stats()
	sum := StoreSummary{
		RequestedMetricNames:           d.store.Registry().Names(),
		TimestampBuckets:               st.TimestampBuckets,
		SeriesCount:                    st.SeriesCount,
		TotalPoints:                    st.TotalPoints,
		RefusedSeries:                  st.RefusedSeries,
		RefusedSeriesForBytes:          st.RefusedSeriesForBytes,
		RefusedSeriesForNamespaceBytes: st.RefusedSeriesForNamespaceBytes,
		RefusedSamples:                 st.RefusedSamples,
		ChunkBytes:                     st.ChunkBytes,
		UsedBytes:                      st.UsedBytes,
		Targets:                        []TargetHealth{},
	}
	if d.scraper != nil {
		sum.Targets = d.scraper.Health()
		if err := d.scraper.DiscoveryError(); err != nil {
			sum.DiscoveryError = err.Error()
		}
	}
	writeJSON(w, http.StatusOK, "application/json", sum)
}
