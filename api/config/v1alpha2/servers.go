package v1alpha2

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Servers bounds what one client can make scaleplane's HTTP servers spend:
// the webhook server, the metrics server (which also serves the debug and
// activity endpoints) and the health probe server. Every field may be left
// out; docs/profiles.md lists the defaults and docs/design.md says why.
type Servers struct {
	// EnableHTTP2 offers HTTP/2 (ALPN h2) on the webhook and metrics servers.
	// Default false, as kubebuilder scaffolds it: HTTP/2's stream
	// multiplexing is what the rapid-reset attacks (CVE-2023-44487,
	// CVE-2023-39325) abuse, and neither the API server's webhook calls nor
	// scrapes need it. The probe server speaks plain HTTP/1.1 only.
	EnableHTTP2 bool `json:"enableHTTP2,omitempty"`
	// Webhook bounds the admission webhook server.
	Webhook ServerLimits `json:"webhook,omitempty"`
	// Metrics bounds the metrics server: /metrics, /debug/... and
	// /activity/....
	Metrics ServerLimits `json:"metrics,omitempty"`
	// Probes bounds the /healthz and /readyz server.
	Probes ServerLimits `json:"probes,omitempty"`
}

// ServerLimits bounds one HTTP server. A field left out (0) takes the
// server's default.
type ServerLimits struct {
	// ReadHeaderTimeoutSeconds bounds the TLS handshake and the request
	// headers: a client that trickles them (slowloris) is disconnected.
	ReadHeaderTimeoutSeconds int32 `json:"readHeaderTimeoutSeconds,omitempty"`
	// ReadTimeoutSeconds bounds reading a whole request, body included,
	// from its first byte.
	ReadTimeoutSeconds int32 `json:"readTimeoutSeconds,omitempty"`
	// HandlerTimeoutSeconds bounds a request from the end of its headers to
	// the end of its handling: the handler's context ends then.
	HandlerTimeoutSeconds int32 `json:"handlerTimeoutSeconds,omitempty"`
	// WriteTimeoutSeconds bounds a request from the end of its headers to
	// the end of its response; more than HandlerTimeoutSeconds, so that a
	// handler stopped by its deadline can still answer.
	WriteTimeoutSeconds int32 `json:"writeTimeoutSeconds,omitempty"`
	// IdleTimeoutSeconds closes a kept-alive connection that sends nothing
	// for this long. The webhook server's default is longer than the API
	// server's own idle-connection timeout (90 s, Go's transport default),
	// so that the client always closes an idle connection first: a server
	// that closes it just as the API server writes a review on it fails
	// that call, and kube-apiserver does not retry admission calls.
	IdleTimeoutSeconds int32 `json:"idleTimeoutSeconds,omitempty"`
	// MaxInFlight is how many requests are handled at once; more are
	// answered 429 with Retry-After at once (the API server's webhook client
	// retries them). A request counts once its body is read, so clients
	// that send slowly hold no slot.
	MaxInFlight int32 `json:"maxInFlight,omitempty"`
	// MaxRequestBodyBytes is the largest body one request may carry; a
	// larger one is answered 413 without being read.
	MaxRequestBodyBytes int64 `json:"maxRequestBodyBytes,omitempty"`
	// MaxBufferedBytes bounds the request bodies held in memory at once,
	// across requests; past it requests are answered 429. It is the
	// server's memory bound, whatever the number of connections; at least
	// MaxRequestBodyBytes.
	MaxBufferedBytes int64 `json:"maxBufferedBytes,omitempty"`
}

// MaxAdmissionReviewBytes is the default body limit of the webhook server,
// the largest AdmissionReview the API server sends: an object and its old
// version, each at most 3 MiB (the API server's --max-request-body-bytes
// default), and 1 MiB for the rest. controller-runtime's webhook chose the
// same 7 MiB.
const MaxAdmissionReviewBytes = 7 << 20

// DefaultServers are the limits every field left out takes.
//
// The webhook server answers only the API server, whose webhook calls last
// at most 30 s (timeoutSeconds 1–30) and send their whole body at once.
// The metrics server's handlers include TokenReview and
// SubjectAccessReview calls with retries and PromQL evaluations. Probes are
// tiny GETs from the kubelet. Buffered bytes bound memory: 64 MiB holds
// thousands of ordinary reviews or nine of the largest.
func DefaultServers() Servers {
	return Servers{
		Webhook: ServerLimits{
			ReadHeaderTimeoutSeconds: 10, ReadTimeoutSeconds: 15, HandlerTimeoutSeconds: 30, WriteTimeoutSeconds: 35,
			IdleTimeoutSeconds: 120, MaxInFlight: 32, MaxRequestBodyBytes: MaxAdmissionReviewBytes, MaxBufferedBytes: 64 << 20,
		},
		Metrics: ServerLimits{
			ReadHeaderTimeoutSeconds: 10, ReadTimeoutSeconds: 15, HandlerTimeoutSeconds: 30, WriteTimeoutSeconds: 35,
			IdleTimeoutSeconds: 90, MaxInFlight: 16, MaxRequestBodyBytes: 1 << 20, MaxBufferedBytes: 16 << 20,
		},
		Probes: ServerLimits{
			ReadHeaderTimeoutSeconds: 5, ReadTimeoutSeconds: 5, HandlerTimeoutSeconds: 15, WriteTimeoutSeconds: 20,
			IdleTimeoutSeconds: 30, MaxInFlight: 16, MaxRequestBodyBytes: 4 << 10, MaxBufferedBytes: 64 << 10,
		},
	}
}

