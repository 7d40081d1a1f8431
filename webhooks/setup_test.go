package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane/profile"
)

// newTestManager is a manager that is never started; its API server
// address refuses connections, so nothing here may depend on one.
func newTestManager(t *testing.T) manager.Manager {
	t.Helper()
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestSetup sends AdmissionReviews over HTTP to the paths Setup registered
// and Configurations names, as the API server does.
func TestSetup(t *testing.T) {
	views := testViews(t)
	all := []*profile.Compiled{views[rackedCluster], views[function], views[workerGroup], views[zonedDatabase]}
	mgr := newTestManager(t)
	if err := Setup(mgr, all, Options{Sources: testSources()}); err != nil {
		t.Fatal(err)
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
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", path, rec.Code, rec.Body)
		}
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("%s: bad review %s: %v", path, rec.Body, err)
		}
		if out.Response.UID != req.UID {
			t.Errorf("%s: response UID %q, want %q", path, out.Response.UID, req.UID)
		}
		return *out.Response
	}

	m, v := Configurations(all, ConfigurationOptions{}, urlConfig)
	if len(m.Webhooks) != len(all) || len(v.Webhooks) != 2*len(all) {
		t.Fatalf("unexpected entry counts %d, %d", len(m.Webhooks), len(v.Webhooks))
	}
	for i, view := range all {
		mutatePath := strings.TrimPrefix(*m.Webhooks[i].ClientConfig.URL, "https://127.0.0.1:9443")
		validatePath := strings.TrimPrefix(*v.Webhooks[2*i].ClientConfig.URL, "https://127.0.0.1:9443")
		scalePath := strings.TrimPrefix(*v.Webhooks[2*i+1].ClientConfig.URL, "https://127.0.0.1:9443")

		kind := view.GVK().Kind
		good := create(view, makeObj(kind, "x").replicas(2)).AdmissionRequest
		resp := review(mutatePath, good)
		if !resp.Allowed {
			t.Errorf("%s %s: refused %+v", kind, mutatePath, resp.Result)
		}
		if kind == function && (resp.PatchType == nil || !strings.Contains(string(resp.Patch), "/spec/scaleConfig")) {
			t.Errorf("%s: want the M1 patch, got %s", mutatePath, resp.Patch)
		}
		bad := create(view, makeObj(kind, "x").replicas(-3)).AdmissionRequest
		resp = review(validatePath, bad)
		if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s: want a 422, got %+v", validatePath, resp.Result)
		}
		resp = review(scalePath, scaleRequest(view, "x", 1, -1, "1").AdmissionRequest)
		if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s: want a 422, got %+v", scalePath, resp.Result)
		}
	}
}

