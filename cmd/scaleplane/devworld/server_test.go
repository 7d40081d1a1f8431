package devworld

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestPodServer: a pod's server listens on loopback, counts
// every work request in http_requests_total and observes its latency, and
// serves both as Prometheus exposition that the scraper's parser reads;
// after stop it refuses connections.
func TestPodServer(t *testing.T) {
	s, err := startPodServer("web-a-0")
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			s.stop()
		}
	}()
	if !strings.HasPrefix(s.addr(), "127.0.0.1:") {
		t.Fatalf("server listens on %s, want 127.0.0.1", s.addr())
	}
	base := "http://" + s.addr()
	for range 3 {
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("work request: HTTP %d", resp.StatusCode)
		}
	}
	resp, err := http.Get(base + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, body)
	}
	got := map[string]float64{}
	if f := families["http_requests_total"]; f != nil {
		for _, m := range f.Metric {
			got["requests"] += m.GetCounter().GetValue()
		}
	}
	if f := families["http_request_duration_seconds"]; f != nil {
		for _, m := range f.Metric {
			got["observations"] += float64(m.GetHistogram().GetSampleCount())
		}
	}
	if diff := cmp.Diff(map[string]float64{"requests": 3, "observations": 3}, got); diff != "" {
		t.Errorf("metrics after 3 requests (-want +got):\n%s\n%s", diff, body)
	}
	s.stop()
	stopped = true
	if resp, err := http.Get(base + "/"); err == nil {
		_ = resp.Body.Close()
		t.Errorf("the stopped server still answers: HTTP %d", resp.StatusCode)
	}
}