// Default fills every limit left out.
func (s *Servers) Default() {
	d := DefaultServers()
	s.Webhook.defaultFrom(d.Webhook)
	s.Metrics.defaultFrom(d.Metrics)
	s.Probes.defaultFrom(d.Probes)
}

func (l *ServerLimits) defaultFrom(d ServerLimits) {
	fill := func(v *int32, d int32) {
		if *v == 0 {
			*v = d
		}
	}
	fill(&l.ReadHeaderTimeoutSeconds, d.ReadHeaderTimeoutSeconds)
	fill(&l.ReadTimeoutSeconds, d.ReadTimeoutSeconds)
	fill(&l.HandlerTimeoutSeconds, d.HandlerTimeoutSeconds)
	fill(&l.WriteTimeoutSeconds, d.WriteTimeoutSeconds)
	fill(&l.IdleTimeoutSeconds, d.IdleTimeoutSeconds)
	fill(&l.MaxInFlight, d.MaxInFlight)
	if l.MaxRequestBodyBytes == 0 {
		l.MaxRequestBodyBytes = d.MaxRequestBodyBytes
	}
	if l.MaxBufferedBytes == 0 {
		l.MaxBufferedBytes = d.MaxBufferedBytes
	}
}

// validateServers checks defaulted limits; webhookTimeout is
// webhook.timeoutSeconds, the API server's own wait for an answer.
func validateServers(s *Servers, webhookTimeout int32, fp *field.Path) field.ErrorList {
	d := DefaultServers()
	errs := validateLimits(&s.Webhook, d.Webhook, fp.Child("webhook"))
	// A handler cut before the API server stops waiting would fail reviews
	// the API server would still have taken. (An invalid timeoutSeconds
	// has its own error.)
	if s.Webhook.HandlerTimeoutSeconds < webhookTimeout && webhookTimeout <= 30 {
		errs = append(errs, field.Invalid(fp.Child("webhook", "handlerTimeoutSeconds"), s.Webhook.HandlerTimeoutSeconds,
			fmt.Sprintf("must be at least webhook.timeoutSeconds (%d): the API server waits that long for an answer", webhookTimeout)))
	}
	errs = append(errs, validateLimits(&s.Metrics, d.Metrics, fp.Child("metrics"))...)
	return append(errs, validateLimits(&s.Probes, d.Probes, fp.Child("probes"))...)
}

func validateLimits(l *ServerLimits, d ServerLimits, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	positive := func(name string, v, def int64) {
		if v < 1 {
			errs = append(errs, field.Invalid(fp.Child(name), v, fmt.Sprintf("must be at least 1 (or left out for the default, %d)", def)))
		}
	}
	positive("readHeaderTimeoutSeconds", int64(l.ReadHeaderTimeoutSeconds), int64(d.ReadHeaderTimeoutSeconds))
	positive("readTimeoutSeconds", int64(l.ReadTimeoutSeconds), int64(d.ReadTimeoutSeconds))
	positive("handlerTimeoutSeconds", int64(l.HandlerTimeoutSeconds), int64(d.HandlerTimeoutSeconds))
	positive("writeTimeoutSeconds", int64(l.WriteTimeoutSeconds), int64(d.WriteTimeoutSeconds))
	positive("idleTimeoutSeconds", int64(l.IdleTimeoutSeconds), int64(d.IdleTimeoutSeconds))
	positive("maxInFlight", int64(l.MaxInFlight), int64(d.MaxInFlight))
	positive("maxRequestBodyBytes", l.MaxRequestBodyBytes, d.MaxRequestBodyBytes)
	if len(errs) > 0 {
		return errs
	}
	if l.ReadTimeoutSeconds < l.ReadHeaderTimeoutSeconds {
		errs = append(errs, field.Invalid(fp.Child("readTimeoutSeconds"), l.ReadTimeoutSeconds,
			fmt.Sprintf("must be at least readHeaderTimeoutSeconds (%d): the headers are part of the request", l.ReadHeaderTimeoutSeconds)))
	}
	if l.WriteTimeoutSeconds <= l.HandlerTimeoutSeconds {
		errs = append(errs, field.Invalid(fp.Child("writeTimeoutSeconds"), l.WriteTimeoutSeconds,
			fmt.Sprintf("must be more than handlerTimeoutSeconds (%d), so that a handler stopped by its deadline can still answer", l.HandlerTimeoutSeconds)))
	}
	if l.MaxBufferedBytes < l.MaxRequestBodyBytes {
		errs = append(errs, field.Invalid(fp.Child("maxBufferedBytes"), l.MaxBufferedBytes,
			fmt.Sprintf("must be at least maxRequestBodyBytes (%d), or no body of the largest size could ever be read", l.MaxRequestBodyBytes)))
	}
	return errs
}
