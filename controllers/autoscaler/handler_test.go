package autoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/scaleplane/scaleplane/scaling"
)

// objects is a client.Reader that knows which workloads exist.
type objects map[types.NamespacedName]bool

func (o objects) Get(_ context.Context, nn types.NamespacedName, obj client.Object, _ ...client.GetOption) error {
	if !o[nn] {
		return apierrors.NewNotFound(schema.GroupResource{Group: "samples.scaleplane.io", Resource: "rackedclusters"}, nn.Name)
	}
	obj.SetNamespace(nn.Namespace)
	obj.SetName(nn.Name)
	return nil
}

func (o objects) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// denyFilter stands in for filters.WithAuthenticationAndAuthorization:
// no token is 401, the token "denied" is 403, any other token passes.
func denyFilter(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(_ logr.Logger, h http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Header.Get("Authorization") {
			case "":
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
			case "Bearer denied":
				http.Error(w, "Authorization denied for user denied", http.StatusForbidden)
			default:
				h.ServeHTTP(w, r)
			}
		}), nil
	}, nil
}

// serveBehindMetricsServer mounts a's handler on a real controller-runtime
// metrics server, as app does, and returns its base URL: the test proves
// the server's filter wraps the extra handlers.
func serveBehindMetricsServer(t *testing.T, a *Autoscaler) string {
	t.Helper()
	srv, err := metricsserver.NewServer(metricsserver.Options{BindAddress: "127.0.0.1:0", FilterProvider: denyFilter}, &rest.Config{}, http.DefaultClient)
	if err != nil {
		t.Fatalf("metrics server: %v", err)
	}
	for _, p := range []string{ActivityPath, ExplainPath} {
		if err := srv.AddExtraHandler(p, a.Handler()); err != nil {
			t.Fatalf("add %s: %v", p, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics server stopped with %v", err)
		}
	})
	addr := srv.(interface{ GetBindAddr() string })
	var base string
	err = wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("metrics server stopped: %w", err)
		default:
		}
		if a := addr.GetBindAddr(); a != "" {
			base = "http://" + a
		}
		return base != "", nil
	})
	if err != nil {
		t.Fatalf("metrics server not listening: %v", err)
	}
	return base
}

