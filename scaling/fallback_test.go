package scaling

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func fbPath() *field.Path { return field.NewPath("spec", "fallback") }

// fallbackConfig is a 1..10 range with one AverageValue trigger "q" of
// threshold 10 and a fallback of replicas after threshold failures.
func fallbackConfig(threshold, replicas int32, behavior FallbackBehavior) *Config {
	c := mkConfig(1, 10).Trigger("q", TargetAverageValue, 10).Obj()
	c.Fallback = &Fallback{FailureThreshold: threshold, Replicas: replicas, Behavior: behavior}
	return c
}

// decideNow runs one tick at t0+i seconds with no downscale window, so
// the fallback count shows as it is (the HPA's windows and policies apply
// to it as to any trigger's count, which other tests hold).
func decideNow(c *Config, cur int32, h *History, i int, rs ...TriggerResult) Decision {
	zero := time.Duration(0)
	return Decide(DecideInput{Now: t0.Add(time.Duration(i) * time.Second), Current: cur, Config: c, Triggers: rs, DownscaleStabilization: &zero}, h)
}

// TestFallbackBehaviorsAsKEDADocumentsThem: once a trigger has failed
// more than failureThreshold times in a row it stands for static:
// replicas; currentReplicas: the current count; currentReplicasIfHigher:
// the current count if above replicas, else replicas;
// currentReplicasIfLower: the current count if below replicas, else
// replicas (KEDA's fallback behaviors).
func TestFallbackBehaviorsAsKEDADocumentsThem(t *testing.T) {
	tests := []struct {
		behavior FallbackBehavior
		cur      int32
		want     int32
	}{
		{"", 2, 6},
		{FallbackStatic, 2, 6},
		{FallbackStatic, 8, 6},
		{FallbackCurrentReplicas, 2, 2},
		{FallbackCurrentReplicas, 8, 8},
		{FallbackCurrentReplicasIfHigher, 2, 6},
		{FallbackCurrentReplicasIfHigher, 8, 8},
		{FallbackCurrentReplicasIfLower, 2, 2},
		{FallbackCurrentReplicasIfLower, 8, 6},
	}
	for _, tt := range tests {
		t.Run(string(tt.behavior)+"/"+string(rune('0'+tt.cur)), func(t *testing.T) {
			c := fallbackConfig(0, 6, tt.behavior)
			c.Behavior = immediate()
			h := &History{}
			decideNow(c, tt.cur, h, 0, val("q", float64(tt.cur)*10))
			d := decideNow(c, tt.cur, h, 60, failed("q", errors.New("connection refused")))
			if d.Desired != tt.want {
				t.Errorf("behavior %q at %d replicas: desired %d, want %d (%s)", tt.behavior, tt.cur, d.Desired, tt.want, d.Reason)
			}
			if d.Fallback == nil || !d.Triggers[0].Fallback || d.Triggers[0].Valid {
				t.Errorf("decision does not say the trigger is in fallback: %+v", d)
			}
		})
	}
}

// TestFallbackAppliesAfterMoreThanThresholdFailures: with
// failureThreshold 2, the first two failures keep the count (as without a
// fallback), the third moves to the fallback count; a success ends it at
// once and starts the count again.
func TestFallbackAppliesAfterMoreThanThresholdFailures(t *testing.T) {
	c := fallbackConfig(2, 6, FallbackStatic)
	h := &History{}
	down := failed("q", errors.New("503 from the remote Prometheus"))
	steps := []struct {
		r        TriggerResult
		desired  int32
		failures int32
		fallback bool
	}{
		{down, 3, 1, false},
		{noData("q"), 3, 2, false},
		{down, 6, 3, true},
		{down, 6, 4, true},
		{val("q", 40), 4, 0, false}, // 40 / 10 per replica
		{down, 4, 1, false},
	}
	cur := int32(3)
	for i, s := range steps {
		d := decideNow(c, cur, h, i, s.r)
		got := struct {
			Desired, Failures int32
			Fallback          bool
		}{d.Desired, d.Triggers[0].Failures, d.Fallback != nil}
		want := struct {
			Desired, Failures int32
			Fallback          bool
		}{s.desired, s.failures, s.fallback}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("tick %d (-want +got):\n%s\nreason: %s", i, diff, d.Reason)
		}
		cur = d.Desired
	}
}

