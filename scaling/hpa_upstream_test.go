package scaling

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// The Kubernetes HPA controller's unit tests for stabilization, behaviors
// and the replica calculation of External metrics
// (k8s.io/kubernetes v1.37.1, pkg/controller/podautoscaler), ported case by
// case against this package's algorithm. Each case keeps its upstream name;
// the numbers are upstream's. Upstream builds timestamps from time.Now();
// here one fixed instant plays "now", which keeps every strict time
// comparison on the same side.

var upstreamNow = time.Date(2026, time.March, 2, 10, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return upstreamNow.Add(-d) }

// rulesOf mirrors upstream's generateScalingRules: a Max-select rule with a
// Pods policy when pods != 0 and a Percent policy when percent != 0.
func rulesOf(pods, podsPeriod, percent, percentPeriod, window int32) *autoscalingv2.HPAScalingRules {
	sel := autoscalingv2.MaxChangePolicySelect
	r := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel}
	if pods != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: pods, PeriodSeconds: podsPeriod})
	}
	if percent != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: percent, PeriodSeconds: percentPeriod})
	}
	return r
}

// spreadEvents mirrors upstream's generateEventsUniformDistribution: the
// window [now-period, now] is cut into len(changes) segments and each event
// sits in the middle of its segment. Upstream converts the float number of
// seconds to a Duration before multiplying, which truncates it; so do we.
func spreadEvents(changes []int32, periodSeconds int) []ScaleEvent {
	events := make([]ScaleEvent, len(changes))
	segment := float64(periodSeconds) / float64(len(changes))
	for i, c := range changes {
		secs := time.Duration(float64(periodSeconds) - segment*float64(i+1) + segment/2)
		events[i] = ScaleEvent{Change: c, Time: ago(time.Second * secs)}
	}
	return events
}

type limited struct {
	Replicas int32
	Reason   string
}

func TestConvertDesiredReplicasWithRules(t *testing.T) {
	tests := []struct {
		name                     string
		current, desired         int32
		minReplicas, maxReplicas int32
		want                     limited
	}{
		{name: "prenormalized desired replicas within range", current: 5, desired: 7, minReplicas: 3, maxReplicas: 8,
			want: limited{7, "DesiredWithinRange"}},
		{name: "prenormalized desired replicas < minReplicas", current: 3, desired: 1, minReplicas: 2, maxReplicas: 8,
			want: limited{2, "TooFewReplicas"}},
		{name: "prenormalized desired zeroed replicas within range", current: 1, desired: 0, minReplicas: 0, maxReplicas: 10,
			want: limited{0, "DesiredWithinRange"}},
		{name: "maxReplicas is the limit because maxReplicas < scaleUpLimit", current: 20, desired: 1000, minReplicas: 1, maxReplicas: 10,
			want: limited{10, "TooManyReplicas"}},
		// Upstream expects calculateScaleUpLimit(3) = max(2*3, 4).
		{name: "scaleUpLimit is the limit because scaleUpLimit < maxReplicas", current: 3, desired: 1000, minReplicas: 1, maxReplicas: 2000,
			want: limited{6, "ScaleUpLimit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, reason, _ := limitWithRules(tc.current, tc.desired, tc.minReplicas, tc.maxReplicas)
			if diff := cmp.Diff(tc.want, limited{n, reason}); diff != "" {
				t.Errorf("limitWithRules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCalculateScaleUpLimitWithScalingRules(t *testing.T) {
	sel := autoscalingv2.MinChangePolicySelect
	window := int32(300)
	r := resolveScaleUp(&autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel, Policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60},
		{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60},
	}})
	if diff := cmp.Diff(int32(2), scaleUpLimit(1, nil, nil, r, upstreamNow)); diff != "" {
		t.Errorf("scaleUpLimit (-want +got):\n%s", diff)
	}
}

func TestCalculateScaleDownLimitWithBehaviors(t *testing.T) {
	sel := autoscalingv2.MinChangePolicySelect
	window := int32(300)
	r := resolveScaleDown(&autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel, Policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60},
		{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60},
	}}, DownscaleStabilization)
	if diff := cmp.Diff(int32(3), scaleDownLimit(5, nil, nil, r, upstreamNow)); diff != "" {
		t.Errorf("scaleDownLimit (-want +got):\n%s", diff)
	}
}

