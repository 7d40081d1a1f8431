package externalscaler

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/scaleplane/scaleplane/scaling"
)

const rps = `sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[1m]))`

// A ScaledObject's metadata is read as a scaleplane
// trigger, with every problem reported at its metadata key.
func TestMetadata(t *testing.T) {
	cases := []struct {
		name    string
		md      map[string]string
		want    scaling.Trigger
		wantErr []string
	}{
		{
			name: "query and threshold, KEDA's own keys passed along",
			md:   map[string]string{"query": rps, "threshold": "10", "scalerAddress": "127.0.0.1:9090", "enableTLS": "false"},
			want: scaling.Trigger{Name: "scaleplane", Type: scaling.TargetAverageValue, Source: "promql", Query: rps, Threshold: 10},
		},
		{
			name: "every key",
			md:   map[string]string{"query": "vector(1)", "threshold": " 2.5 ", "activationThreshold": "0.5", "source": "prometheus", "metricName": "queue", "podSelector": "app=web"},
			want: scaling.Trigger{Name: "queue", Type: scaling.TargetAverageValue, Source: "prometheus", Query: "vector(1)", Threshold: 2.5, ActivationThreshold: ptr.To(0.5)},
		},
		{
			name:    "nothing",
			md:      map[string]string{},
			wantErr: []string{"metadata.threshold: Required value", "metadata.query: Required value"},
		},
		{
			name:    "a typo is not a default",
			md:      map[string]string{"query": "vector(1)", "treshold": "10"},
			wantErr: []string{`metadata[treshold]: Unsupported value: "treshold"`, "metadata.threshold: Required value"},
		},
		{
			name: "bad numbers and query",
			md:   map[string]string{"query": "sum(rate(x[1m])", "threshold": "ten", "activationThreshold": "-1"},
			wantErr: []string{
				`metadata.threshold: Invalid value: "ten"`,
				"metadata.query: Invalid value",
				"metadata.activationThreshold: Invalid value: -1",
			},
		},
		{
			name:    "threshold zero, range vector",
			md:      map[string]string{"query": "x[1m]", "threshold": "0"},
			wantErr: []string{"metadata.query: Invalid value", "metadata.threshold: Invalid value: 0"},
		},
		{
			name:    "a source that is not a query",
			md:      map[string]string{"query": "vector(1)", "threshold": "1", "source": "cron"},
			wantErr: []string{`metadata.source: Unsupported value: "cron"`},
		},
		{
			name:    "metric name and selector",
			md:      map[string]string{"query": "vector(1)", "threshold": "1", "metricName": "Not A Name", "podSelector": "app in (("},
			wantErr: []string{`metadata.metricName: Invalid value: "Not A Name"`, `metadata.podSelector: Invalid value: "app in (("`},
		},
		{
			// Hostile tenant: the scraper matches it
			// against every pod of the namespace on every cycle.
			name:    "a selector of 2000 values",
			md:      map[string]string{"query": "vector(1)", "threshold": "1", "podSelector": "app in (" + strings.Repeat("a,", 1999) + "a)"},
			wantErr: []string{"metadata.podSelector: Too long: may not be more than 1024 bytes"},
		},
		{
			name:    "an empty selector selects every pod",
			md:      map[string]string{"query": "vector(1)", "threshold": "1", "podSelector": ""},
			wantErr: []string{`metadata.podSelector: Invalid value: ""`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := parseMetadata(tc.md, querySources(t, nil))
			var gotErr []string
			for _, e := range errs {
				gotErr = append(gotErr, e.Error())
			}
			if len(tc.wantErr) > 0 {
				if len(gotErr) != len(tc.wantErr) {
					t.Fatalf("errors %q, want %d starting with %q", gotErr, len(tc.wantErr), tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !containsPrefix(gotErr, w) {
						t.Errorf("errors %q: none starts with %q", gotErr, w)
					}
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			if diff := cmp.Diff(tc.want, got.trigger); diff != "" {
				t.Errorf("trigger (-want +got):\n%s", diff)
			}
		})
	}
}

func containsPrefix(ss []string, prefix string) bool {
	return slices.ContainsFunc(ss, func(s string) bool { return strings.HasPrefix(s, prefix) })
}
