package scaling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/scaleplane/scaleplane/scaling"
)

func TestDefault(t *testing.T) {
	withMetrics := func(c *scaling.Config) *scaling.Config {
		c.Metrics = []autoscalingv2.MetricSpec{ctCPU(60)}
		return c
	}
	cases := []struct {
		name   string
		layout scaling.Layout
		old    *scaling.Workload
		cur    scaling.Workload
		want   scaling.Workload
	}{
		// M1
		{
			name: "M1 replicas without config pins the config",
			cur:  scaling.Workload{Replicas: ctI32(3)},
			want: scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
		},
		{
			name: "M1 replicas 0 pins the config at 0",
			cur:  scaling.Workload{Replicas: ctI32(0)},
			want: scaling.Workload{Replicas: ctI32(0), Config: ctRange(0, 0)},
		},
		{
			name:   "M1 does not create an annotation-held config",
			layout: ctAnnotationLayout(),
			cur:    scaling.Workload{Replicas: ctI32(3)},
			want:   scaling.Workload{Replicas: ctI32(3)},
		},
		{
			name:   "M1 applies with a child HPA target too",
			layout: ctKymaLayout(),
			cur:    scaling.Workload{Replicas: ctI32(2)},
			want:   scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 2)},
		},
		// M2
		{
			name: "M2 missing minReplicas defaults to 1",
			cur:  scaling.Workload{Replicas: ctI32(3), Config: &scaling.Config{MaxReplicas: ctI32(5)}},
			want: scaling.Workload{Replicas: ctI32(3), Config: ctRange(1, 5)},
		},
		{
			name: "M2 missing maxReplicas defaults to replicas when above min",
			cur:  scaling.Workload{Replicas: ctI32(4), Config: &scaling.Config{MinReplicas: ctI32(2)}},
			want: scaling.Workload{Replicas: ctI32(4), Config: ctRange(2, 4)},
		},
		{
			name: "M2 missing maxReplicas defaults to min when replicas is lower",
			cur:  scaling.Workload{Replicas: ctI32(1), Config: &scaling.Config{MinReplicas: ctI32(2)}},
			want: scaling.Workload{Replicas: ctI32(1), Config: ctRange(2, 2)},
		},
		{
			name: "M2 empty config without replicas becomes pinned at 1",
			cur:  scaling.Workload{Config: &scaling.Config{}},
			want: scaling.Workload{Config: ctRange(1, 1)},
		},
		{
			name: "M2 maxReplicas 0 alone means pinned at zero",
			cur:  scaling.Workload{Replicas: ctI32(0), Config: &scaling.Config{MaxReplicas: ctI32(0)}},
			want: scaling.Workload{Replicas: ctI32(0), Config: ctRange(0, 0)},
		},
		{
			name: "M2 keeps everything else in the config",
			cur:  scaling.Workload{Replicas: ctI32(2), Config: withMetrics(&scaling.Config{MaxReplicas: ctI32(6)})},
			want: scaling.Workload{Replicas: ctI32(2), Config: withMetrics(ctRange(1, 6))},
		},
		{
			name:   "M2 applies to an annotation-held config",
			layout: ctAnnotationLayout(),
			cur:    scaling.Workload{Replicas: ctI32(3), Config: &scaling.Config{MaxReplicas: ctI32(5)}},
			want:   scaling.Workload{Replicas: ctI32(3), Config: ctRange(1, 5)},
		},
		// M3
		{
			name: "M3 pinned config follows replicas",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			cur:  scaling.Workload{Replicas: ctI32(5), Config: ctRange(3, 3)},
			want: scaling.Workload{Replicas: ctI32(5), Config: ctRange(5, 5)},
		},
		{
			name: "M3 pinned config with metrics follows replicas",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: withMetrics(ctRange(3, 3))},
			cur:  scaling.Workload{Replicas: ctI32(1), Config: withMetrics(ctRange(3, 3))},
			want: scaling.Workload{Replicas: ctI32(1), Config: withMetrics(ctRange(1, 1))},
		},
		{
			name: "M3 does not apply when the request changes the config",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			cur:  scaling.Workload{Replicas: ctI32(5), Config: ctRange(4, 4)},
			want: scaling.Workload{Replicas: ctI32(5), Config: ctRange(4, 4)},
		},
		{
			name: "M3 does not apply when the request adds metrics",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			cur:  scaling.Workload{Replicas: ctI32(5), Config: withMetrics(ctRange(3, 3))},
			want: scaling.Workload{Replicas: ctI32(5), Config: withMetrics(ctRange(3, 3))},
		},
		{
			name: "M3 does not apply when the old pin differs from old replicas",
			old:  &scaling.Workload{Replicas: ctI32(2), Config: ctRange(3, 3)},
			cur:  scaling.Workload{Replicas: ctI32(5), Config: ctRange(3, 3)},
			want: scaling.Workload{Replicas: ctI32(5), Config: ctRange(3, 3)},
		},
		{
			name: "M3 does not apply to a range",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: ctRange(1, 5)},
			cur:  scaling.Workload{Replicas: ctI32(4), Config: ctRange(1, 5)},
			want: scaling.Workload{Replicas: ctI32(4), Config: ctRange(1, 5)},
		},
		{
			name: "M3 does not apply when replicas did not change",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			cur:  scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			want: scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
		},
		{
			name: "M3 does not apply when replicas is removed",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			cur:  scaling.Workload{Config: ctRange(3, 3)},
			want: scaling.Workload{Config: ctRange(3, 3)},
		},
		{
			name: "M3 compares the config after M2 (half-written pin equal to old)",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			cur:  scaling.Workload{Replicas: ctI32(2), Config: &scaling.Config{MinReplicas: ctI32(3)}},
			want: scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 2)},
		},
		{
			name: "M3 with racks: pin and racks follow replicas",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3), Groups: ctRacks(3, 3)},
			cur:  scaling.Workload{Replicas: ctI32(6), Config: ctRange(3, 3), Groups: ctRacks(3, 3)},
			want: scaling.Workload{Replicas: ctI32(6), Config: ctRange(6, 6), Groups: ctRacks(6, 6)},
		},
		{
			name: "M1 on update when the request drops the config",
			old:  &scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3)},
			cur:  scaling.Workload{Replicas: ctI32(5)},
			want: scaling.Workload{Replicas: ctI32(5), Config: ctRange(5, 5)},
		},
		// M4
		{
			name: "M4 range without replicas starts at minReplicas",
			cur:  scaling.Workload{Config: ctRange(2, 8)},
			want: scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 8)},
		},
		{
			name: "M4 range from M2 without replicas starts at 1, racks follow",
			cur:  scaling.Workload{Config: &scaling.Config{MaxReplicas: ctI32(4)}, Groups: ctRacks(2, -1)},
			want: scaling.Workload{Replicas: ctI32(1), Config: ctRange(1, 4), Groups: ctRacks(1, 1)},
		},
		{
			name:   "M4 child HPA target leaves replicas absent",
			layout: ctKymaLayout(),
			cur:    scaling.Workload{Config: ctRange(2, 8)},
			want:   scaling.Workload{Config: ctRange(2, 8)},
		},
		{
			name: "M4 pinned config without replicas leaves replicas absent and racks alone",
			cur:  scaling.Workload{Config: ctRange(2, 2), Groups: ctRacks(1, 4)},
			want: scaling.Workload{Config: ctRange(2, 2), Groups: ctRacks(1, 4)},
		},
		{
			name: "M4 nothing at all stays nothing",
			cur:  scaling.Workload{Groups: ctRacks(1, 4)},
			want: scaling.Workload{Groups: ctRacks(1, 4)},
		},
		// M5
		{
			name: "M5 replicas fans out to every rack",
			cur:  scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3), Groups: ctRacks(1, 3, 7)},
			want: scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3), Groups: ctRacks(3, 3, 3)},
		},
		{
			name: "M5 fills absent members",
			cur:  scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 2), Groups: ctRacks(-1, -1)},
			want: scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 2), Groups: ctRacks(2, 2)},
		},
		{
			name: "M5 replicas 0 sets racks to 0",
			cur:  scaling.Workload{Replicas: ctI32(0), Groups: ctRacks(3, 3)},
			want: scaling.Workload{Replicas: ctI32(0), Config: ctRange(0, 0), Groups: ctRacks(0, 0)},
		},
		// M6
		{
			name: "M6 complete object is returned unchanged",
			cur:  ctFull(),
			want: ctFull(),
		},
		{
			name: "M6 status fields pass through",
			cur: scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 2), Groups: ctRacks(2), Generation: 4, StatusReplicas: ctI32(1),
				GroupStatus: []scaling.GroupStatus{{Name: "rack-a", ReadyMembers: ctI32(1), ObservedGeneration: ctI64(3)}}},
			want: scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 2), Groups: ctRacks(2), Generation: 4, StatusReplicas: ctI32(1),
				GroupStatus: []scaling.GroupStatus{{Name: "rack-a", ReadyMembers: ctI32(1), ObservedGeneration: ctI64(3)}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.layout
			if l.ConfigPath == nil {
				l = ctLayout()
			}
			before := tc.cur.Config.DeepCopy()
			got := scaling.Default(tc.old, tc.cur, l)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Default (-want +got):\n%s", diff)
			}
			// M6: inputs untouched, and a second pass changes nothing.
			if diff := cmp.Diff(before, tc.cur.Config); diff != "" {
				t.Errorf("Default mutated its input (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(got, scaling.Default(tc.old, got, l)); diff != "" {
				t.Errorf("Default is not idempotent (-first +second):\n%s", diff)
			}
		})
	}
}

