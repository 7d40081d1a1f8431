package scaling

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Every number of a reason is one the decision used: an AverageValue
// sample is compared per replica (divided by the current count, as
// TriggerReplicas divides it), and a count a window held or a policy
// limited names that window or policy with its values and, for a window,
// when the hold ends.
func TestDecisionReasonsFromTheirValues(t *testing.T) {
	window := func(w int32) *autoscalingv2.HPAScalingRules {
		return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &w}
	}
	cases := []struct {
		name    string
		cfg     *Config
		current int32
		recs    []Recommendation
		results []TriggerResult
		want    string
		held    string
		limited string
	}{
		{
			name: "a scale-down compares the value per replica",
			cfg: mkConfig(1, 10).Trigger("q", TargetAverageValue, 2).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: window(0)}).Obj(),
			current: 6, results: []TriggerResult{val("q", 7)},
			want: "Scale down from 6 to 4: q=7 over 6 replicas is 1.17 per replica, below the target 2: asks for ceil(7 / 2) = 4",
		},
		{
			name:    "a scale-down window holds the count and says until when",
			cfg:     mkConfig(1, 10).Trigger("q", TargetAverageValue, 2).Obj(),
			current: 6, recs: []Recommendation{{Replicas: 6, Time: t0.Add(-50 * time.Second)}},
			results: []TriggerResult{val("q", 7)},
			want:    "Keep 6: q=7 over 6 replicas is 1.17 per replica, below the target 2: asks for ceil(7 / 2) = 4; desired 4, held at 6 by the 300 s scale-down window until 12:04:10 UTC",
			held:    "desired 4, held at 6 by the 300 s scale-down window until 12:04:10 UTC",
		},
		{
			name:    "a count raised by the scale-down window is not a trigger above its target",
			cfg:     mkConfig(1, 10).Trigger("q", TargetAverageValue, 2).Obj(),
			current: 4, recs: []Recommendation{{Replicas: 6, Time: t0.Add(-time.Minute)}, {Replicas: 5, Time: t0.Add(-30 * time.Second)}},
			results: []TriggerResult{val("q", 0)},
			want:    "Scale up from 4 to 6: q=0 over 4 replicas is 0 per replica, below the target 2: asks for ceil(0 / 2) = 0; desired 0, held at 6 by the 300 s scale-down window until 12:04:00 UTC",
			held:    "desired 0, held at 6 by the 300 s scale-down window until 12:04:00 UTC",
		},
		{
			name:    "a window that holds what minReplicas gives anyway is not reported",
			cfg:     mkConfig(1, 10).Trigger("q", TargetAverageValue, 2).Obj(),
			current: 1, recs: []Recommendation{{Replicas: 1, Time: t0.Add(-10 * time.Second)}},
			results: []TriggerResult{val("q", 0)},
			want:    "Keep 1: q=0 over 1 replica is 0 per replica, below the target 2: asks for ceil(0 / 2) = 0; raised to minReplicas 1",
		},
		{
			name: "a scale-up window",
			cfg: mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: window(60)}).Obj(),
			current: 2, recs: []Recommendation{{Replicas: 2, Time: t0.Add(-30 * time.Second)}},
			results: []TriggerResult{val("rps", 100)},
			want:    "Keep 2: rps=100 over 2 replicas is 50 per replica, above the target 20: asks for ceil(100 / 20) = 5; desired 5, held at 2 by the 60 s scale-up window until 12:00:30 UTC",
			held:    "desired 5, held at 2 by the 60 s scale-up window until 12:00:30 UTC",
		},
		{
			name: "a scale-down policy names its values",
			cfg: mkConfig(1, 10).Trigger("q", TargetAverageValue, 1).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: rulesOf(1, 60, 0, 0, 0)}).Obj(),
			current: 6, results: []TriggerResult{val("q", 2)},
			want:    "Scale down from 6 to 5: q=2 over 6 replicas is 0.333 per replica, below the target 1: asks for ceil(2 / 1) = 2; limited to 5 by the scale-down policy 1 pod per 60 s",
			limited: "desired 2, limited to 5 by the scale-down policy 1 pod per 60 s",
		},
		{
			name:    "the default scale-up policies",
			cfg:     mkConfig(1, 50).Trigger("q", TargetAverageValue, 1).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{}).Obj(),
			current: 3, results: []TriggerResult{val("q", 30)},
			want:    "Scale up from 3 to 7: q=30 over 3 replicas is 10 per replica, above the target 1: asks for ceil(30 / 1) = 30; limited to 7 by the scale-up policies (selectPolicy Max of 4 pods per 15 s, 100% per 15 s)",
			limited: "desired 30, limited to 7 by the scale-up policies (selectPolicy Max of 4 pods per 15 s, 100% per 15 s)",
		},
		{
			name:    "a Value target scales the current count",
			cfg:     mkConfig(1, 5).Trigger("lag", TargetValue, 10).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{}).Obj(),
			current: 3, results: []TriggerResult{val("lag", 40)},
			want: "Scale up from 3 to 5: lag=40 is 4 times the target 10: asks for ceil(4 × 3) = 12; capped at maxReplicas 5",
		},
		{
			name:    "below minReplicas",
			cfg:     mkConfig(2, 5).Trigger("q", TargetAverageValue, 10).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: window(0)}).Obj(),
			current: 3, results: []TriggerResult{val("q", 1)},
			want: "Scale down from 3 to 2: q=1 over 3 replicas is 0.333 per replica, below the target 10: asks for ceil(1 / 10) = 1; raised to minReplicas 2",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &History{Recommendations: append([]Recommendation(nil), tc.recs...)}
			d := Decide(DecideInput{Now: t0, Current: tc.current, Config: tc.cfg, Triggers: tc.results}, h)
			if diff := cmp.Diff(tc.want, d.Reason); diff != "" {
				t.Errorf("reason (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, HPAReason(d)); diff != "" {
				t.Errorf("HPAReason of the decision (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.held, HeldReason(d)); diff != "" {
				t.Errorf("held (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.limited, LimitedReason(d)); diff != "" {
				t.Errorf("limited (-want +got):\n%s", diff)
			}
		})
	}
}
