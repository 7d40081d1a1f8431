package webhooks

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Webhook roles, the "webhook" label of the admission metrics.
const (
	roleMutate   = "mutate"
	roleValidate = "validate"
	roleScale    = "scale"
)

// Results, the "result" label of scaleplane_admission_reviews_total.
const (
	resultAllowed = "allowed" // admitted unchanged
	resultPatched = "patched" // admitted with a patch
	resultDenied  = "denied"  // refused with field errors (422)
	resultErrored = "errored" // refused because the request could not be handled
)

var (
	// reviews counts admission reviews so that an operator can see which
	// kinds are refused, and why, without reading API server logs.
	// controller-runtime's own webhook metrics count by path only.
	reviews = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_admission_reviews_total",
		Help: "Admission reviews handled by scaleplane's webhooks, by webhook (mutate, validate, scale), workload kind, operation and result (allowed, patched, denied, errored).",
	}, []string{"webhook", "kind", "operation", "result"})

	warnings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_admission_warnings_total",
		Help: "Admission warnings (contract rules W1, W2) returned by scaleplane's webhooks, by webhook and workload kind.",
	}, []string{"webhook", "kind"})

	// refusedReviews counts what the review transport answered with an
	// HTTP error before any handler judged it: an API server never sends
	// such a request, so a count that grows is a misconfiguration or a
	// client that is not the API server.
	refusedReviews = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scaleplane_admission_requests_refused_total",
		Help: "Requests to the webhook server's admission paths that were not an API server's AdmissionReview for the path, by HTTP status (400 malformed or misrouted, 405 method, 413 too large, 415 content type).",
	}, []string{"code"})
)

func init() {
	// controller-runtime's registry is what its metrics server exposes, so
	// the counters appear next to controller_runtime_webhook_*.
	metrics.Registry.MustRegister(reviews, warnings, refusedReviews)
}

// observe records one review.
func observe(role, kind string, op admissionv1.Operation, resp admission.Response) {
	reviews.WithLabelValues(role, kind, string(op), result(resp)).Inc()
	if n := len(resp.Warnings); n > 0 {
		warnings.WithLabelValues(role, kind).Add(float64(n))
	}
}

func result(resp admission.Response) string {
	switch {
	case resp.Allowed && len(resp.Patches) > 0:
		return resultPatched
	case resp.Allowed:
		return resultAllowed
	case resp.Result != nil && resp.Result.Code == http.StatusUnprocessableEntity:
		return resultDenied
	}
	return resultErrored
}
