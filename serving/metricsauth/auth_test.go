package metricsauth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
)

// fakeAPIServer answers TokenReviews and SubjectAccessReviews as the API
// server does: the tokens "reader" and "nobody" are ServiceAccounts, any
// other is refused with status.error; only "reader" may get /metrics.
// failing makes both reviews fail with a 500.
type fakeAPIServer struct {
	failing atomic.Bool
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.failing.Load() {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcdserver: request timed out","reason":"InternalError","code":500}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		var tr authenticationv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&tr)
		switch tr.Spec.Token {
		case "reader", "nobody", "reader-2":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "system:serviceaccount:team:" + tr.Spec.Token}}
		default:
			tr.Status = authenticationv1.TokenReviewStatus{Error: "[invalid bearer token, token lookup failed]"}
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(tr)
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		var sar authorizationv1.SubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&sar)
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:team:reader" || sar.Spec.User == "system:serviceaccount:team:reader-2"
		if !sar.Status.Allowed {
			sar.Status.Reason = "no RBAC policy matched"
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(sar)
	default:
		http.NotFound(w, r)
	}
}

// TestAuthentication: no or bogus credentials are 401 (where
// controller-runtime's filter answers a bogus token 500), an
// authenticated caller without the permission 403, an API server that
// cannot review the token or the access 503.
func TestAuthentication(t *testing.T) {
	fake := &fakeAPIServer{}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	cfg := &rest.Config{Host: api.URL}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := Authenticate(cfg, hc, AuthOptions{RetryBackoff: &wait.Backoff{Duration: time.Millisecond, Steps: 1}, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	h := auth(okHandler)
	call := func(path, authorization string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s %q: 401 without WWW-Authenticate", path, authorization)
		}
		return rec.Code
	}
	type result struct {
		Case string
		Code int
	}
	var got, want []result
	check := func(name, path, authorization string, code int) {
		got = append(got, result{name, call(path, authorization)})
		want = append(want, result{name, code})
	}
	check("no credentials", "/metrics", "", 401)
	check("basic credentials", "/metrics", "Basic dXNlcjpwYXNz", 401)
	check("empty bearer", "/metrics", "Bearer ", 401)
	check("bogus bearer", "/metrics", "Bearer bogus", 401)
	check("not allowed", "/metrics", "Bearer nobody", 403)
	check("allowed", "/metrics", "Bearer reader", 200)
	fake.failing.Store(true)
	// A token not reviewed yet, and a path not authorized yet: both reviews
	// must reach the failing API server (answers are cached).
	check("token review fails", "/metrics", "Bearer reader-2", 503)
	check("access review fails", "/debug/store", "Bearer reader", 503)
	fake.failing.Store(false)
	check("recovered", "/debug/store", "Bearer reader", 200)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}

	// Why: controller-runtime's own filter, on the same API
	// server, answers a bogus token 500.
	filter, err := filters.WithAuthenticationAndAuthorization(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	crHandler, _ := filter(logr.Discard(), okHandler)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer bogus")
	rec := httptest.NewRecorder()
	crHandler.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusInternalServerError {
		t.Logf("controller-runtime's filter now answers a bogus token %d (%s); the reason for Authenticate may be gone", rec.Code, body)
	}
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, "ok")
})