func newTestAutoscaler(t *testing.T, now time.Time) *Autoscaler {
	t.Helper()
	a, err := New(Options{Views: sampleViews(t), Sources: testSources(t, nil), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return a
}

type response struct {
	Status int
	Body   string
}

func do(t *testing.T, method, url, token string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, strings.TrimSpace(string(b))}
}

func TestActivityEndpoint(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	base := serveBehindMetricsServer(t, a)
	// Before the manager is set up, activity cannot be checked against
	// the cluster.
	if got := do(t, http.MethodPost, base+"/activity/shop/rackedclusters/cart", "ok"); got.Status != http.StatusServiceUnavailable {
		t.Fatalf("before setup: got %d %s, want 503", got.Status, got.Body)
	}
	a.env.Store(&env{cache: objects{{Namespace: "shop", Name: "cart"}: true}})

	cases := []struct {
		name, method, path, token string
		want                      response
	}{
		{"no token", http.MethodPost, "/activity/shop/rackedclusters/cart", "", response{401, "Unauthorized"}},
		{"token not allowed", http.MethodPost, "/activity/shop/rackedclusters/cart", "denied", response{403, "Authorization denied for user denied"}},
		{"unknown resource", http.MethodPost, "/activity/shop/deployments/cart", "ok",
			response{404, `{
  "error": "resource \"deployments\" is not profiled; use one of: rackedclusters, samplefunctions, workergroups"
}`}},
		{"unknown workload", http.MethodPost, "/activity/shop/rackedclusters/nope", "ok",
			response{404, `{
  "error": "rackedclusters shop/nope not found: check the namespace and name"
}`}},
		{"GET is not allowed", http.MethodGet, "/activity/shop/rackedclusters/cart", "ok", response{405, "Method Not Allowed"}},
		{"recorded", http.MethodPost, "/activity/shop/rackedclusters/cart", "ok",
			response{202, `{
  "kind": "RackedCluster",
  "namespace": "shop",
  "name": "cart",
  "recorded": "2026-06-01T12:00:00Z"
}`}},
		{"by group-qualified resource", http.MethodPost, "/activity/shop/rackedclusters.samples.scaleplane.io/cart", "ok",
			response{202, `{
  "kind": "RackedCluster",
  "namespace": "shop",
  "name": "cart",
  "recorded": "2026-06-01T12:00:00Z"
}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, do(t, tc.method, base+tc.path, tc.token)); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", tc.method, tc.path, diff)
			}
		})
	}
	k := a.byResource["rackedclusters"]
	st := k.lookup("shop", "cart")
	if st == nil || !st.lastActivity().Equal(now) {
		t.Fatalf("activity not recorded: %+v", st)
	}
	// The workload is queued for a tick at once, once.
	if got := len(k.wake); got != 1 {
		t.Errorf("wake-ups queued: got %d, want 1", got)
	}
}

func TestExplainEndpoint(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	base := serveBehindMetricsServer(t, a)
	k := a.byResource["rackedclusters"]
	st := k.get(types.NamespacedName{Namespace: "shop", Name: "cart"})
	d := scaling.Decide(scaling.DecideInput{Now: now, Current: 2, Config: cfg(1, 10).trigger("rps", 20).obj(),
		Triggers: []scaling.TriggerResult{{Name: "rps", Sample: scaling.Sample{Value: 50, OK: true}}}}, &scaling.History{})
	st.publish(StateAutoscaling, "", 2*time.Second, &Record{Decision: d, Written: true})

	cases := []struct {
		name, path, token string
		wantStatus        int
		wantError         string
	}{
		{"no token", "/debug/autoscaler/shop/rackedclusters/cart", "", 401, ""},
		{"token not allowed", "/debug/autoscaler/shop/rackedclusters/cart", "denied", 403, ""},
		{"unknown resource", "/debug/autoscaler/shop/pods/cart", "ok", 404, `resource "pods" is not profiled; use one of: rackedclusters, samplefunctions, workergroups`},
		{"never seen", "/debug/autoscaler/shop/rackedclusters/other", "ok", 404, "the autoscaler has not seen rackedclusters shop/other: check the name, or wait for its first reconcile"},
		{"seen", "/debug/autoscaler/shop/rackedclusters/cart", "ok", 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := do(t, http.MethodGet, base+tc.path, tc.token)
			if got.Status != tc.wantStatus {
				t.Fatalf("status: got %d (%s), want %d", got.Status, got.Body, tc.wantStatus)
			}
			if tc.wantError != "" {
				var e struct{ Error string }
				if err := json.Unmarshal([]byte(got.Body), &e); err != nil {
					t.Fatalf("error body %q: %v", got.Body, err)
				}
				if diff := cmp.Diff(tc.wantError, e.Error); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
			}
		})
	}

	got := do(t, http.MethodGet, base+"/debug/autoscaler/shop/rackedclusters/cart", "ok")
	var e Explanation
	if err := json.Unmarshal([]byte(got.Body), &e); err != nil {
		t.Fatalf("decode %s: %v", got.Body, err)
	}
	want := Explanation{Group: "samples.scaleplane.io", Kind: "RackedCluster", Resource: "rackedclusters", Namespace: "shop", Name: "cart",
		State: StateAutoscaling, PollingIntervalSeconds: 2, Decisions: []Record{{Decision: d, Written: true}}}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("explanation (-want +got):\n%s", diff)
	}
	// The decision's inputs are in the JSON under the Decision's names.
	for _, field := range []string{`"current": 2`, `"desired": 3`, `"threshold": 20`, `"value": 50`, `"written": true`} {
		if !strings.Contains(got.Body, field) {
			t.Errorf("explanation JSON lacks %s:\n%s", field, got.Body)
		}
	}
}

func TestRing(t *testing.T) {
	cases := []struct {
		size, adds int
		want       []int32
	}{
		{3, 0, []int32{}},
		{3, 2, []int32{0, 1}},
		{3, 3, []int32{0, 1, 2}},
		{3, 4, []int32{1, 2, 3}},
		{3, 7, []int32{4, 5, 6}},
		{1, 5, []int32{4}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d in %d", tc.adds, tc.size), func(t *testing.T) {
			r := newRing(tc.size)
			for i := range tc.adds {
				r.add(Record{Decision: scaling.Decision{Desired: int32(i)}})
			}
			got := []int32{}
			for _, rec := range r.list() {
				got = append(got, rec.Desired)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("records oldest first (-want +got):\n%s", diff)
			}
		})
	}
}
