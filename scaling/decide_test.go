package scaling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/scaleplane/scaleplane/scaling"
)

func TestFanOut(t *testing.T) {
	withMetrics := func(c *scaling.Config) *scaling.Config {
		c.Metrics = []autoscalingv2.MetricSpec{ctCPU(60)}
		return c
	}
	cases := []struct {
		name      string
		w         scaling.Workload
		want      scaling.Workload
		wantWrite bool
	}{
		{
			name:      "C1 kubectl scale reaches every rack and re-pins the config",
			w:         scaling.Workload{Replicas: ctI32(5), Config: ctRange(3, 3), Groups: ctRacks(3, 3, 3)},
			want:      scaling.Workload{Replicas: ctI32(5), Config: ctRange(5, 5), Groups: ctRacks(5, 5, 5)},
			wantWrite: true,
		},
		{
			name:      "C1 one rack behind",
			w:         scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 2), Groups: ctRacks(2, 1)},
			want:      scaling.Workload{Replicas: ctI32(2), Config: ctRange(2, 2), Groups: ctRacks(2, 2)},
			wantWrite: true,
		},
		{
			name:      "C1 absent members are filled",
			w:         scaling.Workload{Replicas: ctI32(2), Groups: ctRacks(-1, 2)},
			want:      scaling.Workload{Replicas: ctI32(2), Groups: ctRacks(2, 2)},
			wantWrite: true,
		},
		{
			name:      "C1 kind without groups: pinned config follows replicas",
			w:         scaling.Workload{Replicas: ctI32(0), Config: withMetrics(ctRange(4, 4))},
			want:      scaling.Workload{Replicas: ctI32(0), Config: withMetrics(ctRange(0, 0))},
			wantWrite: true,
		},
		{
			name:      "C1 HPA moved replicas within a range: racks follow, range kept",
			w:         scaling.Workload{Replicas: ctI32(7), Config: ctRange(2, 10), Groups: ctRacks(4, 4)},
			want:      scaling.Workload{Replicas: ctI32(7), Config: ctRange(2, 10), Groups: ctRacks(7, 7)},
			wantWrite: true,
		},
		{
			name: "C1 everything already follows: no write",
			w:    scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3), Groups: ctRacks(3, 3, 3)},
			want: scaling.Workload{Replicas: ctI32(3), Config: ctRange(3, 3), Groups: ctRacks(3, 3, 3)},
		},
		{
			name: "C1 range that does not contain replicas is left to admission: no write",
			w:    scaling.Workload{Replicas: ctI32(12), Config: ctRange(2, 10)},
			want: scaling.Workload{Replicas: ctI32(12), Config: ctRange(2, 10)},
		},
		{
			name: "C1 replicas absent: groups keep their own members",
			w:    scaling.Workload{Config: ctRange(3, 3), Groups: ctRacks(1, 2)},
			want: scaling.Workload{Config: ctRange(3, 3), Groups: ctRacks(1, 2)},
		},
		{
			name: "C1 half-written config (no max) is not a pin",
			w:    scaling.Workload{Replicas: ctI32(3), Config: &scaling.Config{MinReplicas: ctI32(1)}},
			want: scaling.Workload{Replicas: ctI32(3), Config: &scaling.Config{MinReplicas: ctI32(1)}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.w.Config.DeepCopy()
			got, write := scaling.FanOut(tc.w)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("FanOut workload (-want +got):\n%s", diff)
			}
			if write != tc.wantWrite {
				t.Errorf("FanOut write = %v, want %v", write, tc.wantWrite)
			}
			if diff := cmp.Diff(before, tc.w.Config); diff != "" {
				t.Errorf("FanOut mutated its input (-before +after):\n%s", diff)
			}
			// A second pass after the write never asks for another one.
			if again, write := scaling.FanOut(got); write {
				t.Errorf("FanOut wants a second write: %+v", again)
			}
		})
	}
}

