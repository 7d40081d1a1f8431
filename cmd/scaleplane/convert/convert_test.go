package convert

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/scaleplane/scaleplane/scaling"
)

func i32(v int32) *int32 { return &v }

// TestBoundsFromKEDACounts maps minReplicaCount, maxReplicaCount,
// idleReplicaCount and cooldownPeriod with KEDA's defaults (0, 100, none,
// 300): a range starting at 0 gets the cooldown as its idle timeout, and an
// idle count of 0 under a minimum wakes to that minimum.
func TestBoundsFromKEDACounts(t *testing.T) {
	for _, tc := range []struct {
		name             string
		min, max, idle   *int32
		cooldown         *int32
		wantMin, wantMax int32
		wantIdle         *scaling.Idle
		wantNotConverted []string
	}{
		{name: "defaults", wantMin: 0, wantMax: 100, wantIdle: &scaling.Idle{TimeoutSeconds: i32(300)}},
		{name: "range above zero ignores the cooldown", min: i32(2), max: i32(9), cooldown: i32(60), wantMin: 2, wantMax: 9},
		{name: "cooldown is the idle timeout", max: i32(5), cooldown: i32(45), wantMin: 0, wantMax: 5, wantIdle: &scaling.Idle{TimeoutSeconds: i32(45)}},
		{name: "idle 0 under min 1", min: i32(1), max: i32(5), idle: i32(0), wantMin: 0, wantMax: 5,
			wantIdle: &scaling.Idle{ReplicasAtStart: i32(1), TimeoutSeconds: i32(300)}},
		{name: "idle 0 under min 3 floors at 1 while awake", min: i32(3), max: i32(5), idle: i32(0), wantMin: 0, wantMax: 5,
			wantIdle:         &scaling.Idle{ReplicasAtStart: i32(3), TimeoutSeconds: i32(300)},
			wantNotConverted: []string{"spec.minReplicaCount"}},
		{name: "idle other than 0", min: i32(3), max: i32(5), idle: i32(1), wantMin: 3, wantMax: 5,
			wantNotConverted: []string{"spec.idleReplicaCount"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			so := &ScaledObject{Spec: Spec{ScaleTargetRef: TargetRef{Name: "w"}, MinReplicaCount: tc.min, MaxReplicaCount: tc.max, IdleReplicaCount: tc.idle, CooldownPeriod: tc.cooldown}}
			r := Convert(so, Options{})
			want := &scaling.Config{MinReplicas: i32(tc.wantMin), MaxReplicas: i32(tc.wantMax), Idle: tc.wantIdle}
			if diff := cmp.Diff(want, r.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			var fields []string
			for _, p := range r.NotConverted {
				fields = append(fields, p.Field)
			}
			if diff := cmp.Diff(tc.wantNotConverted, fields); diff != "" {
				t.Errorf("not converted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPauseAnnotationsFromKEDA maps KEDA's pause annotations on the
// ScaledObject to scaleplane's on the workload, and the per-direction pauses
// to a disabled direction of the behavior.
func TestPauseAnnotationsFromKEDA(t *testing.T) {
	disabled := autoscalingv2.DisabledPolicySelect
	for _, tc := range []struct {
		name         string
		in           map[string]string
		want         map[string]string
		wantBehavior *autoscalingv2.HorizontalPodAutoscalerBehavior
		wantDropped  []string
	}{
		{name: "none"},
		{name: "paused", in: map[string]string{KEDAPaused: "true"}, want: map[string]string{"scaleplane.io/paused": "true"}},
		{name: "not paused", in: map[string]string{KEDAPaused: "false"}},
		{name: "paused replicas", in: map[string]string{KEDAPausedReplicas: "4"}, want: map[string]string{"scaleplane.io/paused-replicas": "4"}},
		{name: "bad values", in: map[string]string{KEDAPausedReplicas: "-1", KEDAPaused: "yes please"},
			wantDropped: []string{"metadata.annotations[autoscaling.keda.sh/paused-replicas]", "metadata.annotations[autoscaling.keda.sh/paused]"}},
		{name: "bad directions, in order", in: map[string]string{KEDAPausedScaleOut: "maybe", KEDAPausedScaleIn: "perhaps"},
			wantDropped: []string{"metadata.annotations[autoscaling.keda.sh/paused-scale-in]", "metadata.annotations[autoscaling.keda.sh/paused-scale-out]"}},
		{name: "scale in and out", in: map[string]string{KEDAPausedScaleIn: "true", KEDAPausedScaleOut: "true"},
			wantBehavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled},
				ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			so := &ScaledObject{Spec: Spec{ScaleTargetRef: TargetRef{Name: "w"}, MinReplicaCount: i32(1)}}
			so.Annotations = tc.in
			r := Convert(so, Options{})
			if diff := cmp.Diff(tc.want, r.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantBehavior, r.Config.Behavior); diff != "" {
				t.Errorf("behavior (-want +got):\n%s", diff)
			}
			var fields []string
			for _, p := range r.NotConverted {
				fields = append(fields, p.Field)
			}
			if diff := cmp.Diff(tc.wantDropped, fields); diff != "" {
				t.Errorf("not converted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResourceTriggersAloneDoNotScaleToZero refuses what KEDA refuses: cpu
// and memory triggers alone with minReplicaCount 0 (KEDA's default).
func TestResourceTriggersAloneDoNotScaleToZero(t *testing.T) {
	so := &ScaledObject{Spec: Spec{ScaleTargetRef: TargetRef{Name: "w"}, Triggers: []Trigger{{Type: "cpu", Metadata: map[string]string{"value": "50"}}}}}
	r := Convert(so, Options{})
	if !r.KeepScaledObject || len(r.NotConverted) != 1 || r.NotConverted[0].Field != "spec.minReplicaCount" {
		t.Errorf("got keep=%v, not converted %+v; want the ScaledObject kept for spec.minReplicaCount", r.KeepScaledObject, r.NotConverted)
	}
}

// TestFormulaRewrittenForCEL: KEDA's expr-lang formulas keep their
// meaning in CEL once integers are doubles and word operators symbols;
// names, decimals and strings are left alone.
func TestFormulaRewrittenForCEL(t *testing.T) {
	for in, want := range map[string]string{
		"(trig_one + trig_two)/2":            "(trig_one + trig_two)/2.0",
		"a > 10 and not (b < 1.5) or c2 > 0": "a > 10.0 && ! (b < 1.5) || c2 > 0.0",
		"a * 1e3":                            "a * 1e3",
		`x == "1" ? 2 : 3`:                   `x == "1" ? 2.0 : 3.0`,
	} {
		if got := celFormula(in); got != want {
			t.Errorf("celFormula(%q) = %q, want %q", in, got, want)
		}
	}
}
