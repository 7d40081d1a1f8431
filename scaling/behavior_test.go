package scaling

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func TestEffectiveBehavior(t *testing.T) {
	sel := func(s autoscalingv2.ScalingPolicySelect) *autoscalingv2.ScalingPolicySelect { return &s }
	secs := func(s int32) *int32 { return &s }
	upDefaults := []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
		{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
	}
	downDefaults := []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}
	tests := []struct {
		name string
		in   *autoscalingv2.HorizontalPodAutoscalerBehavior
		want *autoscalingv2.HorizontalPodAutoscalerBehavior
	}{
		{name: "no behavior stays nil (the behavior-less algorithm)"},
		{name: "an empty behavior gets the API server's defaults",
			in: &autoscalingv2.HorizontalPodAutoscalerBehavior{},
			want: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: secs(0), SelectPolicy: sel(autoscalingv2.MaxChangePolicySelect), Policies: upDefaults},
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: secs(300), SelectPolicy: sel(autoscalingv2.MaxChangePolicySelect), Policies: downDefaults},
			}},
		{name: "set fields are kept",
			in: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: secs(60), SelectPolicy: sel(autoscalingv2.MinChangePolicySelect), Tolerance: quantity("50m"),
			}},
			want: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: secs(0), SelectPolicy: sel(autoscalingv2.MaxChangePolicySelect), Policies: upDefaults},
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: secs(60), SelectPolicy: sel(autoscalingv2.MinChangePolicySelect),
					Policies: downDefaults, Tolerance: quantity("50m")},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := EffectiveBehavior(tc.in, DownscaleStabilization)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("EffectiveBehavior (-want +got):\n%s", diff)
			}
		})
	}
}

// An explicitly empty policy list is not "unset": as upstream, nothing is
// allowed in that direction.
func TestEmptyPoliciesAllowNothing(t *testing.T) {
	up := resolveScaleUp(&autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}})
	n, reason, _ := limitWithBehaviorRate(3, 10, 1, 20, up, resolveScaleDown(nil, 0), nil, nil, upstreamNow)
	if diff := cmp.Diff(limited{3, LimitScaleUp}, limited{n, reason}); diff != "" {
		t.Errorf("limitWithBehaviorRate (-want +got):\n%s", diff)
	}
}

func TestScaleDownDisabled(t *testing.T) {
	sel := autoscalingv2.DisabledPolicySelect
	down := resolveScaleDown(&autoscalingv2.HPAScalingRules{SelectPolicy: &sel}, time.Minute)
	n, reason, _ := limitWithBehaviorRate(8, 2, 1, 20, resolveScaleUp(nil), down, nil, nil, upstreamNow)
	if diff := cmp.Diff(limited{8, LimitScaleDown}, limited{n, reason}); diff != "" {
		t.Errorf("limitWithBehaviorRate (-want +got):\n%s", diff)
	}
}
