package webhooks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/serving"
)

// ServerOptions configure NewServer.
type ServerOptions struct {
	// Options are controller-runtime's webhook server options, with their
	// meaning and defaults (port 9443, certificates tls.crt and tls.key in
	// CertDir, reloaded when they change). TLSOpts run after NextProtos is
	// set from Limits.HTTP2, so they may override it.
	webhook.Options
	// Limits bound every request (see package serving). Required.
	Limits serving.Limits
}

// NewServer returns a webhook server for manager.Options.WebhookServer
// that serves within o.Limits: timeouts on headers, body, handler, response
// and idle connections, bounded bodies and requests in flight, and HTTP/2
// only when o.Limits.HTTP2. controller-runtime's webhook.DefaultServer
// keeps doing what it does well, registering hooks on its mux with its
// per-path metrics (controller_runtime_webhook_*); only the listening is
// this server's, because DefaultServer's http.Server cannot be bounded
// (a 32 s header timeout and nothing else).
func NewServer(o ServerOptions) (*Server, error) {
	if err := o.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("webhook server: %w", err)
	}
	if o.WebhookMux == nil {
		o.WebhookMux = http.NewServeMux()
	}
	if o.Port == 0 {
		o.Port = webhook.DefaultPort
	}
	if o.CertDir == "" {
		o.CertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	if o.CertName == "" {
		o.CertName = "tls.crt"
	}
	if o.KeyName == "" {
		o.KeyName = "tls.key"
	}
	return &Server{Server: webhook.NewServer(o.Options), opts: o}, nil
}

// Server is NewServer's webhook server.
type Server struct {
	// Server registers hooks; its Start is never called.
	webhook.Server
	opts ServerOptions

	mu   sync.Mutex
	port int // bound, 0 until Start listens
}

var _ webhook.Server = (*Server)(nil)

// Start listens and serves until ctx ends, then shuts down gracefully for
// at most the write timeout: no request can take longer.
func (s *Server) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("webhook-server")
	if s.opts.Port < 0 {
		log.Info("webhook server is disabled")
		return nil
	}
	cfg := &tls.Config{}
	serving.NextProtos(s.opts.Limits.HTTP2)(cfg)
	for _, op := range s.opts.TLSOpts {
		op(cfg)
	}
	if cfg.GetCertificate == nil {
		w, err := certwatcher.New(filepath.Join(s.opts.CertDir, s.opts.CertName), filepath.Join(s.opts.CertDir, s.opts.KeyName))
		if err != nil {
			return fmt.Errorf("webhook server certificate: %w", err)
		}
		cfg.GetCertificate = w.GetCertificate
		go func() {
			if err := w.Start(ctx); err != nil {
				log.Error(err, "certificate watcher stopped")
			}
		}()
	}
	if s.opts.ClientCAName != "" {
		pem, err := os.ReadFile(filepath.Join(s.opts.CertDir, s.opts.ClientCAName))
		if err != nil {
			return fmt.Errorf("read the client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("client CA %s holds no PEM certificate", s.opts.ClientCAName)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	// The mux the embedded server registers on; its WebhookMux is nil
	// until the first Register.
	srv, err := serving.NewServer("webhook", s.opts.WebhookMux, s.opts.Limits)
	if err != nil {
		return err
	}
	ln, err := serving.Listen(net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)), cfg)
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	s.mu.Lock()
	s.port = ln.Addr().(*net.TCPAddr).Port
	s.mu.Unlock()
	log.Info("serving webhooks", "address", ln.Addr().String(), "http2", s.opts.Limits.HTTP2)
	grace := s.opts.Limits.WriteTimeout
	return (&manager.Server{Name: "webhook", Server: srv, Listener: ln, ShutdownTimeout: &grace}).Start(ctx)
}

// Addr is the address the server listens on, empty before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.port == 0 {
		return ""
	}
	return net.JoinHostPort(s.opts.Host, strconv.Itoa(s.port))
}