// TestFallbackReasonNamesTheFailures: the reason and the condition text
// come from the values: which trigger, how many failures, the threshold,
// the count it stands for and the count decided.
func TestFallbackReasonNamesTheFailures(t *testing.T) {
	c := fallbackConfig(1, 6, FallbackCurrentReplicasIfHigher)
	c.Behavior = immediate()
	h := &History{}
	decideNow(c, 2, h, 0, failed("q", errors.New("connection refused")))
	d := decideNow(c, 2, h, 1, failed("q", errors.New("connection refused")))
	want := "q failed 2 times in a row (connection refused), more than the failureThreshold 1: it stands for the fallback count 6 (behavior currentReplicasIfHigher); decided 6"
	if got := FallbackReason(d); got != want {
		t.Errorf("FallbackReason:\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(d.Reason, "trigger q failed 2 times in a row") {
		t.Errorf("decision reason does not name the fallback: %s", d.Reason)
	}
}

// TestFallbackNeverScalesToZero: an idle workload whose trigger is in
// fallback keeps its count (metrics veto), and one at zero wakes, as KEDA
// scales a ScaledObject at zero to its fallback count.
func TestFallbackNeverScalesToZero(t *testing.T) {
	c := fallbackConfig(0, 2, FallbackStatic)
	c.MinReplicas = fbInt(0)
	c.Idle = &Idle{TimeoutSeconds: fbInt(1)}
	h := &History{AwakeSince: t0.Add(-time.Hour)}
	d := decideNow(c, 2, h, 0, failed("q", errors.New("timeout")))
	if d.Desired != 2 || d.Idle == nil || !d.Idle.MetricsVeto {
		t.Errorf("idle workload in fallback: desired %d, idle %+v, want 2 and a metrics veto (%s)", d.Desired, d.Idle, d.Reason)
	}
	asleep := &History{}
	d = decideNow(c, 0, asleep, 0, failed("q", errors.New("timeout")))
	if d.Desired == 0 || d.Action != ActionWakeUp {
		t.Errorf("workload at zero in fallback: %d %s, want a wake-up (%s)", d.Desired, d.Action, d.Reason)
	}
}

// TestFailuresCountOnlyWhatTheSourceDid: a trigger scaleplane did not
// evaluate (its namespace over its share, the tick out of time) keeps its
// failures in a row, neither one more nor back to 0; a trigger removed
// from the config is forgotten.
func TestFailuresCountOnlyWhatTheSourceDid(t *testing.T) {
	c := fallbackConfig(1, 6, FallbackStatic)
	h := &History{}
	decideNow(c, 3, h, 0, failed("q", errors.New("refused")))
	throttled := TriggerResult{Name: "q", Err: errors.New("throttled"), NotEvaluated: true}
	for i := 1; i <= 5; i++ {
		if d := decideNow(c, 3, h, i, throttled); d.Triggers[0].Failures != 1 || d.Fallback != nil {
			t.Fatalf("throttled tick %d: failures %d, fallback %v; want 1 and none", i, d.Triggers[0].Failures, d.Fallback)
		}
	}
	if d := decideNow(c, 3, h, 6, failed("q", errors.New("refused"))); d.Fallback == nil {
		t.Errorf("second real failure after throttled ticks: no fallback (%s)", d.Reason)
	}
	other := mkConfig(1, 10).Trigger("r", TargetAverageValue, 10).Obj()
	decideNow(other, 3, h, 7, val("r", 30))
	if len(h.Failures) != 0 {
		t.Errorf("failures of a trigger no longer configured are kept: %v", h.Failures)
	}
}

// TestFallbackValidated is V12: a negative threshold, an unknown
// behavior, a count outside the range and a fallback without triggers
// are refused at their paths.
func TestFallbackValidated(t *testing.T) {
	c := fallbackConfig(-1, 11, "sometimes")
	errs := validateFallback(c.Fallback, c, 1, fbPath)
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{"spec.fallback.failureThreshold", "spec.fallback.behavior", "spec.fallback.replicas"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields (-want +got):\n%s\n%v", diff, errs)
	}
	if errs := validateFallback(&Fallback{Replicas: 2}, c, 0, fbPath); len(errs) != 1 || !strings.Contains(errs[0].Detail, "has none") {
		t.Errorf("fallback without triggers: %v", errs)
	}
	ok := fallbackConfig(3, 4, FallbackCurrentReplicasIfLower)
	if errs := validateFallback(ok.Fallback, ok, 1, fbPath); len(errs) != 0 {
		t.Errorf("a valid fallback refused: %v", errs)
	}
}
func fbInt(v int32) *int32 { return &v }

// immediate is a behavior without windows or limits to speak of, so a
// decision shows the count a trigger asks for.
func immediate() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	zero := int32(0)
	policy := []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 100, PeriodSeconds: 1}}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero, Policies: policy},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero, Policies: policy},
	}
}

// TestNoDataAtZeroIsNoFailure: a sleeping workload has no pods and so its
// queries often no series; that is no failure of the source, so it never
// falls back and wakes on its own (and the wake-sleep loop that would
// follow). A source error at zero still counts, and a formula whose input
// has no data at zero has none either.
func TestNoDataAtZeroIsNoFailure(t *testing.T) {
	c := fallbackConfig(0, 2, FallbackStatic)
	c.MinReplicas = fbInt(0)
	c.Idle = &Idle{TimeoutSeconds: fbInt(60)}
	h := &History{}
	for i := range 5 {
		if d := decideNow(c, 0, h, i, noData("q")); d.Desired != 0 || d.Fallback != nil {
			t.Fatalf("tick %d at zero without data: desired %d, fallback %+v; want 0 and none (%s)", i, d.Desired, d.Fallback, d.Reason)
		}
	}
	m := modifiersConfig("a + b")
	m.MinReplicas = fbInt(0)
	m.Idle = &Idle{TimeoutSeconds: fbInt(60)}
	m.Fallback = &Fallback{Replicas: 3}
	h = &History{}
	for i := range 3 {
		if d := decideNow(m, 0, h, i, noData("a"), val("b", 1)); d.Desired != 0 || d.Fallback != nil {
			t.Fatalf("formula tick %d at zero with an input without data: desired %d, fallback %+v (%s)", i, d.Desired, d.Fallback, d.Reason)
		}
	}
	if d := decideNow(c, 0, &History{}, 0, failed("q", errors.New("connection refused"))); d.Desired == 0 {
		t.Errorf("a source error at zero: desired 0, want the fallback's wake-up (%s)", d.Reason)
	}
}