func TestStatusReplicas(t *testing.T) {
	ready := func(gen *int64, counts ...int32) []scaling.GroupStatus {
		out := make([]scaling.GroupStatus, len(counts))
		for i, c := range counts {
			out[i] = scaling.GroupStatus{Name: "rack-" + string(rune('a'+i)), ObservedGeneration: gen}
			if c >= 0 {
				out[i].ReadyMembers = ctI32(c)
			}
		}
		return out
	}
	cases := []struct {
		name       string
		w          scaling.Workload
		want       *int32
		wantChange bool
	}{
		{
			name:       "C2 all racks ready at the same count",
			w:          scaling.Workload{Groups: ctRacks(3, 3, 3), GroupStatus: ready(nil, 3, 3, 3)},
			want:       ctI32(3),
			wantChange: true,
		},
		{
			name: "C2 same count already in status: no write",
			w:    scaling.Workload{Groups: ctRacks(3, 3), GroupStatus: ready(nil, 3, 3), StatusReplicas: ctI32(3)},
			want: ctI32(3),
		},
		{
			name:       "C2 count changed",
			w:          scaling.Workload{Groups: ctRacks(2, 2), GroupStatus: ready(nil, 2, 2), StatusReplicas: ctI32(3)},
			want:       ctI32(2),
			wantChange: true,
		},
		{
			name:       "C2 zero ready everywhere is a count",
			w:          scaling.Workload{Groups: ctRacks(0, 0), GroupStatus: ready(nil, 0, 0), StatusReplicas: ctI32(1)},
			want:       ctI32(0),
			wantChange: true,
		},
		{
			name: "C2 racks disagree: unchanged",
			w:    scaling.Workload{Groups: ctRacks(3, 3, 3), GroupStatus: ready(nil, 3, 2, 3), StatusReplicas: ctI32(3)},
		},
		{
			name: "C2 a rack without readyMembers: unchanged",
			w:    scaling.Workload{Groups: ctRacks(3, 3), GroupStatus: ready(nil, 3, -1)},
		},
		{
			name: "C2 a rack missing from status: unchanged",
			w:    scaling.Workload{Groups: ctRacks(3, 3, 3), GroupStatus: ready(nil, 3, 3)},
		},
		{
			name: "C2 observed generation behind: unchanged",
			w:    scaling.Workload{Generation: 5, Groups: ctRacks(3, 3), GroupStatus: ready(ctI64(4), 3, 3)},
		},
		{
			name:       "C2 observed generation caught up",
			w:          scaling.Workload{Generation: 5, Groups: ctRacks(3, 3), GroupStatus: ready(ctI64(5), 3, 3)},
			want:       ctI32(3),
			wantChange: true,
		},
		{
			name:       "C2 status of a removed rack is ignored",
			w:          scaling.Workload{Groups: ctRacks(2), GroupStatus: append(ready(nil, 2), scaling.GroupStatus{Name: "old", ReadyMembers: ctI32(9)})},
			want:       ctI32(2),
			wantChange: true,
		},
		{
			name:       "C2 status matched by name, not order",
			w:          scaling.Workload{Groups: ctRacks(1, 1), GroupStatus: []scaling.GroupStatus{{Name: "rack-b", ReadyMembers: ctI32(1)}, {Name: "rack-a", ReadyMembers: ctI32(1)}}},
			want:       ctI32(1),
			wantChange: true,
		},
		{
			name: "C2 kind without groups: left to its operator",
			w:    scaling.Workload{Replicas: ctI32(3), StatusReplicas: ctI32(1)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, change := scaling.StatusReplicas(tc.w)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("StatusReplicas count (-want +got):\n%s", diff)
			}
			if change != tc.wantChange {
				t.Errorf("StatusReplicas change = %v, want %v", change, tc.wantChange)
			}
		})
	}
}

