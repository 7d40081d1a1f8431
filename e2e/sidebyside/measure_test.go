package sidebyside

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCPUTicksCountsFieldsAfterACommandWithSpacesAndParentheses(t *testing.T) {
	line := []byte("4242 (kube (controller) m) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 12 0 99 0 0\n")
	got, err := cpuTicks(line)
	if err != nil {
		t.Fatal(err)
	}
	if got != 1234+567 {
		t.Errorf("cpuTicks = %d, want %d", got, 1234+567)
	}
	if _, err := cpuTicks([]byte("4242 (short) S 1 2")); err == nil {
		t.Errorf("a short stat line was accepted")
	}
}

func TestProcessCPUAndPeakRSSReadThisProcess(t *testing.T) {
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	rss, err := ProcessPeakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 {
		t.Errorf("peak RSS of this process = %d", rss)
	}
}

func TestPeakRSSReadsVmHWMInBytes(t *testing.T) {
	got, err := peakRSS([]byte("Name:\tx\nVmPeak:\t  900 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1024 kB\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got != 2048<<10 {
		t.Errorf("peakRSS = %d, want %d", got, 2048<<10)
	}
	if _, err := peakRSS([]byte("Name:\tx\n")); err == nil {
		t.Errorf("a status without VmHWM was accepted")
	}
}

func TestMatchCmdlineWantsTheBaseNameAndEveryArgument(t *testing.T) {
	cmd := []byte("/bin/controlplane/kube-controller-manager\x00--kubeconfig=/tmp/run1/kubeconfig\x00--v=2\x00")
	if !matchCmdline(cmd, "kube-controller-manager", []string{"/tmp/run1/"}) {
		t.Errorf("own controller manager not matched")
	}
	if matchCmdline(cmd, "kube-controller-manager", []string{"/tmp/run2/"}) {
		t.Errorf("another run's controller manager matched")
	}
	if matchCmdline(cmd, "kube-apiserver", nil) {
		t.Errorf("another program matched")
	}
}

const apiserverMetrics = `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="pods",verb="GET"} 10
apiserver_request_total{code="201",resource="pods",verb="POST"} 3
apiserver_request_total{code="200",resource="rackedclusters",subresource="scale",verb="PATCH"} 4
apiserver_request_total{code="200",resource="pods",verb="WATCH"} 2
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.scaleplane.io",operation="CREATE",rejected="false",type="admit",le="0.005"} 50
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.scaleplane.io",operation="CREATE",rejected="false",type="admit",le="0.025"} 90
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.scaleplane.io",operation="CREATE",rejected="false",type="admit",le="0.1"} 100
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.scaleplane.io",operation="CREATE",rejected="false",type="admit",le="+Inf"} 100
apiserver_admission_webhook_admission_duration_seconds_sum{name="m.scaleplane.io",operation="CREATE",rejected="false",type="admit"} 1
apiserver_admission_webhook_admission_duration_seconds_count{name="m.scaleplane.io",operation="CREATE",rejected="false",type="admit"} 100
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="0.005"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="0.025"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="0.1"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="+Inf"} 7
apiserver_admission_webhook_admission_duration_seconds_sum{name="other.example.com",operation="CREATE",rejected="false",type="admit"} 70
apiserver_admission_webhook_admission_duration_seconds_count{name="other.example.com",operation="CREATE",rejected="false",type="admit"} 7
`

func TestParseAPIServerMetricsCountsWritesAndOneWebhooksLatency(t *testing.T) {
	m, err := ParseAPIServerMetrics(strings.NewReader(apiserverMetrics), "m.scaleplane.io")
	if err != nil {
		t.Fatal(err)
	}
	if m.Requests != (APICounts{All: 19, Writes: 7}) {
		t.Errorf("requests = %+v, want all 19, writes 7", m.Requests)
	}
	if got := TopWrites(map[string]float64{"POST pods": 1}, m.WritesBy, 5); !slices.Equal(got, []string{"PATCH rackedclusters/scale: 4", "POST pods: 2"}) {
		t.Errorf("top writes = %q", got)
	}
	// 99th of 100: in the (0.025, 0.1] bucket, 9 of its 10.
	if got := m.Admission.Quantile(0.99); math.Abs(got-0.0925) > 1e-9 {
		t.Errorf("admission p99 = %g, want 0.0925", got)
	}
	if got := m.Admission.Quantile(0.5); math.Abs(got-0.005) > 1e-9 {
		t.Errorf("admission p50 = %g, want 0.005", got)
	}
	if d := m.Admission.Sub(m.Admission); !math.IsNaN(d.Quantile(0.99)) {
		t.Errorf("a histogram less itself has quantile %g, want NaN", d.Quantile(0.99))
	}
}

func TestPercentileIsTheNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := Percentile(ds, 0.5); got != 50*time.Millisecond {
		t.Errorf("p50 = %s", got)
	}
	if got := Percentile(ds, 0.99); got != 99*time.Millisecond {
		t.Errorf("p99 = %s", got)
	}
	if got := Percentile(nil, 0.99); got != 0 {
		t.Errorf("p99 of none = %s", got)
	}
}

func TestFormatTableGivesTheReferenceOverEachArm(t *testing.T) {
	out := FormatTable("side by side: N=10", []ArmResult{
		{Arm: "A", Processes: "scaleplane", Limits: "none", CPUPerMinute: 1, PeakRSS: 10 << 20, RequestsPerMinute: 100, WritesPerMinute: 90, StepsPerMinute: 60, P50: time.Second, P99: 2 * time.Second},
		{Arm: "C", Processes: "keda", Limits: "raised", CPUPerMinute: 12, PeakRSS: 200 << 20, RequestsPerMinute: 0, StepsPerMinute: 60, P50: 3 * time.Second, P99: 4 * time.Second, Missed: 1, Deadline: 4 * time.Second},
	})
	// 12 CPU s over 60 steps is 200 ms a step; 90 writes over 60, 1.5.
	for _, want := range []string{"N=10", "12.0x", "20.0x", "3.0x", "2.0x", " 3s ", ">=4s", " 200 ", " 1.50 ", "C: keda; client limits: raised"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// No API requests by the reference: a ratio of 0, not a division by 0.
	if !strings.Contains(out, "0.0x") {
		t.Errorf("table lacks the 0.0x ratio of requests:\n%s", out)
	}
}
