package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/scaling"
)

func TestParseTarget(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{"default/rackedclusters/demo", []string{"default", "rackedclusters", "demo"}, ""},
		{"default/demo", nil, `workload "default/demo": write it as NAMESPACE/RESOURCE/NAME, e.g. default/rackedclusters/demo`},
		{"", nil, `workload "": write it as NAMESPACE/RESOURCE/NAME, e.g. default/rackedclusters/demo`},
		{"a//b", nil, `workload "a//b": write it as NAMESPACE/RESOURCE/NAME, e.g. default/rackedclusters/demo`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			ns, res, name, err := parseTarget(tc.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			var got []string
			if err == nil {
				got = []string{ns, res, name}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.err, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderExplanation(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	e := autoscaler.Explanation{
		Kind: "RackedCluster", Resource: "rackedclusters", Namespace: "shop", Name: "cart",
		State: autoscaler.StateAutoscaling, PollingIntervalSeconds: 15, LastActivity: t0.Add(-time.Minute),
		Decisions: []autoscaler.Record{
			{Written: true, Decision: scaling.Decision{Time: t0, Current: 2, Desired: 6, Action: scaling.ActionScaleUp, Min: 1, Max: 10,
				Reason: "Scale up from 2 to 6: rps=103 > 20 per replica",
				Triggers: []scaling.TriggerDecision{
					{Name: "rps", Valid: true, Value: 103, Desired: 6},
					{Name: "queue", Problem: "no data"},
				}}},
			{Error: "conflict", Decision: scaling.Decision{Time: t0.Add(15 * time.Second), Current: 6, Desired: 4, Action: scaling.ActionScaleDown, Min: 1, Max: 10,
				Reason: "Scale down from 6 to 4: all triggers below target (rps=70 < 20 per replica)", Limit: scaling.LimitNone,
				Stabilization: "ScaleDownStabilized",
				Triggers:      []scaling.TriggerDecision{{Name: "rps", Valid: true, Value: 70, Desired: 4}}}},
		},
	}
	var b strings.Builder
	renderExplanation(&b, e)
	want := `RackedCluster shop/cart: Autoscaling
polling every 15s; last activity 2026-06-01T11:59:00Z

TIME      REPLICAS               ACTION     TRIGGERS (value -> wants)    LIMITS                     REASON
12:00:00  2 -> 6                 ScaleUp    rps=103 -> 6, queue=no data  1..10                      Scale up from 2 to 6: rps=103 > 20 per replica
12:00:15  6 -> 4 (write failed)  ScaleDown  rps=70 -> 4                  1..10 ScaleDownStabilized  Scale down from 6 to 4: all triggers below target (rps=70 < 20 per replica); write failed: conflict
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}

	b.Reset()
	renderExplanation(&b, autoscaler.Explanation{Kind: "Function", Namespace: "a", Name: "b", State: autoscaler.StatePaused,
		Message: `annotation scaleplane.io/paused is "true": remove it to resume autoscaling`, PollingIntervalSeconds: 1})
	want = `Function a/b: Paused (annotation scaleplane.io/paused is "true": remove it to resume autoscaling)
polling every 1s
no decisions yet
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("paused (-want +got):\n%s", diff)
	}
}

func TestFetchExplanationErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "":
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		case "Bearer denied":
			http.Error(w, "Forbidden", http.StatusForbidden)
		default:
			if r.URL.Path != "/debug/autoscaler/shop/rackedclusters/cart" {
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, `{"error": "resource \"x\" is not profiled"}`)
				return
			}
			fmt.Fprint(w, `{"kind":"RackedCluster"}`)
		}
	}))
	defer srv.Close()
	cases := []struct {
		name, server, token, resource, want string
	}{
		{"ok", srv.URL, "t", "rackedclusters", `{"kind":"RackedCluster"}`},
		{"no token", srv.URL, "", "rackedclusters", "error: 401 Unauthorized: pass a bearer token the API server accepts (--token or --token-file)"},
		{"denied", srv.URL, "denied", "rackedclusters", "error: 403 Forbidden: the token's user needs `get` on the non-resource URL /debug/autoscaler/* (a ClusterRole with nonResourceURLs)"},
		{"server's message", srv.URL, "t", "x", `error: 404 Not Found: resource "x" is not profiled`},
		{"bad server", "127.0.0.1:8443", "t", "rackedclusters", `error: --server "127.0.0.1:8443": give the metrics address as http://HOST:PORT (dev) or https://HOST:PORT`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, err := fetchExplanation(context.Background(), srv.Client(), tc.server, tc.token, "shop", tc.resource, "cart")
			got := string(body)
			if err != nil {
				got = "error: " + err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