func TestDecideHPA(t *testing.T) {
	cpu := []autoscalingv2.MetricSpec{ctCPU(60)}
	mem := []autoscalingv2.MetricSpec{{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: "memory",
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ctQ("1Gi")}},
	}}
	cfg := func(lo, hi int32, mut func(c *scaling.Config)) *scaling.Config {
		c := ctRange(lo, hi)
		c.Metrics = cpu
		if mut != nil {
			mut(c)
		}
		return c
	}
	full := ctFull()
	cases := []struct {
		name     string
		w        scaling.Workload
		layout   scaling.Layout
		defaults []autoscalingv2.MetricSpec
		foreign  []string
		want     scaling.HPADecision
	}{
		{
			name:   "C4 range with metrics on a self target",
			w:      scaling.Workload{Replicas: ctI32(2), Config: cfg(2, 8, nil)},
			layout: ctLayout(),
			want:   scaling.HPADecision{Want: true, Min: 2, Max: 8, Metrics: cpu},
		},
		{
			name:   "C4 behavior is carried over",
			w:      full,
			layout: ctLayout(),
			want:   scaling.HPADecision{Want: true, Min: 1, Max: 10, Metrics: full.Config.Metrics, Behavior: full.Config.Behavior},
		},
		{
			name:     "C4 profile default metrics when the config has none",
			w:        scaling.Workload{Config: ctRange(1, 4)},
			layout:   ctLayout(),
			defaults: mem,
			want:     scaling.HPADecision{Want: true, Min: 1, Max: 4, Metrics: mem},
		},
		{
			name:     "C4 config metrics win over profile defaults",
			w:        scaling.Workload{Config: cfg(1, 4, nil)},
			layout:   ctLayout(),
			defaults: mem,
			want:     scaling.HPADecision{Want: true, Min: 1, Max: 4, Metrics: cpu},
		},
		{
			name:   "C4 child target with replicas absent (Kyma built-in mode)",
			w:      scaling.Workload{Config: cfg(1, 5, nil)},
			layout: ctKymaLayout(),
			want:   scaling.HPADecision{Want: true, Min: 1, Max: 5, Metrics: cpu},
		},
		{
			name:   "C4 config without maxReplicas read with M2",
			w:      scaling.Workload{Replicas: ctI32(6), Config: &scaling.Config{Metrics: cpu}},
			layout: ctLayout(),
			want:   scaling.HPADecision{Want: true, Min: 1, Max: 6, Metrics: cpu},
		},
		{
			name:   "C4 range from 0 with idle gives an HPA from 1",
			w:      scaling.Workload{Config: cfg(0, 5, func(c *scaling.Config) { c.Idle = &scaling.Idle{} })},
			layout: ctLayout(),
			want:   scaling.HPADecision{Want: true, Min: 1, Max: 5, Metrics: cpu},
		},
		{
			name:   "C4 range 0..1 leaves an HPA nothing",
			w:      scaling.Workload{Config: cfg(0, 1, func(c *scaling.Config) { c.Idle = &scaling.Idle{} })},
			layout: ctLayout(),
			want:   scaling.HPADecision{Reason: "scale config range 0..1 leaves an HPA, which cannot scale to zero, no range"},
		},
		{
			name:   "C4 pinned config: no HPA",
			w:      scaling.Workload{Replicas: ctI32(3), Config: cfg(3, 3, nil)},
			layout: ctLayout(),
			want:   scaling.HPADecision{Reason: "scale config pinned at 3: no autoscaling range"},
		},
		{
			name:   "C4 inverted range: no HPA",
			w:      scaling.Workload{Config: cfg(5, 3, nil)},
			layout: ctLayout(),
			want:   scaling.HPADecision{Reason: "scale config range 5..3 is empty"},
		},
		{
			name:   "C4 no config: no HPA",
			w:      scaling.Workload{Replicas: ctI32(3)},
			layout: ctLayout(),
			want:   scaling.HPADecision{Reason: "no scale config"},
		},
		{
			name:   "C4 no metrics and no defaults: no HPA",
			w:      scaling.Workload{Config: ctRange(1, 5)},
			layout: ctLayout(),
			want:   scaling.HPADecision{Reason: "scale config has no metrics and the profile gives no default metrics"},
		},
		{
			name:   "C4 triggers: scaleplane's autoscaler, no HPA",
			w:      ctFullTriggers(),
			layout: ctLayout(),
			want:   scaling.HPADecision{Reason: "scale config has triggers: scaleplane's autoscaler scales this workload"},
		},
		{
			name:   "C4 cluster-scoped workload: no HPA can scale it",
			w:      scaling.Workload{Replicas: ctI32(2), Config: cfg(2, 8, nil)},
			layout: func() scaling.Layout { l := ctLayout(); l.ClusterScoped = true; return l }(),
			want:   scaling.HPADecision{Reason: "the workload is cluster-scoped and an HPA, which is namespaced and reads its target's /scale in its own namespace, cannot scale it: use triggers instead of metrics"},
		},
		{
			name:   "C4 cluster-scoped workload without a range: the range is the reason",
			w:      scaling.Workload{Replicas: ctI32(3), Config: cfg(3, 3, nil)},
			layout: func() scaling.Layout { l := ctLayout(); l.ClusterScoped = true; return l }(),
			want:   scaling.HPADecision{Reason: "scale config pinned at 3: no autoscaling range"},
		},
		{
			name:   "C4 child target with replicas set: external scaling mode",
			w:      scaling.Workload{Replicas: ctI32(2), Config: cfg(1, 5, nil)},
			layout: ctKymaLayout(),
			want:   scaling.HPADecision{Reason: "spec.replicas is set: external scaling mode"},
		},
		{
			name:    "C5 foreign HPA: no built-in HPA",
			w:       scaling.Workload{Config: cfg(1, 5, nil)},
			layout:  ctLayout(),
			foreign: []string{"HorizontalPodAutoscaler/ns/x"},
			want:    scaling.HPADecision{Reason: "foreign autoscaler HorizontalPodAutoscaler/ns/x targets this workload"},
		},
		{
			name:    "C5 foreign autoscalers are all named",
			w:       scaling.Workload{Config: cfg(3, 3, nil)},
			layout:  ctLayout(),
			foreign: []string{"HorizontalPodAutoscaler/ns/x", "ScaledObject/ns/y"},
			want:    scaling.HPADecision{Reason: "foreign autoscalers HorizontalPodAutoscaler/ns/x, ScaledObject/ns/y target this workload"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := scaling.DecideHPA(tc.w, tc.layout, tc.defaults, tc.foreign)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DecideHPA (-want +got):\n%s", diff)
			}
			if got.Want && len(got.Metrics) > 0 && tc.w.Config != nil && len(tc.w.Config.Metrics) > 0 && &got.Metrics[0] == &tc.w.Config.Metrics[0] {
				t.Errorf("DecideHPA shares metrics with its input")
			}
		})
	}
}
