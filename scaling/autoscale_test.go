package scaling

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// configBuilder builds test configs: mkConfig(0, 5).Trigger(...).Obj().
type configBuilder struct{ c Config }

func mkConfig(minR, maxR int32) *configBuilder {
	return &configBuilder{c: Config{MinReplicas: &minR, MaxReplicas: &maxR}}
}

func (b *configBuilder) Trigger(name string, typ TargetType, threshold float64) *configBuilder {
	b.c.Triggers = append(b.c.Triggers, Trigger{Name: name, Type: typ, Threshold: threshold})
	return b
}

// Activation sets the activation threshold of the last trigger.
func (b *configBuilder) Activation(v float64) *configBuilder {
	b.c.Triggers[len(b.c.Triggers)-1].ActivationThreshold = &v
	return b
}

func (b *configBuilder) Idle(replicasAtStart, timeoutSeconds int32) *configBuilder {
	b.c.Idle = &Idle{ReplicasAtStart: &replicasAtStart, TimeoutSeconds: &timeoutSeconds}
	return b
}

func (b *configBuilder) Schedule(tz string, wakeUp ...string) *configBuilder {
	b.c.Schedule = &Schedule{TimeZone: tz, WakeUp: wakeUp}
	return b
}

func (b *configBuilder) DependsOn(names ...string) *configBuilder {
	b.c.DependsOn = names
	return b
}

func (b *configBuilder) Behavior(bh *autoscalingv2.HorizontalPodAutoscalerBehavior) *configBuilder {
	b.c.Behavior = bh
	return b
}

func (b *configBuilder) Obj() *Config { c := b.c; return &c }

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func val(name string, v float64) TriggerResult {
	return TriggerResult{Name: name, Sample: Sample{Value: v, OK: true}}
}

func noData(name string) TriggerResult { return TriggerResult{Name: name} }

func failed(name string, err error) TriggerResult {
	return TriggerResult{Name: name, Sample: Sample{OK: true}, Err: err}
}

var t0 = time.Date(2026, time.June, 10, 12, 0, 0, 0, time.UTC)

// outcome is the part of a decision the tables assert.
type outcome struct {
	Desired     int32
	Action      ScaleAction
	Limit       string
	Idle        bool
	MetricsVeto bool
	Deps        *DependencyCheck
	Signal      []string
}

func outcomeOf(d Decision) outcome {
	o := outcome{Desired: d.Desired, Action: d.Action, Limit: d.Limit, Deps: d.Dependencies, Signal: d.SignalDependencies}
	if d.Idle != nil {
		o.Idle, o.MetricsVeto = d.Idle.Idle, d.Idle.MetricsVeto
	}
	return o
}

