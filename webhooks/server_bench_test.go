package webhooks

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane/serving"
)

// discard is a ResponseWriter that keeps only the status.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(code int)        { d.code = code }

// BenchmarkServeReview measures the HTTP side of one mutating review of
// the "metrics" bench object (an UPDATE that needs no patch, and a CREATE
// that does), handler included: controller-runtime's ServeHTTP, the
// reviewHandler that replaces it, and reviewHandler behind serving.Limit
// as the webhook server runs it (the body read there, a slot, the
// handler's deadline). The difference between the lines is what the
// transport costs per review.
func BenchmarkServeReview(b *testing.B) {
	view := testViews(b)[rackedCluster]
	o := benchObjects()["metrics"]
	needs := benchObjects()["metrics"].replicas(4)
	delete(needs.o["spec"].(obj)["scaleConfig"].(obj), "maxReplicas")
	requests := map[string][]byte{}
	for name, req := range map[string]admissionv1.AdmissionRequest{
		"update": update(view, o, o).AdmissionRequest,
		"create": create(view, needs).AdmissionRequest,
	} {
		requests[name], _ = json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &req,
		})
	}
	wh := &webhook.Admission{Handler: NewMutator(view)}
	limits := serving.Limits{
		ReadHeaderTimeout: time.Second, ReadTimeout: time.Second, HandlerTimeout: 30 * time.Second, WriteTimeout: time.Minute,
		IdleTimeout: time.Second, MaxInFlight: 32, MaxBodyBytes: MaxReviewBytes, MaxBufferedBytes: 64 << 20,
	}
	transports := []struct {
		name string
		h    http.Handler
	}{
		{"controller-runtime", wh},
		{"scaleplane", reviewHandler{wh}},
		{"scaleplane+limits", serving.Limit("bench", reviewHandler{wh}, limits)},
	}
	for _, op := range []string{"update", "create"} {
		body := requests[op]
		for _, tr := range transports {
			b.Run(op+"/"+tr.name, func(b *testing.B) {
				req, _ := http.NewRequest(http.MethodPost, "/mutate", nil)
				req.Header.Set("Content-Type", "application/json")
				req.ContentLength = int64(len(body))
				w := &discard{h: http.Header{}}
				serve := func() {
					req.Body = io.NopCloser(bytes.NewReader(body))
					w.code = 0
					tr.h.ServeHTTP(w, req)
				}
				serve()
				if w.code != 0 && w.code != http.StatusOK {
					b.Fatalf("HTTP %d", w.code)
				}
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				start := cpuTime()
				n := 0
				for b.Loop() {
					serve()
					n++
				}
				b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
			})
		}
	}
}