func TestNormalizeDesiredReplicas(t *testing.T) {
	tests := []struct {
		name            string
		recommendations []Recommendation
		desired         int32
		wantStabilized  int32
		wantLogLength   int
	}{
		{name: "empty log", recommendations: []Recommendation{}, desired: 5, wantStabilized: 5, wantLogLength: 1},
		{name: "stabilize", recommendations: []Recommendation{
			{4, ago(2 * time.Minute)},
			{5, ago(1 * time.Minute)},
		}, desired: 3, wantStabilized: 5, wantLogLength: 3},
		{name: "no stabilize", recommendations: []Recommendation{
			{1, ago(2 * time.Minute)},
			{2, ago(1 * time.Minute)},
		}, desired: 3, wantStabilized: 3, wantLogLength: 3},
		{name: "no stabilize - old recommendations", recommendations: []Recommendation{
			{10, ago(10 * time.Minute)},
			{9, ago(9 * time.Minute)},
		}, desired: 3, wantStabilized: 3, wantLogLength: 2},
		{name: "stabilize - old recommendations", recommendations: []Recommendation{
			{10, ago(10 * time.Minute)},
			{4, ago(1 * time.Minute)},
			{5, ago(2 * time.Minute)},
			{9, ago(9 * time.Minute)},
		}, desired: 3, wantStabilized: 5, wantLogLength: 4},
	}
	type result struct {
		Stabilized int32
		LogLength  int
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, recs := stabilizeLegacy(tc.recommendations, tc.desired, DownscaleStabilization, upstreamNow)
			if diff := cmp.Diff(result{tc.wantStabilized, tc.wantLogLength}, result{got, len(recs)}); diff != "" {
				t.Errorf("stabilizeLegacy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeDesiredReplicasWithBehavior(t *testing.T) {
	tests := []struct {
		name                string
		recommendations     []Recommendation
		current, desired    int32
		wantStabilized      int32
		wantRecommendations []int32 // nil: not checked, as upstream
		upWindowSeconds     int32
		downWindowSeconds   int32
	}{
		{name: "empty recommendations for scaling down", recommendations: []Recommendation{},
			current: 100, desired: 5, wantStabilized: 5, wantRecommendations: []int32{5}},
		{name: "simple scale down stabilization", recommendations: []Recommendation{
			{4, ago(2 * time.Minute)}, {5, ago(1 * time.Minute)}},
			current: 100, desired: 3, wantStabilized: 5, wantRecommendations: []int32{4, 5, 3}, downWindowSeconds: 60 * 3},
		{name: "simple scale up stabilization", recommendations: []Recommendation{
			{4, ago(2 * time.Minute)}, {5, ago(1 * time.Minute)}},
			current: 1, desired: 7, wantStabilized: 4, wantRecommendations: []int32{4, 5, 7}, upWindowSeconds: 60 * 5},
		{name: "no scale down stabilization", recommendations: []Recommendation{
			{1, ago(2 * time.Minute)}, {2, ago(1 * time.Minute)}},
			current: 100, desired: 3, wantStabilized: 3, wantRecommendations: []int32{1, 2, 3}, upWindowSeconds: 60 * 5},
		{name: "no scale up stabilization", recommendations: []Recommendation{
			{4, ago(2 * time.Minute)}, {5, ago(1 * time.Minute)}},
			current: 1, desired: 3, wantStabilized: 3, wantRecommendations: []int32{4, 5, 3}, downWindowSeconds: 60 * 5},
		{name: "no scale down stabilization, reuse recommendation element", recommendations: []Recommendation{
			{10, ago(10 * time.Minute)}, {9, ago(9 * time.Minute)}},
			current: 100, desired: 3, wantStabilized: 3, wantRecommendations: []int32{10, 3}},
		{name: "no scale up stabilization, reuse recommendation element", recommendations: []Recommendation{
			{10, ago(10 * time.Minute)}, {9, ago(9 * time.Minute)}},
			current: 1, desired: 100, wantStabilized: 100, wantRecommendations: []int32{10, 100}},
		{name: "scale down stabilization, reuse one of obsolete recommendation element", recommendations: []Recommendation{
			{10, ago(10 * time.Minute)}, {4, ago(1 * time.Minute)}, {5, ago(2 * time.Minute)}, {9, ago(9 * time.Minute)}},
			current: 100, desired: 3, wantStabilized: 5, wantRecommendations: []int32{10, 4, 5, 3}, downWindowSeconds: 3 * 60},
		{name: "scale up stabilization, reuse one of obsolete recommendation element", recommendations: []Recommendation{
			{10, ago(100 * time.Minute)}, {6, ago(1 * time.Minute)}, {5, ago(2 * time.Minute)}, {9, ago(3 * time.Minute)}},
			current: 1, desired: 100, wantStabilized: 5, wantRecommendations: []int32{100, 6, 5, 9}, upWindowSeconds: 300},
		{name: "scale up and down stabilization, do not scale up when prenormalized rec goes down", recommendations: []Recommendation{
			{2, ago(100 * time.Minute)}, {3, ago(3 * time.Minute)}},
			current: 2, desired: 1, wantStabilized: 2, upWindowSeconds: 300, downWindowSeconds: 300},
		{name: "scale up and down stabilization, do not scale down when prenormalized rec goes up", recommendations: []Recommendation{
			{2, ago(100 * time.Minute)}, {1, ago(3 * time.Minute)}},
			current: 2, desired: 3, wantStabilized: 2, upWindowSeconds: 300, downWindowSeconds: 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, recs := stabilizeWithBehavior(tc.recommendations, tc.desired, tc.current,
				time.Duration(tc.upWindowSeconds)*time.Second, time.Duration(tc.downWindowSeconds)*time.Second, upstreamNow)
			if diff := cmp.Diff(tc.wantStabilized, got); diff != "" {
				t.Errorf("stabilized (-want +got):\n%s", diff)
			}
			if tc.wantRecommendations == nil {
				return
			}
			stored := make([]int32, len(recs))
			for i, r := range recs {
				stored[i] = r.Replicas
			}
			if diff := cmp.Diff(tc.wantRecommendations, stored); diff != "" {
				t.Errorf("stored recommendations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScalingWithRules(t *testing.T) {
	tests := []struct {
		name                     string
		scaleUpEvents            []ScaleEvent
		scaleDownEvents          []ScaleEvent
		minReplicas, maxReplicas int32
		scaleUpRules             *autoscalingv2.HPAScalingRules
		scaleDownRules           *autoscalingv2.HPAScalingRules
		current, desired         int32
		want                     limited
	}{
		{name: "prenormalized desired replicas within range",
			current: 5, desired: 7, minReplicas: 3, maxReplicas: 8, want: limited{7, "DesiredWithinRange"}},
		{name: "prenormalized desired replicas < minReplicas",
			current: 3, desired: 1, minReplicas: 2, maxReplicas: 8, want: limited{2, "TooFewReplicas"}},
		{name: "prenormalized desired replicas within range when minReplicas is 0",
			current: 1, desired: 0, minReplicas: 0, maxReplicas: 10, want: limited{0, "DesiredWithinRange"}},
		{name: "maxReplicas is the limit because maxReplicas < scaleUpLimit",
			current: 20, desired: 1000, minReplicas: 1, maxReplicas: 10, want: limited{10, "TooManyReplicas"}},
		{name: "desired replica count is more than the maximum replica count",
			current: 100, desired: 1000, minReplicas: 100, maxReplicas: 150, want: limited{150, "TooManyReplicas"}},
		{name: "scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies",
			current: 3, desired: 1000, minReplicas: 1, maxReplicas: 2000, scaleUpRules: rulesOf(0, 0, 1, 60, 0),
			want: limited{4, "ScaleUpLimit"}},
		// ScaleUp without PeriodSeconds usage
		{name: "scaleUp with default behavior",
			minReplicas: 1, maxReplicas: 1000, current: 10, desired: 50, want: limited{20, "ScaleUpLimit"}},
		{name: "scaleUp with pods policy larger than percent policy",
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: rulesOf(100, 60, 100, 60, 0), current: 10, desired: 500,
			want: limited{110, "ScaleUpLimit"}},
		{name: "scaleUp with percent policy larger than pods policy",
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: rulesOf(2, 60, 100, 60, 0), current: 10, desired: 500,
			want: limited{20, "ScaleUpLimit"}},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy",
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: rulesOf(100, 60, 0, 0, 0), current: 10, desired: 50,
			want: limited{50, "DesiredWithinRange"}},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy",
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: rulesOf(10000, 60, 0, 0, 0), current: 10, desired: 50,
			want: limited{50, "DesiredWithinRange"}},
		{name: "scaleUp with pod policy limitation",
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: rulesOf(30, 60, 0, 0, 0), current: 10, desired: 50,
			want: limited{40, "ScaleUpLimit"}},
		{name: "scaleUp with percent policy limitation",
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: rulesOf(0, 0, 200, 60, 0), current: 10, desired: 50,
			want: limited{30, "ScaleUpLimit"}},
		{name: "scaleDown with percent policy larger than pod policy",
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: rulesOf(20, 60, 1, 60, 300), current: 100, desired: 2,
			want: limited{80, "ScaleDownLimit"}},
		{name: "scaleDown with pod policy larger than percent policy",
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: rulesOf(2, 60, 1, 60, 300), current: 100, desired: 2,
			want: limited{98, "ScaleDownLimit"}},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy",
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: rulesOf(100, 60, 0, 0, 300), current: 10, desired: 0,
			want: limited{1, "TooFewReplicas"}},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy",
			minReplicas: 5, maxReplicas: 1000, scaleDownRules: rulesOf(0, 0, 100, 60, 300), current: 10, desired: 2,
			want: limited{5, "TooFewReplicas"}},
		{name: "scaleDown with pod policy limitation",
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: rulesOf(5, 60, 0, 0, 300), current: 10, desired: 2,
			want: limited{5, "ScaleDownLimit"}},
		{name: "scaleDown with percent policy limitation",
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: rulesOf(0, 0, 50, 60, 300), current: 10, desired: 5,
			want: limited{5, "DesiredWithinRange"}},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy and events",
			scaleUpEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 1, maxReplicas: 200,
			scaleUpRules: rulesOf(300, 60, 0, 0, 0), current: 100, desired: 500,
			want: limited{200, "TooManyReplicas"}}, // 200 < 100 - 15 + 300
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy and events",
			scaleUpEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 1, maxReplicas: 200,
			scaleUpRules: rulesOf(0, 0, 10000, 60, 0), current: 100, desired: 500,
			want: limited{200, "TooManyReplicas"}},
		// After many recent scale-ups under a smaller policy the naive limit
		// (100-15+5) is below current: no scale up, but no scale down either.
		{name: "scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events",
			scaleUpEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleUpRules: rulesOf(5, 120, 0, 0, 0), current: 100, desired: 500,
			want: limited{100, "ScaleUpLimit"}},
		{name: "scaleUp with pod policy and previous scale up events",
			scaleUpEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleUpRules: rulesOf(150, 120, 0, 0, 0), current: 100, desired: 500,
			want: limited{235, "ScaleUpLimit"}}, // 100 - 15 + 150
		{name: "scaleUp with percent policy and previous scale up events",
			scaleUpEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleUpRules: rulesOf(0, 0, 200, 120, 0), current: 100, desired: 500,
			want: limited{255, "ScaleUpLimit"}}, // (100 - 15) + 200%
		{name: "scaleUp with percent policy and previous scale up and down events",
			scaleUpEvents: spreadEvents([]int32{4}, 120), scaleDownEvents: spreadEvents([]int32{2}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleUpRules: rulesOf(0, 0, 300, 300, 0), current: 6, desired: 24,
			want: limited{16, "ScaleUpLimit"}},
		// ScaleDown with PeriodSeconds usage
		{name: "scaleDown with default policy and previous events",
			scaleDownEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 1, maxReplicas: 1000,
			current: 10, desired: 5,
			want: limited{5, "DesiredWithinRange"}}, // the default 100% policy limits nothing
		{name: "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events",
			scaleDownEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleDownRules: rulesOf(115, 120, 0, 0, 300), current: 100, desired: 0,
			want: limited{1, "TooFewReplicas"}},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy and previous events",
			scaleDownEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 5, maxReplicas: 1000,
			scaleDownRules: rulesOf(130, 120, 0, 0, 300), current: 100, desired: 0,
			want: limited{5, "TooFewReplicas"}},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy and previous events",
			scaleDownEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 5, maxReplicas: 1000,
			scaleDownRules: rulesOf(0, 0, 100, 120, 300), current: 100, desired: 2,
			want: limited{5, "TooFewReplicas"}}, // removing 100% always reaches 0, so min bounds it
		{name: "scaleDown with pod policy limitation and previous events",
			scaleDownEvents: spreadEvents([]int32{1, 5, 9}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleDownRules: rulesOf(5, 120, 0, 0, 300), current: 100, desired: 2,
			want: limited{100, "ScaleDownLimit"}}, // 100 + 15 - 5
		{name: "scaleDown with percent policy limitation and previous events",
			scaleDownEvents: spreadEvents([]int32{2, 4, 6}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleDownRules: rulesOf(0, 0, 50, 120, 300), current: 100, desired: 0,
			want: limited{56, "ScaleDownLimit"}}, // (100 + 12) - 50%
		{name: "scaleDown with percent policy and previous scale up and down events",
			scaleUpEvents: spreadEvents([]int32{2}, 120), scaleDownEvents: spreadEvents([]int32{4}, 120),
			minReplicas: 1, maxReplicas: 1000, scaleDownRules: rulesOf(0, 0, 50, 180, 0), current: 10, desired: 1,
			want: limited{6, "ScaleDownLimit"}},
		// After many recent scale-downs the naive limit (100+30-10%) is above
		// current: keep current.
		{name: "scaleDown with previous events preventing further scale down",
			scaleDownEvents: spreadEvents([]int32{10, 10, 10}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleDownRules: rulesOf(0, 0, 10, 120, 300), current: 100, desired: 0,
			want: limited{100, "ScaleDownLimit"}},
		// Same, but the limit goes below zero: the metrics' 5 wins.
		{name: "scaleDown with with previous events still allowing more scale down",
			scaleDownEvents: spreadEvents([]int32{10, 10, 10}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleDownRules: rulesOf(0, 0, 1000, 120, 300), current: 10, desired: 5,
			want: limited{5, "DesiredWithinRange"}},
		{name: "check 'outdated' flag for events for one behavior for up",
			scaleUpEvents: spreadEvents([]int32{8, 12, 9, 11}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleUpRules: rulesOf(1000, 60, 0, 0, 0), current: 100, desired: 200,
			want: limited{200, "DesiredWithinRange"}},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for up",
			scaleUpEvents: spreadEvents([]int32{8, 12, 9, 11}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleUpRules: rulesOf(1000, 120, 100, 60, 0), current: 100, desired: 200,
			want: limited{200, "DesiredWithinRange"}},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for up",
			scaleUpEvents: spreadEvents([]int32{8, 12, 9, 11}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleUpRules: rulesOf(1000, 30, 100, 60, 0), current: 100, desired: 200,
			want: limited{200, "DesiredWithinRange"}},
		{name: "check 'outdated' flag for events for one behavior for down",
			scaleDownEvents: spreadEvents([]int32{8, 12, 9, 11}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleDownRules: rulesOf(1000, 60, 0, 0, 300), current: 100, desired: 5,
			want: limited{5, "DesiredWithinRange"}},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for down",
			scaleDownEvents: spreadEvents([]int32{8, 12, 9, 11}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleDownRules: rulesOf(1000, 120, 100, 60, 300), current: 100, desired: 5,
			want: limited{5, "DesiredWithinRange"}},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for down",
			scaleDownEvents: spreadEvents([]int32{8, 12, 9, 11}, 120), minReplicas: 1, maxReplicas: 1000,
			scaleDownRules: rulesOf(1000, 30, 100, 60, 300), current: 100, desired: 5,
			want: limited{5, "DesiredWithinRange"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := resolveScaleUp(tc.scaleUpRules)
			down := resolveScaleDown(tc.scaleDownRules, DownscaleStabilization)
			n, reason, _ := limitWithBehaviorRate(tc.current, tc.desired, tc.minReplicas, tc.maxReplicas,
				up, down, tc.scaleUpEvents, tc.scaleDownEvents, upstreamNow)
			if diff := cmp.Diff(tc.want, limited{n, reason}); diff != "" {
				t.Errorf("limitWithBehaviorRate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStoreScaleEvents stores one event through History.RecordScale, once
// scaling up and once scaling down, as upstream does with storeScaleEvent.
func TestStoreScaleEvents(t *testing.T) {
	type event struct {
		Change   int32
		Outdated bool
	}
	tests := []struct {
		name       string
		change     int32
		prev       []ScaleEvent
		want       []event
		rules      *autoscalingv2.HPAScalingRules
		wantChange int32
	}{
		{name: "empty entries with default behavior", change: 5,
			prev: []ScaleEvent{}, // no history -> 0 replica change
			want: []event{},      // no behavior -> no events are stored
		},
		{name: "empty entries with two-policy-behavior", change: 5,
			prev: []ScaleEvent{}, want: []event{{5, false}}, rules: rulesOf(10, 60, 100, 60, 0)},
		{name: "one outdated entry to be kept untouched without behavior", change: 5,
			prev: []ScaleEvent{{7, ago(61 * time.Second), false}},
			want: []event{{7, false}}, // no behavior -> stored events are not touched
		},
		{name: "one outdated entry to be replaced with behavior", change: 5,
			prev:  []ScaleEvent{{7, ago(61 * time.Second), false}},
			want:  []event{{5, false}},
			rules: rulesOf(10, 60, 100, 60, 0)},
		{name: "one actual entry to be not touched with behavior", change: 5,
			prev:       []ScaleEvent{{7, ago(58 * time.Second), false}},
			want:       []event{{7, false}, {5, false}},
			rules:      rulesOf(10, 60, 100, 60, 0),
			wantChange: 7},
		{name: "two entries, one of them to be replaced", change: 5,
			prev: []ScaleEvent{
				{7, ago(61 * time.Second), false}, // outdated: replaced
				{6, ago(59 * time.Second), false},
			},
			want:       []event{{5, false}, {6, false}},
			rules:      rulesOf(10, 60, 0, 0, 0),
			wantChange: 6},
		{name: "replace one entry, use policies with different periods", change: 5,
			prev: []ScaleEvent{
				{8, ago(29 * time.Second), false},
				{6, ago(59 * time.Second), false},
				{7, ago(61 * time.Second), false}, // outdated: marked
				{9, ago(61 * time.Second), false}, // outdated: replaced
			},
			want:       []event{{8, false}, {6, false}, {7, true}, {5, false}},
			rules:      rulesOf(10, 60, 100, 30, 0),
			wantChange: 14},
		{name: "two entries, both actual", change: 5,
			prev: []ScaleEvent{
				{7, ago(58 * time.Second), false},
				{6, ago(59 * time.Second), false},
			},
			want:       []event{{7, false}, {6, false}, {5, false}},
			rules:      rulesOf(10, 120, 100, 30, 0),
			wantChange: 13},
	}
	project := func(es []ScaleEvent) []event {
		out := []event{}
		for _, e := range es {
			out = append(out, event{e.Change, e.Outdated})
		}
		return out
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, dir := range []string{"up", "down"} {
				cfg := &Config{}
				h := &History{}
				events := &h.ScaleUpEvents
				d := Decision{Time: upstreamNow, Current: 10, Desired: 10 + tc.change, Action: ActionScaleUp}
				if tc.rules != nil {
					cfg.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.rules}
				}
				if dir == "down" {
					events = &h.ScaleDownEvents
					d.Desired, d.Action = 10-tc.change, ActionScaleDown
					if tc.rules != nil {
						cfg.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: tc.rules}
					}
				}
				*events = append([]ScaleEvent{}, tc.prev...)
				if diff := cmp.Diff(tc.wantChange, changeInPeriod(60, *events, upstreamNow)); diff != "" {
					t.Errorf("%s: change in the last 60 s (-want +got):\n%s", dir, diff)
				}
				h.RecordScale(cfg, d)
				if diff := cmp.Diff(tc.want, project(*events)); diff != "" {
					t.Errorf("%s: stored events (-want +got):\n%s", dir, diff)
				}
			}
		})
	}
}

// TestReplicaCalcExternalMetric ports the External metric (Value target)
// cases; the case about unready pods does not apply (a trigger's Value
// scales the current count, not a count of ready pods).
func TestReplicaCalcExternalMetric(t *testing.T) {
	tests := []struct {
		name             string
		tolerances       *Tolerances
		current          int32
		value, threshold float64
		want             int32
	}{
		{name: "scale down", current: 5, value: 8600, threshold: 14334, want: 3},
		{name: "within default tolerance", current: 3, value: 8600, threshold: 8888, want: 3},
		{name: "outside configurable 1% tolerance", tolerances: &Tolerances{Down: StandardTolerance, Up: .01},
			current: 3, value: 8900, threshold: 8800, want: 4},
		{name: "usage overflow caps at MaxInt64", current: 3,
			value: 2 * float64(math.MaxInt64/2+1), threshold: math.MaxInt64, want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tol := Tolerances{Up: StandardTolerance, Down: StandardTolerance}
			if tc.tolerances != nil {
				tol = *tc.tolerances
			}
			got, _, _ := TriggerReplicas(TargetValue, tc.value, tc.threshold, tc.current, tol)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TriggerReplicas (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReplicaCalcExternalPerPodMetric ports the External metric
// (AverageValue target) cases.
func TestReplicaCalcExternalPerPodMetric(t *testing.T) {
	tests := []struct {
		name             string
		tolerances       *Tolerances
		current          int32
		value, threshold float64
		want             int32
	}{
		{name: "replica count overflow saturates to MaxInt32", current: 1, value: math.MaxInt64, threshold: 1, want: math.MaxInt32},
		{name: "usage overflow with huge target leaves replicas unchanged", current: 1, value: math.MaxInt64, threshold: math.MaxInt64, want: 1},
		{name: "scale up", current: 3, value: 8600, threshold: 2150, want: 4},
		{name: "scale down", current: 5, value: 8600, threshold: 2867, want: 3},
		{name: "within default tolerance", current: 3, value: 8600, threshold: 2900, want: 3},
		{name: "outside configurable 1% tolerance", tolerances: &Tolerances{Down: StandardTolerance, Up: .01},
			current: 3, value: 8600, threshold: 2800, want: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tol := Tolerances{Up: StandardTolerance, Down: StandardTolerance}
			if tc.tolerances != nil {
				tol = *tc.tolerances
			}
			got, _, _ := TriggerReplicas(TargetAverageValue, tc.value, tc.threshold, tc.current, tol)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TriggerReplicas (-want +got):\n%s", diff)
			}
		})
	}
}