func TestDecideTriggers(t *testing.T) {
	tests := []struct {
		name    string
		cfg     *Config
		current int32
		results []TriggerResult
		want    outcome
		reason  string // checked when set
	}{
		{
			name:    "scale up names the trigger",
			cfg:     mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{}).Obj(),
			current: 2, results: []TriggerResult{val("rps", 100)},
			want:   outcome{Desired: 5, Action: ActionScaleUp, Limit: LimitNone},
			reason: "Scale up from 2 to 5: rps=100 over 2 replicas is 50 per replica, above the target 20: asks for ceil(100 / 20) = 5",
		},
		{
			name:    "without behavior one step at most doubles (at least 4)",
			cfg:     mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Obj(),
			current: 2, results: []TriggerResult{val("rps", 100)},
			want:   outcome{Desired: 4, Action: ActionScaleUp, Limit: LimitScaleUp},
			reason: "Scale up from 2 to 4: rps=100 over 2 replicas is 50 per replica, above the target 20: asks for ceil(100 / 20) = 5; limited to 4 by the scale-up limit without a behavior (max(2 × 2, 4) = 4)",
		},
		{
			name:    "Value target scales the current count",
			cfg:     mkConfig(1, 10).Trigger("latency", TargetValue, 0.5).Obj(),
			current: 3, results: []TriggerResult{val("latency", 0.8)},
			want:   outcome{Desired: 5, Action: ActionScaleUp, Limit: LimitNone},
			reason: "Scale up from 3 to 5: latency=0.8 is 1.6 times the target 0.5: asks for ceil(1.6 × 3) = 5",
		},
		{
			name:    "the highest trigger wins",
			cfg:     mkConfig(1, 20).Trigger("rps", TargetAverageValue, 20).Trigger("queue", TargetAverageValue, 10).Obj(),
			current: 4, results: []TriggerResult{val("rps", 90), val("queue", 70)},
			want:   outcome{Desired: 7, Action: ActionScaleUp, Limit: LimitNone},
			reason: "Scale up from 4 to 7: queue=70 over 4 replicas is 17.5 per replica, above the target 10: asks for ceil(70 / 10) = 7 (the highest of 2 triggers)",
		},
		{
			name:    "within tolerance keeps the count",
			cfg:     mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Obj(),
			current: 5, results: []TriggerResult{val("rps", 108)},
			want:   outcome{Desired: 5, Action: ActionNone, Limit: LimitNone},
			reason: "Keep 5: rps=108 over 5 replicas is 21.6 per replica, within the tolerance (ratio 1.08, band 0.9..1.1) of the target 20: keeps 5",
		},
		{
			name: "a behavior's scale-up tolerance widens the band upwards only",
			cfg: mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: quantity("500m")},
			}).Obj(),
			current: 5, results: []TriggerResult{val("rps", 140)},
			want: outcome{Desired: 5, Action: ActionNone, Limit: LimitNone},
		},
		{
			name:    "all triggers without data keep the count",
			cfg:     mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Trigger("queue", TargetAverageValue, 10).Obj(),
			current: 3, results: []TriggerResult{noData("rps"), failed("queue", errors.New("connection refused"))},
			want:   outcome{Desired: 3, Action: ActionNone},
			reason: "Keep 3: no trigger has usable data (rps: no data, queue: connection refused)",
		},
		{
			name:    "NaN and Inf are no data",
			cfg:     mkConfig(1, 10).Trigger("a", TargetAverageValue, 20).Trigger("b", TargetValue, 10).Obj(),
			current: 3, results: []TriggerResult{val("a", math.NaN()), val("b", math.Inf(1))},
			want:   outcome{Desired: 3, Action: ActionNone},
			reason: "Keep 3: no trigger has usable data (a: value is NaN, b: value is +Inf)",
		},
		{
			name:    "all invalid above max still comes back to max",
			cfg:     mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Obj(),
			current: 12, results: []TriggerResult{noData("rps")},
			want:   outcome{Desired: 10, Action: ActionScaleDown},
			reason: "Scale down from 12 to 10: above maxReplicas 10",
		},
		{
			name:    "one trigger without data: never scale down",
			cfg:     mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Trigger("queue", TargetAverageValue, 10).Obj(),
			current: 6, results: []TriggerResult{val("rps", 20), noData("queue")},
			want:   outcome{Desired: 6, Action: ActionNone},
			reason: "Keep 6: never scale down while a trigger has no usable data (queue: no data)",
		},
		{
			name:    "one trigger without data: scale up on the others",
			cfg:     mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Trigger("queue", TargetAverageValue, 10).Obj(),
			current: 2, results: []TriggerResult{val("rps", 60), noData("queue")},
			want: outcome{Desired: 3, Action: ActionScaleUp, Limit: LimitNone},
		},
		{
			name:    "a trigger without a result is invalid",
			cfg:     mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Obj(),
			current: 2, results: nil,
			want:   outcome{Desired: 2, Action: ActionNone},
			reason: "Keep 2: no trigger has usable data (rps: no result)",
		},
		{
			name:    "below min comes up to min",
			cfg:     mkConfig(3, 10).Trigger("rps", TargetAverageValue, 20).Obj(),
			current: 1, results: []TriggerResult{val("rps", 0)},
			want:   outcome{Desired: 3, Action: ActionScaleUp},
			reason: "Scale up from 1 to 3: below minReplicas 3",
		},
		{
			name:    "no triggers keeps the count",
			cfg:     mkConfig(1, 10).Obj(),
			current: 4,
			want:    outcome{Desired: 4, Action: ActionNone},
			reason:  "Keep 4: no triggers",
		},
		{
			name: "selectPolicy Disabled never scales up",
			cfg: mkConfig(1, 10).Trigger("rps", TargetAverageValue, 20).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: new(autoscalingv2.DisabledPolicySelect)},
			}).Obj(),
			current: 2, results: []TriggerResult{val("rps", 100)},
			want:   outcome{Desired: 2, Action: ActionNone, Limit: LimitScaleUp},
			reason: "Keep 2: rps=100 over 2 replicas is 50 per replica, above the target 20: asks for ceil(100 / 20) = 5; limited to 2 by the scale-up selectPolicy Disabled",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(DecideInput{Now: t0, Current: tc.current, Config: tc.cfg, Triggers: tc.results}, &History{})
			if diff := cmp.Diff(tc.want, outcomeOf(d)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			if tc.reason != "" {
				if diff := cmp.Diff(tc.reason, d.Reason); diff != "" {
					t.Errorf("reason (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestDecideStabilization runs ticks through one History: a fresh
// autoscaler holds its first count for the downscale window, then follows
// the highest recommendation of the window down.
func TestDecideStabilization(t *testing.T) {
	cfg := mkConfig(1, 10).Trigger("rps", TargetAverageValue, 10).Obj()
	h := &History{}
	type tick struct {
		after   time.Duration
		current int32
		value   float64
	}
	ticks := []tick{
		{0, 6, 20},                            // wants 2; the initial recommendation 6 holds
		{time.Minute, 6, 30},                  // wants 3; 6 still in the window
		{5 * time.Minute, 6, 30},              // 6 at t0 is exactly 5 min old: still held
		{5*time.Minute + time.Second, 6, 20},  // the t0 recommendations left: 3 (1 min, 5 min) holds
		{6 * time.Minute, 3, 20},              // 3 at 5 min is still in the window
		{10*time.Minute + time.Second, 3, 20}, // only 2s are left in the window
	}
	var got []int32
	for _, tk := range ticks {
		d := Decide(DecideInput{Now: t0.Add(tk.after), Current: tk.current, Config: cfg, Triggers: []TriggerResult{val("rps", tk.value)}}, h)
		h.RecordScale(cfg, d)
		got = append(got, d.Desired)
	}
	if diff := cmp.Diff([]int32{6, 6, 6, 3, 3, 2}, got); diff != "" {
		t.Errorf("desired per tick (-want +got):\n%s", diff)
	}
}

// TestDecideBehaviorPolicies checks that RecordScale feeds the policies:
// "2 pods per minute" allows 2, then nothing until the minute has passed.
func TestDecideBehaviorPolicies(t *testing.T) {
	cfg := mkConfig(1, 20).Trigger("q", TargetAverageValue, 1).Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: rulesOf(2, 60, 0, 0, 0),
	}).Obj()
	h := &History{}
	cur := int32(2)
	var got []int32
	for _, after := range []time.Duration{0, 15 * time.Second, 30 * time.Second, 61 * time.Second} {
		d := Decide(DecideInput{Now: t0.Add(after), Current: cur, Config: cfg, Triggers: []TriggerResult{val("q", 10)}}, h)
		h.RecordScale(cfg, d)
		cur = d.Desired
		got = append(got, cur)
	}
	if diff := cmp.Diff([]int32{4, 4, 4, 6}, got); diff != "" {
		t.Errorf("replicas per tick (-want +got):\n%s", diff)
	}
	// The first event is older than the longest period: its slot is reused.
	if diff := cmp.Diff([]ScaleEvent{{Change: 2, Time: t0.Add(61 * time.Second)}}, h.ScaleUpEvents); diff != "" {
		t.Errorf("scale-up events (-want +got):\n%s", diff)
	}
}

func TestDecideScaleToZero(t *testing.T) {
	// The workload has been up for an hour unless a case says otherwise.
	awake := t0.Add(-time.Hour)
	queue := func() *configBuilder {
		return mkConfig(0, 5).Idle(2, 300).Trigger("queue", TargetAverageValue, 10)
	}
	tests := []struct {
		name     string
		cfg      *Config
		current  int32
		history  History
		activity time.Time
		results  []TriggerResult
		deps     map[string]DependencyState
		want     outcome
		reason   string
	}{
		{
			name: "idle timeout not reached keeps one replica",
			cfg:  queue().Obj(), current: 1,
			history: History{AwakeSince: awake, LastActive: t0.Add(-299 * time.Second)},
			results: []TriggerResult{val("queue", 0)},
			want:    outcome{Desired: 1, Action: ActionNone, Limit: LimitNone},
		},
		{
			name: "idle timeout passed and every trigger asks for 0",
			cfg:  queue().Obj(), current: 1,
			history: History{AwakeSince: awake, LastActive: t0.Add(-301 * time.Second)},
			results: []TriggerResult{val("queue", 0)},
			want:    outcome{Desired: 0, Action: ActionScaleToZero, Limit: LimitNone, Idle: true},
			reason:  "Scale to zero from 1: no activity for 5m1s (timeout 5m0s) and every trigger asks for 0",
		},
		{
			name: "idle goes to zero from any count",
			cfg:  queue().Obj(), current: 4,
			history: History{AwakeSince: awake, LastActive: t0.Add(-time.Hour)},
			results: []TriggerResult{val("queue", 0)},
			// The HPA step alone would hold 4 for the downscale window;
			// sleeping does not wait for it.
			want: outcome{Desired: 0, Action: ActionScaleToZero, Limit: LimitNone, Idle: true},
		},
		{
			name: "metrics veto: idle but the queue still needs a replica",
			cfg:  queue().Activation(5).Obj(), current: 1,
			history: History{AwakeSince: awake, LastActive: t0.Add(-time.Hour)},
			results: []TriggerResult{val("queue", 3)}, // below activation, but ceil(3/10) = 1
			want:    outcome{Desired: 1, Action: ActionNone, Limit: LimitNone, Idle: true, MetricsVeto: true},
			reason:  "Keep 1: queue=3 over 1 replica is 3 per replica, below the target 10: asks for ceil(3 / 10) = 1; idle, but not scaling to zero: trigger queue=3 still asks for 1",
		},
		{
			name: "an active trigger is activity",
			cfg:  queue().Obj(), current: 1,
			history: History{AwakeSince: awake, LastActive: t0.Add(-time.Hour)},
			results: []TriggerResult{val("queue", 3)},
			want:    outcome{Desired: 1, Action: ActionNone, Limit: LimitNone},
		},
		{
			name: "no data above zero keeps the count and does not sleep",
			cfg:  queue().Obj(), current: 3,
			history: History{AwakeSince: awake, LastActive: t0.Add(-time.Hour)},
			results: []TriggerResult{noData("queue")},
			want:    outcome{Desired: 3, Action: ActionNone, Idle: true, MetricsVeto: true},
			reason:  "Keep 3: no trigger has usable data (queue: no data); idle, but not scaling to zero: trigger queue has no usable data (no data)",
		},
		{
			// A fresh History: awake since now, and the HPA holds its first
			// count for the downscale window.
			name: "a workload woken by hand gets a full timeout",
			cfg:  queue().Obj(), current: 2,
			results: []TriggerResult{val("queue", 0)},
			want:    outcome{Desired: 2, Action: ActionNone, Limit: LimitNone},
		},
		{
			name: "without triggers the idle timeout alone decides",
			cfg:  mkConfig(0, 3).Idle(1, 60).Obj(), current: 2,
			history: History{AwakeSince: awake, LastActive: t0.Add(-61 * time.Second)},
			want:    outcome{Desired: 0, Action: ActionScaleToZero, Idle: true},
		},
		{
			name: "no data at zero stays at zero",
			cfg:  queue().Obj(), current: 0,
			results: []TriggerResult{noData("queue")},
			want:    outcome{Desired: 0, Action: ActionNone, Idle: true},
			reason:  "Stay at zero: no activity",
		},
		{
			name: "at zero a value at the activation threshold does not wake",
			cfg:  queue().Activation(5).Obj(), current: 0,
			results: []TriggerResult{val("queue", 5)},
			want:    outcome{Desired: 0, Action: ActionNone, Idle: true},
		},
		{
			name: "at zero a value above the activation threshold wakes to replicasAtStart",
			cfg:  queue().Activation(5).Obj(), current: 0,
			results: []TriggerResult{val("queue", 5.5)},
			want:    outcome{Desired: 2, Action: ActionWakeUp},
			reason:  "Wake up from 0 to 2: trigger queue=5.5 is active",
		},
		{
			name: "without activation threshold any value above 0 wakes",
			cfg:  queue().Obj(), current: 0,
			results: []TriggerResult{val("queue", 0.1)},
			want:    outcome{Desired: 2, Action: ActionWakeUp},
		},
		{
			name: "an activity signal wakes",
			cfg:  queue().Obj(), current: 0,
			activity: t0.Add(-time.Second),
			results:  []TriggerResult{val("queue", 0)},
			want:     outcome{Desired: 2, Action: ActionWakeUp},
			reason:   "Wake up from 0 to 2: activity at 2026-06-10T11:59:59Z",
		},
		{
			name: "activity older than the timeout does not wake",
			cfg:  queue().Obj(), current: 0,
			activity: t0.Add(-301 * time.Second),
			results:  []TriggerResult{val("queue", 0)},
			want:     outcome{Desired: 0, Action: ActionNone, Idle: true},
			reason:   "Stay at zero: no activity since 2026-06-10T11:54:59Z",
		},
		{
			name: "replicasAtStart is capped at maxReplicas",
			cfg:  mkConfig(0, 3).Idle(8, 300).Obj(), current: 0,
			activity: t0,
			want:     outcome{Desired: 3, Action: ActionWakeUp},
		},
		{
			name: "replicasAtStart 0 still wakes to one",
			cfg:  mkConfig(0, 3).Idle(0, 300).Obj(), current: 0,
			activity: t0,
			want:     outcome{Desired: 1, Action: ActionWakeUp},
		},
		{
			name: "dependencies asleep: wake them first and wait",
			cfg:  queue().DependsOn("db", "cache").Obj(), current: 0,
			activity: t0,
			deps:     map[string]DependencyState{"db": {}, "cache": {Replicas: 1, ReadyReplicas: 1}},
			want: outcome{Desired: 0, Action: ActionWait,
				Deps:   &DependencyCheck{Wake: []string{"db"}, NotReady: []string{"db"}, Wait: true},
				Signal: []string{"db", "cache"}},
			reason: "Wait at 0: dependencies not ready: db; waking db",
		},
		{
			name: "dependency awake but not ready yet: wait",
			cfg:  queue().DependsOn("db").Obj(), current: 0,
			activity: t0,
			deps:     map[string]DependencyState{"db": {Replicas: 1}},
			want: outcome{Desired: 0, Action: ActionWait,
				Deps: &DependencyCheck{NotReady: []string{"db"}, Wait: true}, Signal: []string{"db"}},
		},
		{
			name: "dependencies ready: wake",
			cfg:  queue().DependsOn("db", "cache").Obj(), current: 0,
			activity: t0,
			deps:     map[string]DependencyState{"db": {Replicas: 1, ReadyReplicas: 1}, "cache": {Replicas: 2, ReadyReplicas: 1}},
			want:     outcome{Desired: 2, Action: ActionWakeUp, Deps: &DependencyCheck{}, Signal: []string{"db", "cache"}},
		},
		{
			name: "a missing dependency keeps the workload waiting",
			cfg:  queue().DependsOn("db").Obj(), current: 0,
			activity: t0,
			want: outcome{Desired: 0, Action: ActionWait,
				Deps: &DependencyCheck{NotReady: []string{"db"}, Missing: []string{"db"}, Wait: true}, Signal: []string{"db"}},
			reason: "Wait at 0: dependencies not ready: db; missing db",
		},
		{
			name: "dependencies do not matter when staying asleep",
			cfg:  queue().DependsOn("db").Obj(), current: 0,
			want: outcome{Desired: 0, Action: ActionNone, Idle: true},
		},
		{
			name: "a range starting above zero brings a workload at zero to min, after its dependencies",
			cfg:  mkConfig(2, 5).DependsOn("db").Obj(), current: 0,
			deps: map[string]DependencyState{"db": {}},
			want: outcome{Desired: 0, Action: ActionWait,
				Deps: &DependencyCheck{Wake: []string{"db"}, NotReady: []string{"db"}, Wait: true}, Signal: []string{"db"}},
		},
		{
			name: "a config pinned at zero stays at zero",
			cfg:  mkConfig(0, 0).Obj(), current: 0,
			activity: t0,
			want:     outcome{Desired: 0, Action: ActionNone},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.history
			d := Decide(DecideInput{Now: t0, Current: tc.current, Config: tc.cfg, Triggers: tc.results,
				LastActivity: tc.activity, Dependencies: tc.deps}, &h)
			if diff := cmp.Diff(tc.want, outcomeOf(d)); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			if tc.reason != "" {
				if diff := cmp.Diff(tc.reason, d.Reason); diff != "" {
					t.Errorf("reason (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestDecideScheduleAcrossDST: a wake-up at 08:00 Europe/Paris is 07:00 UTC
// in winter time and 06:00 UTC in summer time; the clocks change on
// 2026-03-29 and 2026-10-25.
func TestDecideScheduleAcrossDST(t *testing.T) {
	cfg := mkConfig(0, 4).Idle(1, 300).Schedule("Europe/Paris", "08:00").Obj()
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name string
		now  string
		want int32
	}{
		{"winter time: one minute before 08:00 CET", "2026-03-28T06:59:00Z", 0},
		{"winter time: 08:00 CET", "2026-03-28T07:00:00Z", 1},
		{"winter time: within the timeout after the wake-up", "2026-03-28T07:05:00Z", 1},
		{"winter time: past the timeout after the wake-up", "2026-03-28T07:05:01Z", 0},
		{"summer time starts: one minute before 08:00 CEST", "2026-03-29T05:59:00Z", 0},
		{"summer time starts: 08:00 CEST", "2026-03-29T06:00:00Z", 1},
		{"summer time starts: 07:00 UTC is 09:00 CEST, past the timeout", "2026-03-29T07:00:00Z", 0},
		{"winter time again: 06:00 UTC is 07:00 CET", "2026-10-25T06:00:00Z", 0},
		{"winter time again: 08:00 CET", "2026-10-25T07:00:00Z", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(DecideInput{Now: at(tc.now), Current: 0, Config: cfg}, &History{})
			if diff := cmp.Diff(tc.want, d.Desired); diff != "" {
				t.Errorf("desired (-want +got):\n%s\nreason: %s", diff, d.Reason)
			}
		})
	}
}

// TestDecideDailySchedule is the day of docs/autoscaling.md's schedule
// example: a wake-up at 08:00 Paris time with a 30 minute timeout in
// business hours, an activity signal in the afternoon, a 5 minute timeout
// from 19:00 and a metrics veto in the evening.
func TestDecideDailySchedule(t *testing.T) {
	cfg := mkConfig(0, 10).Idle(2, 300).Trigger("rps", TargetAverageValue, 20).Activation(1).Obj()
	cfg.Schedule = &Schedule{TimeZone: "Europe/Paris", WakeUp: []string{"08:00"},
		ScaleDownTimeout: []ScaleDownTimeout{{Time: "08:00", Seconds: 1800}, {Time: "19:00", Seconds: 300}}}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	type tick struct {
		at       string // Paris wall time on 2026-06-10
		rps      float64
		activity bool
	}
	ticks := []tick{
		{at: "07:59"},
		{at: "08:00"}, // scheduled wake-up
		{at: "08:29"},
		{at: "08:30"}, // idle exactly 30 min: not past
		{at: "08:31"}, // past the business-hours timeout
		{at: "13:59", activity: true},
		{at: "14:00", rps: 30},
		{at: "18:59", rps: 30}, // last active tick
		{at: "19:04:30", rps: 0.5},
		{at: "19:05", rps: 0.5},
		{at: "19:06"},
	}
	h := &History{}
	cur := int32(0)
	var got []int32
	var actions []ScaleAction
	for _, tk := range ticks {
		layout := "15:04"
		if len(tk.at) > 5 {
			layout = "15:04:05"
		}
		clock, err := time.Parse(layout, tk.at)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 6, 10, clock.Hour(), clock.Minute(), clock.Second(), 0, paris)
		in := DecideInput{Now: now, Current: cur, Config: cfg, Triggers: []TriggerResult{val("rps", tk.rps)}}
		if tk.activity {
			in.LastActivity = now
		}
		d := Decide(in, h)
		h.RecordScale(cfg, d)
		cur = d.Desired
		got = append(got, cur)
		actions = append(actions, d.Action)
	}
	if diff := cmp.Diff([]int32{0, 2, 2, 2, 0, 2, 2, 2, 1, 1, 0}, got); diff != "" {
		t.Errorf("replicas per tick (-want +got):\n%s", diff)
	}
	want := []ScaleAction{ActionNone, ActionWakeUp, ActionNone, ActionNone, ActionScaleToZero, ActionWakeUp,
		ActionNone, ActionNone, ActionScaleDown, ActionNone, ActionScaleToZero}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("actions per tick (-want +got):\n%s", diff)
	}
}

// TestDecideLifecycle follows a workload and its dependency through
// wake-up, work, idle and sleep, as a controller drives them: every tick
// samples the trigger, decides, records activity for the dependencies the
// decision names, and records the scale once "written".
func TestDecideLifecycle(t *testing.T) {
	app := mkConfig(0, 6).Idle(1, 120).Trigger("queue", TargetAverageValue, 10).DependsOn("db").Obj()
	db := mkConfig(0, 1).Idle(1, 120).Obj()
	hApp, hDB := &History{}, &History{}
	appN, dbN, dbReady := int32(0), int32(0), int32(0)
	var dbActivity time.Time
	type step struct {
		App, DB int32
		Action  ScaleAction
	}
	var got []step
	queue := []float64{0, 25, 25, 25, 40, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for i, q := range queue {
		now := t0.Add(time.Duration(i) * 30 * time.Second)
		d := Decide(DecideInput{Now: now, Current: appN, Config: app, Triggers: []TriggerResult{val("queue", q)},
			Dependencies: map[string]DependencyState{"db": {Replicas: dbN, ReadyReplicas: dbReady}}}, hApp)
		if len(d.SignalDependencies) > 0 {
			dbActivity = d.Time
		}
		dd := Decide(DecideInput{Now: now, Current: dbN, Config: db, LastActivity: dbActivity}, hDB)
		hApp.RecordScale(app, d)
		hDB.RecordScale(db, dd)
		dbReady = dbN // the database is ready one tick after it was woken
		appN, dbN = d.Desired, dd.Desired
		got = append(got, step{appN, dbN, d.Action})
	}
	want := []step{
		{0, 0, ActionNone},        // 0 s: no work, asleep
		{0, 1, ActionWait},        // 30 s: work; db is woken first
		{0, 1, ActionWait},        // 60 s: db starting
		{1, 1, ActionWakeUp},      // 90 s: db ready; wake to replicasAtStart
		{4, 1, ActionScaleUp},     // 120 s: ceil(40/10)
		{4, 1, ActionNone},        // 150 s: on target; last active tick
		{4, 1, ActionNone},        // 180 s: queue empty; the downscale window holds 4
		{4, 1, ActionNone},        // 210 s
		{4, 1, ActionNone},        // 240 s
		{4, 1, ActionNone},        // 270 s: idle for exactly the timeout, not past it
		{0, 1, ActionScaleToZero}, // 300 s: idle and the queue asks for 0
		{0, 1, ActionNone},        // 330 s: db last signalled at 270 s
		{0, 1, ActionNone},        // 360 s
		{0, 1, ActionNone},        // 390 s: db idle for exactly the timeout
		{0, 0, ActionNone},        // 420 s: db goes to zero too
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// TestDecisionJSON: an explanation must encode even when the inputs hold
// NaN and infinities.
func TestDecisionJSON(t *testing.T) {
	cfg := mkConfig(0, 5).Idle(1, 60).Schedule("Europe/Paris", "08:00").
		Trigger("a", TargetValue, math.NaN()).Trigger("b", TargetAverageValue, 10).Trigger("c", TargetAverageValue, 10).Obj()
	for _, cur := range []int32{0, 2} {
		d := Decide(DecideInput{Now: t0, Current: cur, Config: cfg,
			Triggers: []TriggerResult{val("a", 1), val("b", math.Inf(-1)), val("c", 0)}}, &History{})
		if _, err := json.Marshal(d); err != nil {
			t.Errorf("current %d: json.Marshal(Decision): %v", cur, err)
		}
	}
}

func TestRecordScale(t *testing.T) {
	bh := &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	tests := []struct {
		name string
		cfg  *Config
		d    Decision
		want History
	}{
		{name: "a scale up under a behavior is an event",
			cfg:  &Config{Behavior: bh},
			d:    Decision{Time: t0, Current: 2, Desired: 5, Action: ActionScaleUp},
			want: History{ScaleUpEvents: []ScaleEvent{{Change: 3, Time: t0}}, LastScaleTime: t0}},
		{name: "a scale down under a behavior is an event",
			cfg:  &Config{Behavior: bh},
			d:    Decision{Time: t0, Current: 5, Desired: 1, Action: ActionScaleDown},
			want: History{ScaleDownEvents: []ScaleEvent{{Change: 4, Time: t0}}, LastScaleTime: t0}},
		{name: "without a behavior no event is kept",
			cfg:  &Config{},
			d:    Decision{Time: t0, Current: 2, Desired: 5, Action: ActionScaleUp},
			want: History{LastScaleTime: t0}},
		{name: "waking up is not an HPA event",
			cfg:  &Config{Behavior: bh},
			d:    Decision{Time: t0, Current: 0, Desired: 2, Action: ActionWakeUp},
			want: History{LastScaleTime: t0}},
		{name: "scaling to zero is not an HPA event",
			cfg:  &Config{Behavior: bh},
			d:    Decision{Time: t0, Current: 3, Desired: 0, Action: ActionScaleToZero},
			want: History{LastScaleTime: t0}},
		{name: "no change records nothing",
			cfg: &Config{Behavior: bh},
			d:   Decision{Time: t0, Current: 3, Desired: 3, Action: ActionNone}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h History
			h.RecordScale(tc.cfg, tc.d)
			if diff := cmp.Diff(tc.want, h); diff != "" {
				t.Errorf("History (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryClone(t *testing.T) {
	h := &History{Recommendations: []Recommendation{{Replicas: 3, Time: t0}}, ScaleUpEvents: []ScaleEvent{{Change: 1, Time: t0}}}
	c := h.Clone()
	c.Recommendations[0].Replicas = 9
	c.ScaleUpEvents[0].Change = 9
	if diff := cmp.Diff(&History{Recommendations: []Recommendation{{Replicas: 3, Time: t0}}, ScaleUpEvents: []ScaleEvent{{Change: 1, Time: t0}}}, h); diff != "" {
		t.Errorf("original changed through the clone (-want +got):\n%s", diff)
	}
}

// BenchmarkDecide is one tick of one workload with two triggers, a
// behavior and a warm History.
func BenchmarkDecide(b *testing.B) {
	cfg := mkConfig(1, 50).Trigger("rps", TargetAverageValue, 20).Trigger("queue", TargetValue, 100).
		Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{}).Obj()
	h := &History{}
	results := []TriggerResult{val("rps", 230), val("queue", 180)}
	now := t0
	cur := int32(10)
	for range 40 { // warm the history: a full downscale window of ticks
		d := Decide(DecideInput{Now: now, Current: cur, Config: cfg, Triggers: results}, h)
		h.RecordScale(cfg, d)
		cur = d.Desired
		now = now.Add(15 * time.Second)
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(15 * time.Second)
		d := Decide(DecideInput{Now: now, Current: cur, Config: cfg, Triggers: results}, h)
		h.RecordScale(cfg, d)
		cur = d.Desired
	}
}

// BenchmarkDecideScaleToZero is one tick of a workload with scale to zero
// and a schedule in a time zone.
func BenchmarkDecideScaleToZero(b *testing.B) {
	cfg := mkConfig(0, 50).Idle(1, 300).Schedule("Europe/Paris", "08:00", "13:30").
		Trigger("rps", TargetAverageValue, 20).Trigger("queue", TargetValue, 100).Obj()
	h := &History{}
	results := []TriggerResult{val("rps", 230), val("queue", 180)}
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(15 * time.Second)
		Decide(DecideInput{Now: now, Current: 10, Config: cfg, Triggers: results}, h)
	}
}

// FuzzDecide checks the invariants every decision keeps, whatever the
// samples and history: the count stays within [0, max]; it is below the
// range's floor only when sleeping, staying asleep or waiting for
// dependencies; and the explanation encodes as JSON.
func FuzzDecide(f *testing.F) {
	f.Add(int32(1), int32(10), int32(3), 25.0, true, 7.0, true, int64(30), int64(600), true)
	f.Add(int32(0), int32(5), int32(0), 0.5, true, math.NaN(), false, int64(0), int64(-1), false)
	f.Add(int32(0), int32(5), int32(4), 0.0, true, 0.0, true, int64(3600), int64(10), true)
	f.Add(int32(2), int32(2), int32(9), math.Inf(1), true, -3.0, true, int64(15), int64(0), false)
	f.Fuzz(func(t *testing.T, minR, maxR, cur int32, v1 float64, ok1 bool, v2 float64, ok2 bool, step, activityAgo int64, behavior bool) {
		if minR < 0 || maxR < minR || maxR > 1000 || cur < 0 || cur > 2000 || step < 0 || step > 1e6 {
			t.Skip()
		}
		b := mkConfig(minR, maxR).Idle(2, 120).Schedule("Europe/Paris", "08:00").
			Trigger("a", TargetAverageValue, 10).Activation(1).Trigger("b", TargetValue, 5)
		if behavior {
			b.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rulesOf(1, 30, 50, 60, 60)})
		}
		cfg := b.Obj()
		h := &History{}
		now := t0
		for i := 0; i < 3; i++ {
			now = now.Add(time.Duration(step) * time.Second)
			in := DecideInput{Now: now, Current: cur, Config: cfg, Triggers: []TriggerResult{
				{Name: "a", Sample: Sample{Value: v1, OK: ok1}}, {Name: "b", Sample: Sample{Value: v2, OK: ok2}},
			}}
			if activityAgo >= 0 {
				in.LastActivity = now.Add(-time.Duration(activityAgo) * time.Second)
			}
			d := Decide(in, h)
			floor := max(minR, 1)
			asleep := d.Action == ActionScaleToZero || d.Action == ActionWait || (cur == 0 && d.Desired == 0)
			if d.Desired < 0 || d.Desired > maxR || (d.Desired < floor && !asleep && maxR > 0) {
				t.Fatalf("tick %d: desired %d outside [%d, %d] (current %d, action %s, reason %q)", i, d.Desired, floor, maxR, cur, d.Action, d.Reason)
			}
			if _, err := json.Marshal(d); err != nil {
				t.Fatalf("tick %d: json.Marshal: %v", i, err)
			}
			h.RecordScale(cfg, d)
			cur = d.Desired
		}
	})
}
