package app

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMetricsRequestHook: dev's hook on the metrics server sees
// each request with the status the handler answered.
func TestMetricsRequestHook(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/activity/", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		w.WriteHeader(http.StatusTeapot) // ignored by net/http, and by the hook
	})
	mux.HandleFunc("/debug/store", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) })
	type seen struct {
		Method, Path string
		Status       int
	}
	var got []seen
	h := observed(mux, func(r *http.Request, status int) { got = append(got, seen{r.Method, r.URL.Path, status}) })
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodPost, "/activity/default/rackedclusters/web", nil),
		httptest.NewRequest(http.MethodGet, "/debug/store", nil),
		httptest.NewRequest(http.MethodGet, "/nothing", nil),
	} {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	want := []seen{
		{"POST", "/activity/default/rackedclusters/web", http.StatusAccepted},
		{"GET", "/debug/store", http.StatusOK},
		{"GET", "/nothing", http.StatusNotFound},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests seen (-want +got):\n%s", diff)
	}
}
