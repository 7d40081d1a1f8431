package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/serving"
)

// reviewJSON is an AdmissionReview of apiVersion and kind around request
// (raw JSON, or nothing when empty).
func reviewJSON(apiVersion, kind, request string) string {
	s := `{"apiVersion":"` + apiVersion + `","kind":"` + kind + `"`
	if request != "" {
		s += `,"request":` + request
	}
	return s + "}"
}

// countingReader yields n bytes of JSON-ish filler and counts what was read.
type countingReader struct {
	n, read int
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(len(p), r.n-r.read)
	for i := range p[:k] {
		p[i] = ' '
	}
	r.read += k
	return k, nil
}

// TestReviewTransport sends raw HTTP requests to a path Setup
// registered: whatever is not an API server's AdmissionReview gets an HTTP
// error with the exact status, never an allowed answer (a review
// without a request was once answered allowed with an empty uid).
func TestReviewTransport(t *testing.T) {
	views := testViews(t)
	view := views[rackedCluster]
	mgr := newTestManager(t)
	if err := Setup(mgr, []*profile.Compiled{view}, Options{Sources: testSources()}); err != nil {
		t.Fatal(err)
	}
	mux := mgr.GetWebhookServer().WebhookMux()
	path := MutatePath(view.GVR())

	good := create(view, makeObj(rackedCluster, "x").replicas(2)).AdmissionRequest
	goodRequest, _ := json.Marshal(good)
	noUID := good
	noUID.UID = ""
	noUIDRequest, _ := json.Marshal(noUID)
	// Reviews of other resources than the path judges:
	// judged by this profile they were allowed, and patched.
	misrouted := func(edit func(r *admissionv1.AdmissionRequest)) string {
		r := good
		edit(&r)
		b, _ := json.Marshal(r)
		return reviewJSON("admission.k8s.io/v1", "AdmissionReview", string(b))
	}

	tests := []struct {
		name        string
		method      string
		contentType string
		body        string
		want        int
		// wantAPIVersion is the answer's apiVersion for a 200.
		wantAPIVersion string
	}{
		{name: "v1 review", body: reviewJSON("admission.k8s.io/v1", "AdmissionReview", string(goodRequest)), want: 200, wantAPIVersion: "admission.k8s.io/v1"},
		{name: "v1beta1 review", body: reviewJSON("admission.k8s.io/v1beta1", "AdmissionReview", string(goodRequest)), want: 200, wantAPIVersion: "admission.k8s.io/v1beta1"},
		{name: "json with charset", contentType: "application/json; charset=utf-8", body: reviewJSON("admission.k8s.io/v1", "AdmissionReview", string(goodRequest)), want: 200, wantAPIVersion: "admission.k8s.io/v1"},
		{name: "no request", body: reviewJSON("admission.k8s.io/v1", "AdmissionReview", ""), want: 400},
		{name: "null request", body: reviewJSON("admission.k8s.io/v1", "AdmissionReview", "null"), want: 400},
		{name: "empty request", body: reviewJSON("admission.k8s.io/v1", "AdmissionReview", "{}"), want: 400},
		{name: "empty uid", body: reviewJSON("admission.k8s.io/v1", "AdmissionReview", string(noUIDRequest)), want: 400},
		{name: "unknown kind", body: reviewJSON("admission.k8s.io/v1", "ConversionReview", string(goodRequest)), want: 400},
		{name: "unknown version", body: reviewJSON("admission.k8s.io/v2", "AdmissionReview", string(goodRequest)), want: 400},
		{name: "unknown group", body: reviewJSON("example.com/v1", "AdmissionReview", string(goodRequest)), want: 400},
		{name: "no type", body: `{"request":` + string(goodRequest) + `}`, want: 400},
		{name: "not json", body: `<AdmissionReview/>`, want: 400},
		{name: "trailing garbage", body: reviewJSON("admission.k8s.io/v1", "AdmissionReview", string(goodRequest)) + "}", want: 400},
		{name: "empty body", body: "", want: 400},
		{name: "json array", body: `[]`, want: 400},
		{name: "text content type", contentType: "text/plain", body: reviewJSON("admission.k8s.io/v1", "AdmissionReview", string(goodRequest)), want: 415},
		{name: "no content type", contentType: "-", body: reviewJSON("admission.k8s.io/v1", "AdmissionReview", string(goodRequest)), want: 415},
		{name: "GET", method: http.MethodGet, want: 405},
		{name: "another resource", body: misrouted(func(r *admissionv1.AdmissionRequest) {
			r.Resource = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
		}), want: 400},
		{name: "another group", body: misrouted(func(r *admissionv1.AdmissionRequest) { r.Resource.Group = "example.com" }), want: 400},
		{name: "the /scale subresource", body: misrouted(func(r *admissionv1.AdmissionRequest) { r.SubResource = "scale" }), want: 400},
		{name: "no resource", body: misrouted(func(r *admissionv1.AdmissionRequest) { r.Resource = metav1.GroupVersionResource{} }), want: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refusedBefore := testutil.ToFloat64(refusedReviews.WithLabelValues(strconv.Itoa(tt.want)))
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, path, strings.NewReader(tt.body))
			switch tt.contentType {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", tt.contentType)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("HTTP %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
				t.Fatalf("the answer is not an AdmissionReview with a response: %s (%v)", rec.Body, err)
			}
			if tt.want != http.StatusOK {
				if out.Response.Allowed || out.Response.Result == nil || out.Response.Result.Code != int32(tt.want) {
					t.Errorf("refusal %+v, want allowed=false with code %d", out.Response, tt.want)
				}
				// Counted, so that an operator sees who sends them.
				if got := testutil.ToFloat64(refusedReviews.WithLabelValues(strconv.Itoa(tt.want))) - refusedBefore; got != 1 {
					t.Errorf("scaleplane_admission_requests_refused_total{code=%q} grew by %v, want 1", strconv.Itoa(tt.want), got)
				}
				return
			}
			got := []string{out.APIVersion, out.Kind, string(out.Response.UID), rec.Header().Get("Content-Type")}
			want := []string{tt.wantAPIVersion, "AdmissionReview", string(good.UID), "application/json"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if !out.Response.Allowed {
				t.Errorf("the review was refused: %+v", out.Response.Result)
			}
		})
	}

	// Too large: refused from the declared length without reading the
	// body, or within the limit when no length is declared.
	for _, declared := range []bool{true, false} {
		body := &countingReader{n: MaxReviewBytes + 1<<20}
		req := httptest.NewRequest(http.MethodPost, path, body)
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = -1
		if declared {
			req.ContentLength = int64(body.n)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("declared length %v: HTTP %d, want 413: %.200s", declared, rec.Code, rec.Body)
		}
		switch {
		case declared && body.read != 0:
			t.Errorf("a body declared too large was read (%d bytes)", body.read)
		case !declared && body.read > MaxReviewBytes+1:
			t.Errorf("read %d bytes of an undeclared body, more than the limit %d", body.read, MaxReviewBytes)
		}
	}
}