func TestSetupRejectsDuplicates(t *testing.T) {
	views := testViews(t)
	err := Setup(newTestManager(t), []*profile.Compiled{views[function], views[rackedCluster], views[function]}, Options{})
	if diff := cmp.Diff("set up webhooks: two profiles name samples.scaleplane.io/v1alpha1, Resource=samplefunctions; keep one", errString(err)); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestSetupKindOnce: kinds are registered one call at a time;
// a kind twice on one webhook server is an error that says so, not
// controller-runtime's duplicate-path panic.
func TestSetupKindOnce(t *testing.T) {
	views := testViews(t)
	mgr := newTestManager(t)
	d, err := NewDispatcher(mgr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{rackedCluster, function} {
		if err := d.SetupKind(views[k], Options{}); err != nil {
			t.Fatalf("set up %s: %v", k, err)
		}
	}
	err = d.SetupKind(views[function], Options{})
	if err == nil || !strings.Contains(err.Error(), "already serves it; set up each kind once") {
		t.Errorf("second set-up of functions: %v, want an error that says it is set up", err)
	}
	if !registered(mgr.GetWebhookServer(), ValidateScalePath(views[rackedCluster].GVR())) {
		t.Error("the /scale handler of rackedclusters is not registered")
	}
}

// dispatcherWithFunction is a test manager's dispatcher with the function
// kind set up at start.
func dispatcherWithFunction(t *testing.T) (*Dispatcher, manager.Manager, *profile.Compiled) {
	t.Helper()
	mgr := newTestManager(t)
	d, err := NewDispatcher(mgr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fn := testViews(t)[function]
	if err := d.SetupKind(fn, Options{Sources: testSources()}); err != nil {
		t.Fatal(err)
	}
	return d, mgr, fn
}

// TestPerKindPathsServeTheDispatchersKinds: a kind set up at start is one
// activation on the dispatcher; its per-kind paths and its dispatch paths
// answer alike, each from the kind's own options, and stop answering
// together when the kind is deactivated.
func TestPerKindPathsServeTheDispatchersKinds(t *testing.T) {
	d, mgr, fn := dispatcherWithFunction(t)
	gvr := fn.GVR()
	if got := d.Active(); len(got) != 1 || got[0] != fn {
		t.Fatalf("active kinds %v, want the kind set up", got)
	}
	mux := mgr.GetWebhookServer().WebhookMux()
	review := func(path string, req admissionv1.AdmissionRequest) (int, admissionv1.AdmissionResponse) {
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
		out.Response.UID = ""
		return rec.Code, *out.Response
	}
	good := create(fn, makeObj(function, "x").replicas(2)).AdmissionRequest
	bad := create(fn, makeObj(function, "x").replicas(-3)).AdmissionRequest
	scale := scaleRequest(fn, "x", 1, -1, "1").AdmissionRequest
	type pair struct {
		perKind, dispatch string
		req               admissionv1.AdmissionRequest
	}
	pairs := []pair{
		{MutatePath(gvr), DispatchPath(DispatchMutatePrefix, gvr), good},
		{ValidatePath(gvr), DispatchPath(DispatchValidatePrefix, gvr), bad},
		{ValidateScalePath(gvr), DispatchPath(DispatchValidateScalePrefix, gvr), scale},
	}
	for _, p := range pairs {
		_, perKind := review(p.perKind, p.req)
		_, dispatch := review(p.dispatch, p.req)
		if diff := cmp.Diff(dispatch, perKind); diff != "" {
			t.Errorf("%s against %s (-dispatch +per-kind):\n%s", p.perKind, p.dispatch, diff)
		}
	}
	// A per-kind path judges only its own resource, as before.
	if code, resp := review(ValidateScalePath(gvr), good); code != http.StatusBadRequest || resp.Allowed {
		t.Errorf("main resource at the per-kind /scale path: HTTP %d, %+v; want a 400", code, resp.Result)
	}
	d.Deactivate(gvr)
	for _, p := range pairs {
		if _, resp := review(p.perKind, p.req); resp.Allowed || resp.Result.Code != http.StatusNotFound {
			t.Errorf("%s after deactivation: %+v, want the dispatcher's 404 refusal", p.perKind, resp.Result)
		}
	}
}

// TestPerKindPathRefusesAnotherVersionsReview: a per-kind path serves the
// version it was set up for. A review of another version of the same
// resource (an entry edited to name that version at this path) is routed
// by its own version, as the dispatch paths route it, so it is refused
// while that version has no active kind instead of being judged by the
// set-up version's view.
func TestPerKindPathRefusesAnotherVersionsReview(t *testing.T) {
	_, mgr, fn := dispatcherWithFunction(t)
	gvr := fn.GVR()
	for _, c := range []struct {
		path string
		req  admissionv1.AdmissionRequest
	}{
		{MutatePath(gvr), create(fn, makeObj(function, "x").replicas(2)).AdmissionRequest},
		{ValidatePath(gvr), create(fn, makeObj(function, "x").replicas(2)).AdmissionRequest},
		{ValidateScalePath(gvr), scaleRequest(fn, "x", 1, -1, "1").AdmissionRequest},
	} {
		req := c.req
		req.Resource.Version = "v9"
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &req,
		})
		rec := httptest.NewRecorder()
		hreq := httptest.NewRequest(http.MethodPost, c.path, bytes.NewReader(body))
		hreq.Header.Set("Content-Type", "application/json")
		mgr.GetWebhookServer().WebhookMux().ServeHTTP(rec, hreq)
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("%s: HTTP %d, bad review %s: %v", c.path, rec.Code, rec.Body, err)
		}
		if out.Response.Allowed || out.Response.Result == nil || !strings.Contains(out.Response.Result.Message, "no active profile for "+gvr.GroupResource().String()+" v9") {
			t.Errorf("%s, review of version v9: %+v, want a refusal naming the version without an active kind", c.path, out.Response.Result)
		}
	}
}