// StartedChecker is healthy once the server completes a TLS handshake, as
// controller-runtime's is.
func (s *Server) StartedChecker() healthz.Checker {
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // only checks that the server answers
	return func(*http.Request) error {
		if s.opts.Port < 0 {
			return nil
		}
		addr := s.Addr()
		if addr == "" {
			return errors.New("webhook server has not been started yet")
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
		if err != nil {
			return fmt.Errorf("webhook server is not reachable: %w", err)
		}
		return conn.Close()
	}
}

// NeedLeaderElection is false: every replica serves admission.
func (*Server) NeedLeaderElection() bool { return false }

// strictReviews makes srv serve every admission webhook registered on it
// with reviewHandler instead of controller-runtime's ServeHTTP.
func strictReviews(srv webhook.Server) webhook.Server { return reviewServer{srv} }

type reviewServer struct{ webhook.Server }

func (s reviewServer) Register(path string, hook http.Handler) {
	if wh, ok := hook.(*admission.Webhook); ok {
		hook = reviewHandler{wh}
	}
	s.Server.Register(path, hook)
}

// reviewHandler is the HTTP side of one admission webhook, in place of
// admission.Webhook's ServeHTTP; everything after decoding
// (admission.Webhook.Handle: panic recovery, the response's uid, patches,
// warnings) stays controller-runtime's. controller-runtime answers every
// request HTTP 200, its errors only inside the review, reads up to 7 MiB
// before looking at the content type, decodes a review of any apiVersion
// and kind, and answers a review without a request allowed with an empty
// uid. Here a request that is not an AdmissionReview from an API server
// gets an HTTP error:
//
//   - 405 for a method other than POST, 415 for a content type other than
//     application/json;
//   - 413 for a body over MaxReviewBytes (or the server's limit), refused
//     from its Content-Length before it is read;
//   - 400 for a body that is not JSON, an apiVersion and kind other than
//     admission.k8s.io/v1 or v1beta1 AdmissionReview, no request, a
//     request without a uid (the API server matches answers by it), or a
//     request for a resource other than the one the path judges.
//
// The body is decoded once, straight into the review (controller-runtime
// scans it once more for its type), from the bytes serving.Limit already
// read when it serves the request.
type reviewHandler struct{ wh *admission.Webhook }

// MaxReviewBytes bounds a review's body when no server limit read it
// first: the largest AdmissionReview the API server sends, the webhook
// server's default limit too (configv1alpha2.MaxAdmissionReviewBytes says why).
const MaxReviewBytes = configv1alpha2.MaxAdmissionReviewBytes

var (
	reviewV1      = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	reviewV1beta1 = admissionv1beta1.SchemeGroupVersion.WithKind("AdmissionReview")
)

func (h reviewHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuseReview(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s: an AdmissionReview is sent with POST", r.Method))
		return
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		refuseReview(w, http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q: an AdmissionReview is sent as application/json", ct))
		return
	}
	data, err := reviewBody(w, r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			refuseReview(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the AdmissionReview is larger than %d bytes", tooLarge.Limit))
			return
		}
		refuseReview(w, http.StatusBadRequest, fmt.Sprintf("read the AdmissionReview: %v", err))
		return
	}
	req := admission.Request{}
	review := admissionv1.AdmissionReview{Request: &req.AdmissionRequest}
	// The case-sensitive decoder the API machinery's JSON serializer uses.
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &review); err != nil {
		refuseReview(w, http.StatusBadRequest, fmt.Sprintf("decode the AdmissionReview: %v", err))
		return
	}
	gvk := review.GroupVersionKind()
	if gvk != reviewV1 && gvk != reviewV1beta1 {
		refuseReview(w, http.StatusBadRequest, fmt.Sprintf("apiVersion %q, kind %q: want an AdmissionReview of %s or %s",
			review.APIVersion, review.Kind, reviewV1.GroupVersion(), reviewV1beta1.GroupVersion()))
		return
	}
	// "request": null leaves review.Request nil; no "request" at all leaves
	// it empty. Either way there is no uid to answer to.
	if review.Request == nil || review.Request.UID == "" {
		refuseReview(w, http.StatusBadRequest, "the AdmissionReview has no request.uid; the API server matches the answer by it")
		return
	}
	if msg := h.misrouted(review.Request); msg != "" {
		refuseReview(w, http.StatusBadRequest, msg)
		return
	}
	ctx := r.Context()
	if h.wh.WithContextFunc != nil {
		ctx = h.wh.WithContextFunc(ctx, r)
	}
	resp := h.wh.Handle(ctx, req)
	writeReview(w, http.StatusOK, gvk, &resp.AdmissionResponse)
}

// misrouted says why a review is not one this handler judges, or "" when
// it is: each handler Setup registers reads objects through one profile's
// view, and judging another resource's object by it (a misconfigured
// webhook configuration, or a client that is not the API server) would
// answer for the wrong kind, patches included. The resource is compared by
// group and name here; the version picks the active kind that judges it
// (Dispatcher.handle, perKindRoute): the API server converts an object to
// the version the webhook's rule names, and names that version in
// request.resource, whatever version was written.
func (h reviewHandler) misrouted(req *admissionv1.AdmissionRequest) string {
	var gvr schema.GroupVersionResource
	sub := ""
	switch v := h.wh.Handler.(type) {
	case *mutator:
		gvr = v.view.GVR()
	case *validator:
		gvr = v.view.GVR()
	case *scaleValidator:
		gvr, sub = v.view.GVR(), "scale"
	case perKindRoute:
		gvr = v.gvr
		if v.role == roleScale {
			sub = "scale"
		}
	default:
		return ""
	}
	got := req.Resource
	if got.Group == gvr.Group && got.Resource == gvr.Resource && req.SubResource == sub {
		return ""
	}
	want, of := gvr.GroupResource().String(), schema.GroupResource{Group: got.Group, Resource: got.Resource}.String()
	if sub != "" {
		want += "/" + sub
	}
	if req.SubResource != "" {
		of += "/" + req.SubResource
	}
	return fmt.Sprintf("the review is of %q, but this webhook judges %q: point the webhook configuration's rules for %q at its own path", of, want, of)
}

// reviewBody is the body serving.Limit read, or the body read here within
// MaxReviewBytes.
func reviewBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if b, ok := serving.Body(r); ok {
		return b, nil
	}
	if r.ContentLength > MaxReviewBytes {
		return nil, &http.MaxBytesError{Limit: MaxReviewBytes}
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, MaxReviewBytes))
}

func isJSON(contentType string) bool {
	if contentType == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// refuseReview answers with an HTTP error whose body is an AdmissionReview
// carrying the same code and message, as controller-runtime's
// admission.Errored would, so that whoever reads it sees why.
func refuseReview(w http.ResponseWriter, status int, msg string) {
	refusedReviews.WithLabelValues(strconv.Itoa(status)).Inc()
	resp := admission.Errored(int32(status), errors.New(msg))
	writeReview(w, status, reviewV1, &resp.AdmissionResponse)
}

func writeReview(w http.ResponseWriter, status int, gvk schema.GroupVersionKind, resp *admissionv1.AdmissionResponse) {
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(out)
}
