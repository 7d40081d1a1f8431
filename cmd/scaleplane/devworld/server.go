package devworld

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const (
	loopback = "127.0.0.1"
	// MetricsPath is where a pod serves its exposition.
	MetricsPath = "/metrics"
	// maxInFlight bounds the work requests one pod handles at once; more
	// are answered 503 (and counted with that code), as an overloaded pod
	// would answer.
	maxInFlight = 64
	// baseLatency is a request's latency on an idle pod; each request
	// already in flight adds latencyPerRequest, so a pod given more load
	// shows it in its histogram.
	baseLatency       = 5 * time.Millisecond
	latencyPerRequest = time.Millisecond
	maxLatency        = 250 * time.Millisecond
)

// podServer is one pod's process: a loopback HTTP server with its own
// Prometheus registry.
type podServer struct {
	port int
	srv  *http.Server
	done chan struct{}
}

// startPodServer listens on a free loopback port and serves pod's metrics
// and work until stop.
func startPodServer(pod string) (*podServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen for pod %s: %w", pod, err)
	}
	s := &podServer{
		port: ln.Addr().(*net.TCPAddr).Port,
		srv: &http.Server{
			Handler:           newPodHandler(),
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      10 * time.Second,
			IdleTimeout:       60 * time.Second,
			MaxHeaderBytes:    16 << 10,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// addr is the server's host:port.
func (s *podServer) addr() string { return net.JoinHostPort(loopback, strconv.Itoa(s.port)) }

// stop closes the listener and every connection, and waits for Serve to
// return.
func (s *podServer) stop() {
	_ = s.srv.Close()
	<-s.done
}

// newPodHandler is one pod's handler: its own registry (nothing
// process-wide, so pods never share a series), GET /metrics, and work on
// every other path.
func newPodHandler() http.Handler {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "http_requests_total",
		Help: "Requests this pod handled, by HTTP status code and method.",
	}, []string{"code", "method"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_request_duration_seconds",
		Help:    "Time this pod took to answer a request, by HTTP status code and method.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1},
	}, []string{"code", "method"})
	reg.MustRegister(requests, latency)

	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	var inFlight atomic.Int64
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		if n > maxInFlight {
			http.Error(w, "busy: too many requests in flight", http.StatusServiceUnavailable)
			return
		}
		if err := pause(r.Context(), min(baseLatency+time.Duration(n-1)*latencyPerRequest, maxLatency)); err != nil {
			http.Error(w, "request ended: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("/", promhttp.InstrumentHandlerCounter(requests, promhttp.InstrumentHandlerDuration(latency, work)))
	return mux
}

// pause is a request's work: it takes d, or ends with the request.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