// testLimits are small limits for servers under test.
func testLimits() serving.Limits {
	return serving.Limits{
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, HandlerTimeout: 5 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second,
		MaxInFlight: 4, MaxBodyBytes: 1 << 20, MaxBufferedBytes: 4 << 20,
	}
}

// startServer runs NewServer with a fresh self-signed certificate on
// 127.0.0.1 and returns it once it listens.
func startServer(t *testing.T, l serving.Limits) *Server {
	t.Helper()
	dir := t.TempDir()
	cert, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerOptions{Options: webhook.Options{Host: "127.0.0.1", Port: freePort(t), CertDir: dir}, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	views := testViews(t)
	mgr := newTestManagerWith(t, srv)
	if err := Setup(mgr, []*profile.Compiled{views[rackedCluster]}, Options{Sources: testSources()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server did not stop within 30 s")
		}
	})
	check := srv.StartedChecker()
	deadline := time.Now().Add(30 * time.Second)
	for check(nil) != nil {
		select {
		case err := <-done:
			t.Fatalf("server stopped while starting: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not started: %v", check(nil))
		}
	}
	return srv
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestWebhookServerHTTP2 proves HTTP/2 is off by default: a
// client that offers only h2 is refused in the TLS handshake, one that
// offers both gets HTTP/1.1; with HTTP2 set, h2 is negotiated.
func TestWebhookServerHTTP2(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		l := testLimits()
		l.HTTP2 = enabled
		srv := startServer(t, l)
		dial := func(protos ...string) (string, error) {
			conn, err := tls.Dial("tcp", srv.Addr(), &tls.Config{InsecureSkipVerify: true, NextProtos: protos}) //nolint:gosec // test server
			if err != nil {
				return "", err
			}
			defer conn.Close()
			return conn.ConnectionState().NegotiatedProtocol, nil
		}
		h2only, h2err := dial("h2")
		both, err := dial("h2", "http/1.1")
		if err != nil {
			t.Fatalf("http2=%v: a client offering h2 and http/1.1 was refused: %v", enabled, err)
		}
		if !enabled {
			if h2err == nil || !strings.Contains(h2err.Error(), "no application protocol") {
				t.Errorf("HTTP/2 off: an h2-only client negotiated %q (err %v), want the handshake refused", h2only, h2err)
			}
			if both != "http/1.1" {
				t.Errorf("HTTP/2 off: negotiated %q, want http/1.1", both)
			}
			continue
		}
		if h2err != nil || h2only != "h2" || both != "h2" {
			t.Errorf("HTTP/2 on: negotiated %q and %q (err %v), want h2", h2only, both, h2err)
		}
	}
}

