package serving

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// refused counts what Limit answered itself, so that an operator sees
	// a server at its bounds (429), clients sending too much (413) or too
	// slowly (408) without reading logs.
	refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_http_requests_refused_total",
		Help: "Requests a scaleplane server answered before its handler ran, by server (webhook, metrics, probes) and HTTP status (408 too slow, 413 too large, 429 at a bound).",
	}, []string{"server", "code"})

	inFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scaleplane_http_requests_in_flight",
		Help: "Requests in a scaleplane server's handlers now, by server; at the server's maxInFlight further requests are answered 429.",
	}, []string{"server"})
)

func init() {
	// controller-runtime's registry is what the metrics server exposes.
	metrics.Registry.MustRegister(refused, inFlight)
}
