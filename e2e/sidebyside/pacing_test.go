package sidebyside

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestSettingsDefaultToAFifteenSecondIntervalAndRaisedLimits(t *testing.T) {
	s, err := ParseSettings(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s != DefaultSettings {
		t.Errorf("settings = %+v, want %+v", s, DefaultSettings)
	}
	if s.Steps() != 120 {
		t.Errorf("steps = %d, want 120", s.Steps())
	}
	f := s.ControllerManagerFlags()
	if f["horizontal-pod-autoscaler-sync-period"] != "15s" || f["kube-api-qps"] != "500" || f["kube-api-burst"] != "1000" {
		t.Errorf("controller manager flags = %v", f)
	}
	if got := strings.Join(s.KEDAOperatorArgs(), " "); got != "--kube-api-qps=500 --kube-api-burst=1000" {
		t.Errorf("KEDA args = %q", got)
	}
}

func TestSettingsScrapeNoSlowerThanTheIntervalAndDefaultLimitsOnRequest(t *testing.T) {
	s, err := ParseSettings(env(map[string]string{intervalVar: "1s", rateVar: "2", limitsVar: "default"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Scrape != time.Second || s.StepsPerSecond != 2 || s.RaisedLimits {
		t.Errorf("settings = %+v", s)
	}
	if _, ok := s.ControllerManagerFlags()["kube-api-qps"]; ok || s.KEDAOperatorArgs() != nil {
		t.Errorf("default limits raised: %v %q", s.ControllerManagerFlags(), s.KEDAOperatorArgs())
	}
	if f := s.ControllerManagerFlags()["horizontal-pod-autoscaler-sync-period"]; f != "1s" {
		t.Errorf("sync period = %q, want 1s", f)
	}
}

func TestSettingsRefuseWhatNoArmCanRunWith(t *testing.T) {
	for _, bad := range []map[string]string{
		{intervalVar: "1500ms"},
		{intervalVar: "soon"},
		{scrapeVar: "30s"},
		{rateVar: "0"},
		{rateVar: "0.001", windowVar: "10s"},
		{limitsVar: "none"},
		{windowVar: "-1m"},
	} {
		if _, err := ParseSettings(env(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestStepsArePacedFromTheWindowsStart(t *testing.T) {
	for _, c := range []struct {
		elapsed time.Duration
		rate    float64
		want    int
	}{
		{-time.Second, 1, 0},
		{0, 1, 1},
		{999 * time.Millisecond, 1, 1},
		{time.Second, 1, 2},
		{10 * time.Second, 0.5, 6},
		{time.Hour, 1, 120},
	} {
		if got := StepsDue(c.elapsed, c.rate, 120); got != c.want {
			t.Errorf("StepsDue(%s, %g) = %d, want %d", c.elapsed, c.rate, got, c.want)
		}
	}
}

func TestRotationPassesOverBusyWorkloads(t *testing.T) {
	r := NewRotation([]string{"a", "b", "c"})
	busy := map[string]bool{"b": true}
	var got []string
	for range 4 {
		n, ok := r.Next(func(n string) bool { return busy[n] })
		if !ok {
			t.Fatal("no workload free")
		}
		got = append(got, n)
	}
	if strings.Join(got, "") != "acac" {
		t.Errorf("rotation = %q, want a c a c", got)
	}
	if _, ok := r.Next(func(string) bool { return true }); ok {
		t.Errorf("a workload handed out while all were busy")
	}
}

func TestArmsAreChargedTheProcessesThatServeThem(t *testing.T) {
	// own 2, Prometheus 3, controller manager 1.5 of which 0.5 idle.
	if got := ChargedCPU(2, 3, 1.5, 0.5, Charges{}); got != 2 {
		t.Errorf("embedded store arm charged %g, want 2", got)
	}
	if got := ChargedCPU(2, 3, 1.5, 0.5, Charges{Prometheus: true}); got != 5 {
		t.Errorf("remote Prometheus arm charged %g, want 5", got)
	}
	if got := ChargedCPU(2, 3, 1.5, 0.5, Charges{Prometheus: true, HPAController: true}); got != 6 {
		t.Errorf("KEDA arm charged %g, want 6", got)
	}
	// A controller manager quieter in the window than idle adds nothing.
	if got := ChargedCPU(2, 0, 0.1, 0.5, Charges{HPAController: true}); got != 2 {
		t.Errorf("charged %g, want 2", got)
	}
}
