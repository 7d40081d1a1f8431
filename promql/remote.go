package promql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// RemoteOptions points Remote at a Prometheus-compatible query API.
type RemoteOptions struct {
	// URL is the API root: the part before /api/v1/query, e.g.
	// http://prometheus.monitoring:9090, a Thanos querier, or
	// http://mimir-query-frontend/prometheus for Mimir.
	URL string
	// BearerToken or BearerTokenFile (re-read on every request, so a
	// projected service-account token keeps working) sets
	// "Authorization: Bearer ...".
	BearerToken     string
	BearerTokenFile string
	// Username with Password or PasswordFile sets basic auth.
	Username     string
	Password     string
	PasswordFile string
	// CA (PEM) or CAFile replaces the system roots to verify the server.
	CA     string
	CAFile string
	// ServerName overrides the name checked in the server certificate.
	ServerName string
	// Headers are sent with every query, e.g. X-Scope-OrgID for Mimir.
	Headers map[string]string
	// Limits are checked before a query is sent, so a trigger cannot make
	// the server do what the embedded engine would refuse (length, depth,
	// points per series); Limits.Timeout bounds one query, on the server
	// and the client. Zero fields take the defaults of Limits.
	Limits Limits
	// RoundTripper replaces the transport built from the fields above.
	RoundTripper http.RoundTripper
}

// Remote evaluates queries on an existing Prometheus, Thanos or Mimir
// through its HTTP query API. It implements Source with the same result
// rules as the embedded Evaluator.
type Remote struct {
	api    v1.API
	limits Limits
	// checked remembers Limits.Check's answers: a trigger's query comes
	// back every tick.
	checked checkCache
	check   func(string) error
}

// NewRemote validates opts and returns a client. Credentials in files are
// read per request, not here.
func NewRemote(opts RemoteOptions) (*Remote, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote source URL %q: use an absolute http(s) URL such as http://prometheus.monitoring:9090", opts.URL)
	}
	opts.Limits = opts.Limits.WithDefaults()
	rt := opts.RoundTripper
	if rt == nil {
		cfg := config.HTTPClientConfig{
			TLSConfig:       config.TLSConfig{CA: opts.CA, CAFile: opts.CAFile, ServerName: opts.ServerName},
			FollowRedirects: true,
			EnableHTTP2:     true,
		}
		if opts.BearerToken != "" || opts.BearerTokenFile != "" {
			cfg.Authorization = &config.Authorization{Type: "Bearer", Credentials: config.Secret(opts.BearerToken), CredentialsFile: opts.BearerTokenFile}
		}
		if opts.Username != "" {
			cfg.BasicAuth = &config.BasicAuth{Username: opts.Username, Password: config.Secret(opts.Password), PasswordFile: opts.PasswordFile}
		}
		if len(opts.Headers) > 0 {
			h := map[string]config.Header{}
			for k, v := range opts.Headers {
				h[k] = config.Header{Values: []string{v}}
			}
			cfg.HTTPHeaders = &config.Headers{Headers: h}
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("remote source %s: %w", opts.URL, err)
		}
		if rt, err = config.NewRoundTripperFromConfig(cfg, "scaleplane"); err != nil {
			return nil, fmt.Errorf("remote source %s: %w", opts.URL, err)
		}
	}
	c, err := api.NewClient(api.Config{Address: strings.TrimSuffix(opts.URL, "/"), RoundTripper: limitedBodies{rt}})
	if err != nil {
		return nil, fmt.Errorf("remote source %s: %w", opts.URL, err)
	}
	return &Remote{api: v1.NewAPI(c), limits: opts.Limits, check: opts.Limits.Check}, nil
}

// Eval implements Source. A query over the Limits is refused without being
// sent.
func (r *Remote) Eval(ctx context.Context, query string, at time.Time, vars map[string]string) (Result, error) {
	if err := r.checked.answer(query, r.check); err != nil {
		return Result{}, err
	}
	expanded, err := Expand(query, vars)
	if err != nil {
		return Result{}, err
	}
	if at.IsZero() {
		at = time.Now()
	}
	ctx, cancel := context.WithTimeout(ctx, r.limits.Timeout)
	defer cancel()
	// A trigger needs one number: asking for a few series more than one
	// is enough to tell the user how many came back, and keeps a query
	// that selects everything from costing the server (and us) its
	// serialization. Servers without the parameter ignore it; the body
	// bound then still holds.
	v, _, err := r.api.Query(ctx, expanded, at, v1.WithTimeout(r.limits.Timeout), v1.WithLimit(remoteSeriesLimit))
	if err != nil {
		var apiErr *v1.Error
		if errors.As(err, &apiErr) && apiErr.Type == v1.ErrBadData {
			return Result{}, &QueryError{Query: expanded, Err: errors.New(apiErr.Msg), Start: -1, End: -1}
		}
		return Result{}, fmt.Errorf("remote query %q: %w", expanded, err)
	}
	switch v := v.(type) {
	case *model.Scalar:
		return ResultOf(float64(v.Value)), nil
	case model.Vector:
		switch len(v) {
		case 0:
			return Result{Kind: KindNoData}, nil
		case 1:
			if v[0].Histogram != nil {
				return Result{}, &ShapeError{Type: "vector", Series: 1, Histogram: true}
			}
			r := ResultOf(float64(v[0].Value))
			r.Labels = metricLabels(v[0].Metric)
			return r, nil
		}
		se := &ShapeError{Type: "vector", Series: len(v)}
		for i := 0; i < len(v) && i < 3; i++ {
			se.Sample = append(se.Sample, v[i].Metric.String())
		}
		return Result{}, se
	case model.Matrix:
		return Result{}, &ShapeError{Type: "matrix", Series: len(v)}
	case *model.String:
		return Result{}, &ShapeError{Type: "string"}
	}
	return Result{}, fmt.Errorf("remote query %q: unexpected result type %T", expanded, v)
}

// remoteSeriesLimit is the limit parameter of every query: one series is
// the answer, up to three are named in a ShapeError.
const remoteSeriesLimit = 4

// maxRemoteBody bounds a server's answer: four series with their labels
// fit in a few kilobytes, and the client reads the whole body into memory
// before decoding it.
const maxRemoteBody = 1 << 20

// limitedBodies bounds the body of every response.
type limitedBodies struct{ rt http.RoundTripper }

func (l limitedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: maxRemoteBody}
	return resp, nil
}

// limitedBody fails a read past its bound instead of truncating, so a
// too-long answer is an error, never a wrong number.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("remote answer is over %d bytes; a trigger query must return one number, aggregate it", maxRemoteBody)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func metricLabels(m model.Metric) labels.Labels {
	b := labels.NewScratchBuilder(len(m))
	for k, v := range m {
		b.Add(string(k), string(v))
	}
	b.Sort()
	return b.Labels()
}