// TestDefaultNoAliasing guards M6's "never mutates its inputs" where a
// shallow copy would pass TestDefault: writing to the result must not reach
// the request.
func TestDefaultNoAliasing(t *testing.T) {
	cur := ctFull()
	got := scaling.Default(nil, cur, ctLayout())
	*got.Replicas = 99
	*got.Config.MinReplicas = 99
	got.Config.Metrics[0].Resource.Target.AverageUtilization = ctI32(1)
	got.Config.Behavior.ScaleUp.Policies[0].Value = 99
	got.Config.Schedule.WakeUp[0] = "00:00"
	*got.Groups[0].Members = 99
	if diff := cmp.Diff(ctFull(), cur); diff != "" {
		t.Errorf("M6 writing to Default's result changed its input (-want +got):\n%s", diff)
	}
}

func TestConfigDeepCopy(t *testing.T) {
	orig := ctFullTriggers().Config
	orig.Triggers[0].Metadata = map[string]string{"serverAddress": "http://prometheus:9090"}
	orig.DependsOn = []string{"db"}
	orig.PollingIntervalSeconds = ctI32(30)
	orig.Behavior.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{} // explicit empty stays empty
	cp := orig.DeepCopy()
	if diff := cmp.Diff(orig, cp); diff != "" {
		t.Fatalf("DeepCopy (-want +got):\n%s", diff)
	}
	if cp.Behavior.ScaleDown.Policies == nil {
		t.Errorf("DeepCopy turned an explicit empty policy list into nil")
	}
	want := orig.DeepCopy()
	*cp.MaxReplicas = 1
	cp.Triggers[0].Metadata["serverAddress"] = "x"
	*cp.Triggers[1].ActivationThreshold = 7
	cp.DependsOn[0] = "x"
	*cp.Idle.TimeoutSeconds = 1
	cp.Schedule.ScaleDownTimeout[0].Seconds = 1
	*cp.PollingIntervalSeconds = 1
	if diff := cmp.Diff(want, orig); diff != "" {
		t.Errorf("writing to the copy changed the original (-want +got):\n%s", diff)
	}
	if got := (*scaling.Config)(nil).DeepCopy(); got != nil {
		t.Errorf("DeepCopy(nil) = %v, want nil", got)
	}
}

func BenchmarkDefault(b *testing.B) {
	old := ctFull()
	cur := ctFull()
	*cur.Replicas = 5
	l := ctLayout()
	b.ReportAllocs()
	for b.Loop() {
		_ = scaling.Default(&old, cur, l)
	}
}
