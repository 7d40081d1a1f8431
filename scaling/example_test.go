package scaling_test

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

// exampleLayout is a racked database: spec.replicas, spec.scaleConfig and
// spec.racks[*].members, scaled through its own /scale subresource.
func exampleLayout() scaling.Layout {
	return scaling.Layout{
		ReplicasPath:      field.NewPath("spec", "replicas"),
		ConfigPath:        field.NewPath("spec", "scaleConfig"),
		GroupsPath:        field.NewPath("spec", "racks"),
		GroupNameField:    "name",
		GroupMembersField: "members",
		TargetSelf:        true,
		MaxReplicas:       100,
	}
}

func exampleInt32(v int32) *int32 { return &v }

// A mutating webhook asks Default what the object should look like and
// patches the difference: here a bare replicas count is pinned (M1) and fans
// out to every rack (M5).
func ExampleDefault() {
	cur := scaling.Workload{
		Replicas: exampleInt32(3),
		Groups:   []scaling.Group{{Name: "rack-a", Members: exampleInt32(1)}, {Name: "rack-b"}},
	}
	w := scaling.Default(nil, cur, exampleLayout())
	fmt.Printf("scaleConfig: min %d max %d\n", *w.Config.MinReplicas, *w.Config.MaxReplicas)
	for _, g := range w.Groups {
		fmt.Printf("%s: %d members\n", g.Name, *g.Members)
	}
	// Output:
	// scaleConfig: min 3 max 3
	// rack-a: 3 members
	// rack-b: 3 members
}

// On UPDATE, a config pinned to the old count follows the new one (M3).
func ExampleDefault_pinsFollowReplicas() {
	pinned := func(n int32) *scaling.Config {
		return &scaling.Config{MinReplicas: exampleInt32(n), MaxReplicas: exampleInt32(n)}
	}
	old := scaling.Workload{Replicas: exampleInt32(3), Config: pinned(3)}
	cur := scaling.Workload{Replicas: exampleInt32(5), Config: pinned(3)}
	w := scaling.Default(&old, cur, exampleLayout())
	fmt.Printf("replicas %d, scaleConfig %d..%d\n", *w.Replicas, *w.Config.MinReplicas, *w.Config.MaxReplicas)
	// Output: replicas 5, scaleConfig 5..5
}

// A validating webhook turns the list into one 422 with every cause. Triggers
// are checked against the trigger sources the autoscaler has: here only the
// built-in cron source, which needs type AverageValue and a window it can
// read.
func ExampleValidate() {
	sources := scaling.NewSources()
	if err := sources.Register(scaling.SourceCron, scaling.CronSource()); err != nil {
		fmt.Println(err)
		return
	}
	w := scaling.Workload{
		Replicas: exampleInt32(7),
		Config: &scaling.Config{
			MinReplicas: exampleInt32(5),
			MaxReplicas: exampleInt32(3),
			Triggers: []scaling.Trigger{{
				Name: "office-hours", Type: scaling.TargetValue, Source: scaling.SourceCron, Threshold: 1,
				Metadata: map[string]string{"start": "08:00", "end": "8pm"},
			}},
		},
		Groups: []scaling.Group{{Name: "rack-a"}, {Name: "rack-a"}},
	}
	errs, warnings := scaling.Validate(w, exampleLayout(), sources)
	for _, e := range errs {
		fmt.Println(e)
	}
	fmt.Println(len(warnings), "warnings")
	// Output:
	// spec.scaleConfig.minReplicas: Invalid value: 5: must be less than or equal to maxReplicas (3); raise maxReplicas or lower minReplicas
	// spec.scaleConfig.triggers[0].type: Unsupported value: "Value": supported values: "AverageValue"
	// spec.scaleConfig.triggers[0].metadata[end]: Invalid value: "8pm": must be a time of day written HH:mm, such as 19:00: the window closes then
	// spec.racks[1].name: Duplicate value: "rack-a"
	// 0 warnings
}

// After kubectl scale wrote 5 through /scale, the controller fans it out
// (C1) in one write.
func ExampleFanOut() {
	w := scaling.Workload{
		Replicas: exampleInt32(5),
		Config:   &scaling.Config{MinReplicas: exampleInt32(3), MaxReplicas: exampleInt32(3)},
		Groups:   []scaling.Group{{Name: "rack-a", Members: exampleInt32(3)}, {Name: "rack-b", Members: exampleInt32(3)}},
	}
	out, write := scaling.FanOut(w)
	fmt.Println("write:", write)
	fmt.Printf("scaleConfig %d..%d, racks %d and %d\n", *out.Config.MinReplicas, *out.Config.MaxReplicas,
		*out.Groups[0].Members, *out.Groups[1].Members)
	// Output:
	// write: true
	// scaleConfig 5..5, racks 5 and 5
}

// status.replicas is written only when every rack agrees (C2).
func ExampleStatusReplicas() {
	w := scaling.Workload{
		Groups: []scaling.Group{{Name: "rack-a"}, {Name: "rack-b"}},
		GroupStatus: []scaling.GroupStatus{
			{Name: "rack-a", ReadyMembers: exampleInt32(2)},
			{Name: "rack-b", ReadyMembers: exampleInt32(2)},
		},
	}
	n, write := scaling.StatusReplicas(w)
	fmt.Println(*n, write)
	// Output: 2 true
}

// The HPA controller asks whether a built-in HPA should exist (C4, C5).
func ExampleDecideHPA() {
	cpu := autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu",
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: exampleInt32(70)}},
	}
	w := scaling.Workload{Config: &scaling.Config{MinReplicas: exampleInt32(2), MaxReplicas: exampleInt32(8), Metrics: []autoscalingv2.MetricSpec{cpu}}}
	d := scaling.DecideHPA(w, exampleLayout(), nil, nil)
	fmt.Println(d.Want, d.Min, d.Max)
	d = scaling.DecideHPA(w, exampleLayout(), nil, []string{"ScaledObject/shop/orders"})
	fmt.Println(d.Want, d.Reason)
	// Output:
	// true 2 8
	// false foreign autoscaler ScaledObject/shop/orders targets this workload
}