// TestWebhookServerLimits sends reviews to NewServer over TLS:
// the server's own body limit answers 413 from the declared length, a
// review is admitted, a review without a uid is a 400.
func TestWebhookServerLimits(t *testing.T) {
	l := testLimits()
	l.MaxBodyBytes = 64 << 10
	srv := startServer(t, l)
	view := testViews(t)[rackedCluster]
	url := "https://" + srv.Addr() + MutatePath(view.GVR())
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test server
	post := func(body []byte) (int, *admissionv1.AdmissionReview) {
		t.Helper()
		resp, err := c.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out admissionv1.AdmissionReview
		data, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(data, &out)
		return resp.StatusCode, &out
	}
	good := create(view, makeObj(rackedCluster, "x").replicas(2)).AdmissionRequest
	body, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &good})
	if code, out := post(body); code != http.StatusOK || out.Response == nil || out.Response.UID != good.UID {
		t.Errorf("good review: HTTP %d %+v", code, out.Response)
	}
	noUID := good
	noUID.UID = ""
	body, _ = json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &noUID})
	if code, _ := post(body); code != http.StatusBadRequest {
		t.Errorf("review without uid: HTTP %d, want 400", code)
	}
	if code, _ := post(bytes.Repeat([]byte(" "), 64<<10+1)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("body over the server's limit: HTTP %d, want 413", code)
	}
}

// newTestManagerWith is newTestManager with srv as its webhook server.
func newTestManagerWith(t *testing.T, srv webhook.Server) manager.Manager {
	t.Helper()
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          srv,
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestSilentTLSClient: a client that connects and never sends
// its TLS ClientHello is disconnected after the header timeout, which
// bounds the handshake too.
func TestSilentTLSClient(t *testing.T) {
	l := testLimits()
	l.ReadHeaderTimeout = 500 * time.Millisecond
	srv := startServer(t, l)
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	closed := make(chan error, 1)
	go func() {
		_, err := conn.Read(make([]byte, 1))
		closed <- err
	}()
	select {
	case err := <-closed:
		if err == nil {
			t.Error("the server sent bytes to a client that sent none")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a silent client is still connected after 20 s (header timeout 500 ms)")
	}
}
