package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDispatcher: kinds are activated, changed and deactivated
// while the webhook server runs; a review of a kind not active now is
// refused (fail closed) saying so, and every active kind is judged by its
// own profile, as the per-kind handlers judge it.
func TestDispatcher(t *testing.T) {
	views := testViews(t)
	mgr := newTestManager(t)
	d, err := NewDispatcher(mgr, Options{Sources: testSources()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewDispatcher(mgr, Options{}); err == nil || !strings.Contains(err.Error(), "has one already") {
		t.Errorf("a second dispatcher on one server: %v", err)
	}
	mux := mgr.GetWebhookServer().WebhookMux()
	review := func(path string, req admissionv1.AdmissionRequest) admissionv1.AdmissionResponse {
		t.Helper()
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &req,
		})
		rec := httptest.NewRecorder()
		hreq := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)).WithContext(context.Background())
		hreq.Header.Set("Content-Type", "application/json")
		mux.ServeHTTP(rec, hreq)
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("%s: HTTP %d, bad review %s: %v", path, rec.Code, rec.Body, err)
		}
		return *out.Response
	}
	fn := views[function]
	gvr := fn.GVR()
	good := create(fn, makeObj(function, "x").replicas(2)).AdmissionRequest
	bad := create(fn, makeObj(function, "x").replicas(-3)).AdmissionRequest
	scale := scaleRequest(fn, "x", 1, -1, "1").AdmissionRequest

	// Not active yet: refused, failing closed, saying why.
	resp := review(DispatchPath(DispatchMutatePrefix, gvr), good)
	if resp.Allowed || resp.Result.Code != http.StatusNotFound || !strings.Contains(resp.Result.Message, "no active profile for samplefunctions.samples.scaleplane.io") {
		t.Errorf("inactive kind: %+v, want a 404 refusal naming the kind", resp.Result)
	}

	d.Activate(fn)
	if got := len(d.Active()); got != 1 {
		t.Errorf("%d active kinds, want 1", got)
	}
	resp = review(DispatchPath(DispatchMutatePrefix, gvr), good)
	if !resp.Allowed || !strings.Contains(string(resp.Patch), "/spec/scaleConfig") {
		t.Errorf("active kind, mutate: allowed %v, patch %s; want the M1 patch", resp.Allowed, resp.Patch)
	}
	resp = review(DispatchPath(DispatchValidatePrefix, gvr), bad)
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
		t.Errorf("active kind, validate: %+v, want a 422", resp.Result)
	}
	resp = review(DispatchPath(DispatchValidateScalePrefix, gvr), scale)
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
		t.Errorf("active kind, /scale: %+v, want a 422", resp.Result)
	}
	// A review of the main resource sent to the /scale webhook is not
	// judged by it.
	resp = review(DispatchPath(DispatchValidateScalePrefix, gvr), good)
	if resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("main resource at the /scale webhook: %+v, want a 400", resp.Result)
	}
	// Another kind stays refused while one is active.
	rc := views[rackedCluster]
	resp = review(DispatchPath(DispatchMutatePrefix, rc.GVR()), create(rc, makeObj(rackedCluster, "y").replicas(1)).AdmissionRequest)
	if resp.Allowed || resp.Result.Code != http.StatusNotFound {
		t.Errorf("another kind: %+v, want a 404", resp.Result)
	}

	// Kinds change while reviews are answered: each review sees one set.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			d.Activate(rc)
			d.Deactivate(rc.GVR())
		}
	}()
	for range 50 {
		if resp := review(DispatchPath(DispatchMutatePrefix, gvr), good); !resp.Allowed {
			t.Fatalf("active kind refused while another kind changed: %+v", resp.Result)
		}
	}
	<-done

	d.Deactivate(gvr)
	resp = review(DispatchPath(DispatchValidatePrefix, gvr), good)
	if resp.Allowed || resp.Result.Code != http.StatusNotFound {
		t.Errorf("deactivated kind: %+v, want a 404 refusal", resp.Result)
	}
	if got := len(d.Active()); got != 0 {
		t.Errorf("%d active kinds after deactivation, want 0", got)
	}
}

func TestDispatchPath(t *testing.T) {
	views := testViews(t)
	if got, want := DispatchPath(DispatchValidateScalePrefix, views[function].GVR()), "/validate-scale/samples.scaleplane.io/v1alpha1/samplefunctions"; got != want {
		t.Errorf("DispatchPath = %q, want %q", got, want)
	}
}
