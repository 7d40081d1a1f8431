package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/profile"
)

// TestReviewHook: a hook given to Setup sees every answered
// review of every role, with the request's object coordinates and the
// refusal's field causes, so `scaleplane dev` prints refusals without
// decoding anything again.
func TestReviewHook(t *testing.T) {
	views := testViews(t)
	view := views[rackedCluster]
	type seen struct {
		Webhook, Name, Operation string
		Allowed                  bool
		Fields                   []string
	}
	var got []seen
	hook := func(_ context.Context, r Review) {
		s := seen{Webhook: r.Webhook, Name: r.Request.Name, Operation: string(r.Request.Operation), Allowed: r.Response.Allowed}
		if res := r.Response.Result; res != nil && res.Details != nil {
			for _, c := range res.Details.Causes {
				s.Fields = append(s.Fields, c.Field)
			}
		}
		got = append(got, s)
	}
	mgr := newTestManager(t)
	if err := Setup(mgr, []*profile.Compiled{view}, Options{Sources: testSources(), OnReview: hook}); err != nil {
		t.Fatal(err)
	}
	mux := mgr.GetWebhookServer().WebhookMux()
	m, v := Configurations([]*profile.Compiled{view}, ConfigurationOptions{}, urlConfig)
	path := func(url *string) string { return strings.TrimPrefix(*url, "https://127.0.0.1:9443") }
	send := func(p string, req admissionv1.AdmissionRequest) {
		t.Helper()
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &req,
		})
		rec := httptest.NewRecorder()
		hreq := httptest.NewRequest(http.MethodPost, p, bytes.NewReader(body))
		hreq.Header.Set("Content-Type", "application/json")
		mux.ServeHTTP(rec, hreq)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", p, rec.Code, rec.Body)
		}
	}
	send(path(m.Webhooks[0].ClientConfig.URL), create(view, makeObj(rackedCluster, "good").replicas(2)).AdmissionRequest)
	send(path(v.Webhooks[0].ClientConfig.URL), create(view, makeObj(rackedCluster, "bad").replicas(-3).groups("a", 1, "a", 1)).AdmissionRequest)
	send(path(v.Webhooks[1].ClientConfig.URL), scaleRequest(view, "x", 1, -1, "1").AdmissionRequest)

	want := []seen{
		{Webhook: roleMutate, Name: "good", Operation: "CREATE", Allowed: true},
		{Webhook: roleValidate, Name: "bad", Operation: "CREATE", Fields: []string{"spec.replicas", "spec.racks[1].name"}},
		{Webhook: roleScale, Name: "x", Operation: "UPDATE", Fields: []string{"spec.replicas"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reviews seen by the hook (-want +got):\n%s", diff)
	}
}

// TestNoHookNoWrapper: without a hook the handlers are served
// as they are, so the in-cluster binary pays nothing for dev's hook.
func TestNoHookNoWrapper(t *testing.T) {
	h := NewValidator(testViews(t)[rackedCluster], testSources())
	if got := hooked(roleValidate, h, nil); got != h {
		t.Errorf("hooked without a hook wrapped the handler: %T", got)
	}
}
