package scaling

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func TestTriggerReplicas(t *testing.T) {
	std := Tolerances{Up: StandardTolerance, Down: StandardTolerance}
	tests := []struct {
		name             string
		typ              TargetType
		value, threshold float64
		current          int32
		tol              Tolerances
		want             int32
		wantWithin       bool
	}{
		{name: "Value: ceil(current * value / threshold)", typ: TargetValue, value: 150, threshold: 100, current: 3, tol: std, want: 5},
		{name: "Value: within tolerance keeps current", typ: TargetValue, value: 109, threshold: 100, current: 3, tol: std, want: 3, wantWithin: true},
		{name: "Value: tolerance boundary is inside", typ: TargetValue, value: 90, threshold: 100, current: 10, tol: std, want: 10, wantWithin: true},
		{name: "Value: from zero, no tolerance: ceil(ratio)", typ: TargetValue, value: 105, threshold: 100, current: 0, tol: std, want: 2},
		{name: "Value: from zero, zero value stays at zero", typ: TargetValue, value: 0, threshold: 100, current: 0, tol: std, want: 0},
		{name: "Value: zero value scales to zero", typ: TargetValue, value: 0, threshold: 100, current: 4, tol: std, want: 0},
		{name: "AverageValue: ceil(value / threshold)", typ: TargetAverageValue, value: 103, threshold: 20, current: 2, tol: std, want: 6},
		{name: "AverageValue: within tolerance of current", typ: TargetAverageValue, value: 105, threshold: 20, current: 5, tol: std, want: 5, wantWithin: true},
		{name: "AverageValue: from zero", typ: TargetAverageValue, value: 41, threshold: 20, current: 0, tol: std, want: 3},
		{name: "AverageValue: per-direction tolerance down", typ: TargetAverageValue, value: 70, threshold: 20, current: 5,
			tol: Tolerances{Up: 0.1, Down: 0.5}, want: 5, wantWithin: true},
		{name: "AverageValue: per-direction tolerance up", typ: TargetAverageValue, value: 130, threshold: 20, current: 5,
			tol: Tolerances{Up: 0.5, Down: 0}, want: 5, wantWithin: true},
		{name: "zero tolerance acts on any change", typ: TargetAverageValue, value: 101, threshold: 20, current: 5, tol: Tolerances{}, want: 6},
		{name: "negative values ask for zero", typ: TargetValue, value: -5, threshold: 1, current: 3, tol: std, want: 0},
		{name: "saturates at MaxInt32", typ: TargetValue, value: 1e300, threshold: 1, current: 3, tol: std, want: math.MaxInt32},
	}
	type result struct {
		Desired int32
		Within  bool
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, within := TriggerReplicas(tc.typ, tc.value, tc.threshold, tc.current, tc.tol)
			if diff := cmp.Diff(result{tc.want, tc.wantWithin}, result{got, within}); diff != "" {
				t.Errorf("TriggerReplicas (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTolerancesFor(t *testing.T) {
	tests := []struct {
		name string
		b    *autoscalingv2.HorizontalPodAutoscalerBehavior
		want Tolerances
	}{
		{name: "no behavior", want: Tolerances{Up: 0.1, Down: 0.1}},
		{name: "behavior without tolerances", b: &autoscalingv2.HorizontalPodAutoscalerBehavior{}, want: Tolerances{Up: 0.1, Down: 0.1}},
		{name: "per direction", b: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp:   &autoscalingv2.HPAScalingRules{Tolerance: quantity("0")},
			ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: quantity("250m")},
		}, want: Tolerances{Up: 0, Down: 0.25}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, TolerancesFor(tc.b, StandardTolerance)); diff != "" {
				t.Errorf("TolerancesFor (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTolerancesWithinNaN(t *testing.T) {
	if (Tolerances{Up: 1, Down: 1}).Within(math.NaN()) {
		t.Error("NaN is within the tolerances")
	}
}
