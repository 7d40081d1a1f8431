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
