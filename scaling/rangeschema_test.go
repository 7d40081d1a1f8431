package scaling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

// instancesLayout is a kind whose count lives at spec.instances with a
// schema of minimum 1, maximum 10, and whose config is in an annotation
// (which has no schema of its own).
func instancesLayout() scaling.Layout {
	return scaling.Layout{
		ReplicasPath:       field.NewPath("spec", "instances"),
		ConfigPath:         field.NewPath("metadata", "annotations").Key("scaleplane.io/scale-config"),
		ConfigInAnnotation: true,
		TargetSelf:         true,
		Schema:             scaling.Schema{Replicas: scaling.Limits{Known: true, Type: "integer", Minimum: ctF64(1), Maximum: ctF64(10)}},
	}
}

func i32(v int32) *int32 { return &v }

// TestRangeHeldToTheReplicasSchema is M7 for a config in any place: the
// autoscalers write every count of a range into the replicas field, so a
// range whose ends that field's schema refuses is refused at admission,
// naming the kind's own field and advice the schema allows. A range from
// zero on a kind that cannot reach zero is not told to add idle settings
// or to stay at zero.
func TestRangeHeldToTheReplicasSchema(t *testing.T) {
	ann := "metadata.annotations[scaleplane.io/scale-config]"
	idle := &scaling.Idle{TimeoutSeconds: i32(60)}
	cases := []struct {
		name string
		cfg  scaling.Config
		want []string
	}{{
		name: "a range from zero with idle settings",
		cfg:  scaling.Config{MinReplicas: i32(0), MaxReplicas: i32(5), Idle: idle},
		want: []string{ann + ".minReplicas: Invalid value: 0: the autoscaler writes every count from minReplicas to maxReplicas to spec.instances, and the CRD's schema requires a value of at least 1 (minimum); set minReplicas to 1 or more; this kind cannot be scaled to zero"},
	}, {
		name: "a range from zero without idle settings",
		cfg:  scaling.Config{MinReplicas: i32(0), MaxReplicas: i32(5)},
		want: []string{ann + ".minReplicas: Invalid value: 0: the autoscaler writes every count from minReplicas to maxReplicas to spec.instances, and the CRD's schema requires a value of at least 1 (minimum); set minReplicas to 1 or more; this kind cannot be scaled to zero"},
	}, {
		name: "a range above the maximum",
		cfg:  scaling.Config{MinReplicas: i32(2), MaxReplicas: i32(15)},
		want: []string{ann + ".maxReplicas: Invalid value: 15: the autoscaler writes every count from minReplicas to maxReplicas to spec.instances, and the CRD's schema requires a value of at most 10 (maximum); set maxReplicas to 10 or less"},
	}, {
		name: "a range within the schema",
		cfg:  scaling.Config{MinReplicas: i32(1), MaxReplicas: i32(10), Idle: idle},
	}, {
		name: "a pin is scaled by hand: the schema judges the count written",
		cfg:  scaling.Config{MinReplicas: i32(3), MaxReplicas: i32(3)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := scaling.Workload{Name: "db", Replicas: i32(3), Config: &tc.cfg}
			errs, _ := scaling.Validate(w, instancesLayout(), nil)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCanReachZero: a kind reaches zero only when its replicas field and
// every member group's count accept 0.
func TestCanReachZero(t *testing.T) {
	l := instancesLayout()
	if scaling.CanReachZero(l) {
		t.Error("spec.instances with minimum 1 reaches zero")
	}
	l.Schema.Replicas.Minimum = ctF64(0)
	if !scaling.CanReachZero(l) {
		t.Error("spec.instances with minimum 0 does not reach zero")
	}
	l.GroupsPath = field.NewPath("spec", "zones")
	l.Schema.Members = scaling.Limits{Minimum: ctF64(0), ExclusiveMinimum: true}
	if scaling.CanReachZero(l) {
		t.Error("members with exclusiveMinimum 0 reach zero")
	}
}

// TestFitCountsNeverPlansWhatTheSchemaRefuses: a range stored before its
// limits were enforced (or a schema tightened since) still asks for 0 on
// a kind whose replicas field has minimum 1; the autoscaler keeps the
// lowest count the schema accepts, and says why, instead of writing 0 on
// every poll.
func TestFitCountsNeverPlansWhatTheSchemaRefuses(t *testing.T) {
	l := instancesLayout()
	toZero := scaling.Decision{Current: 1, Desired: 0, Action: scaling.ActionScaleToZero,
		Reason: "Scale to zero from 1: no activity for 5m0s (timeout 1m0s) and every trigger asks for 0", Idle: &scaling.IdleState{Idle: true}}
	got := scaling.FitCounts(toZero, l)
	want := toZero
	want.Desired, want.Action = 1, scaling.ActionNone
	want.Reason = "Keep 1: held at 1, not 0: spec.instances cannot be 0: the CRD's schema requires a value of at least 1 (minimum) (the autoscaler's own answer: Scale to zero from 1: no activity for 5m0s (timeout 1m0s) and every trigger asks for 0)"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FitCounts (-want +got):\n%s", diff)
	}
	up := scaling.Decision{Current: 8, Desired: 14, Action: scaling.ActionScaleUp, Reason: "Scale up from 8 to 14: rps=140 > 10 per replica"}
	if got := scaling.FitCounts(up, l); got.Desired != 10 || got.Action != scaling.ActionScaleUp ||
		got.Reason != "Scale up from 8 to 10: held at 10, not 14: spec.instances cannot be 14: the CRD's schema requires a value of at most 10 (maximum) (the autoscaler's own answer: Scale up from 8 to 14: rps=140 > 10 per replica)" {
		t.Errorf("FitCounts = %d %s %q", got.Desired, got.Action, got.Reason)
	}
	inside := scaling.Decision{Current: 3, Desired: 4, Action: scaling.ActionScaleUp, Reason: "Scale up from 3 to 4"}
	if diff := cmp.Diff(inside, scaling.FitCounts(inside, l)); diff != "" {
		t.Errorf("a count the schema accepts changed (-want +got):\n%s", diff)
	}
}
