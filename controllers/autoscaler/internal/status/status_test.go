package status

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	"github.com/scaleplane/scaleplane/scaling"
)

// One Scaling per profiled workload, whatever sets its
// count; the mode and the Active condition (kubectl's REASON column) say
// who and why.
func TestScalingModeAndConditions(t *testing.T) {
	v := viewOf(t, "RackedCluster")
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	r := func(n int32) *int32 { return &n }
	type row struct {
		Mode                            v1alpha1.ScalingMode
		Ready, Active, Paused, Fallback string
	}
	cases := []struct {
		name  string
		w     scaling.Workload
		state State
		msg   string
		d     *scaling.Decision
		want  row
	}{
		{"no config", scaling.Workload{Replicas: r(3)}, StateNotManaged, "no scale config", nil,
			row{v1alpha1.ScalingModePinned, "True/Ready", "False/Pinned", "False/NotPaused", "False/NoTriggers"}},
		{"pinned", scaling.Workload{Replicas: r(3), Config: cfg(3, 3).obj()}, StateNotManaged, "", nil,
			row{v1alpha1.ScalingModePinned, "True/Ready", "False/Pinned", "False/NotPaused", "False/NoTriggers"}},
		{"the built-in HPA", scaling.Workload{Replicas: r(3), Config: cfg(1, 5).metric().obj()}, StateNotManaged, "", nil,
			row{v1alpha1.ScalingModeHPA, "True/Ready", "True/HPA", "False/NotPaused", "False/NoTriggers"}},
		{"a foreign autoscaler", scaling.Workload{Replicas: r(3), Config: cfg(1, 5).trigger("rps", 1).obj()}, StateForeign, "keda", nil,
			row{v1alpha1.ScalingModeExternal, "True/Ready", "False/ForeignAutoscaler", "False/NotPaused", "False/NoTriggers"}},
		{"a range nothing of ours acts in", scaling.Workload{Replicas: r(3), Config: cfg(1, 5).obj()}, StateNotManaged, "", nil,
			row{v1alpha1.ScalingModeExternal, "True/Ready", "False/NoMetricsOrTriggers", "False/NotPaused", "False/NoTriggers"}},
		{"the built-in HPA at 0 replicas cannot act", scaling.Workload{Replicas: r(0), Config: cfg(1, 5).metric().obj()}, StateNotManaged, "", nil,
			row{v1alpha1.ScalingModeHPA, "True/Ready", "False/HPAScalingDisabled", "False/NotPaused", "False/NoTriggers"}},
		{"paused", scaling.Workload{Replicas: r(3), Config: cfg(1, 5).trigger("rps", 1).obj()}, StatePaused, "paused", nil,
			row{v1alpha1.ScalingModePaused, "True/Ready", "False/Paused", "True/Paused", "False/NoTriggers"}},
		{"held", scaling.Workload{Replicas: r(3), Config: cfg(1, 5).trigger("rps", 1).obj()}, StateHeld, "held", nil,
			row{v1alpha1.ScalingModePaused, "True/Ready", "False/PausedReplicas", "True/PausedReplicas", "False/NoTriggers"}},
		{"triggers, awake", scaling.Workload{Replicas: r(3), Config: cfg(1, 5).trigger("rps", 1).obj()}, StateAutoscaling, "",
			&scaling.Decision{Current: 3, Desired: 3, Min: 1, Max: 5, Triggers: []scaling.TriggerDecision{{Name: "rps", Valid: true, Value: 3, Threshold: 1}}},
			row{v1alpha1.ScalingModeTriggers, "True/Ready", "True/Autoscaling", "False/NotPaused", "False/TriggersHealthy"}},
		{"triggers, held by the scale-down window", scaling.Workload{Replicas: r(6), Config: cfg(1, 10).trigger("q", 2).obj()}, StateAutoscaling, "",
			&scaling.Decision{Current: 6, Desired: 6, Min: 1, Max: 10, Recommended: 4, Stabilized: 6, Stabilization: scaling.StabilizedScaleDown,
				StabilizationWindowSeconds: 300, StabilizedUntil: now.Add(4 * time.Minute),
				Triggers: []scaling.TriggerDecision{{Name: "q", Valid: true, Value: 7, Threshold: 2, Desired: 4}}},
			row{v1alpha1.ScalingModeTriggers, "True/Ready", "True/ScaleDownStabilized", "False/NotPaused", "False/TriggersHealthy"}},
		{"triggers, kept by a scale-up policy", scaling.Workload{Replicas: r(2), Config: cfg(1, 10).trigger("q", 20).obj()}, StateAutoscaling, "",
			&scaling.Decision{Current: 2, Desired: 2, Min: 1, Max: 10, Recommended: 5, Stabilized: 5, Limit: scaling.LimitScaleUp, LimitPolicy: "the scale-up selectPolicy Disabled",
				Triggers: []scaling.TriggerDecision{{Name: "q", Valid: true, Value: 100, Threshold: 20, Desired: 5}}},
			row{v1alpha1.ScalingModeTriggers, "True/Ready", "True/ScaleUpLimit", "False/NotPaused", "False/TriggersHealthy"}},
		{"triggers, failing", scaling.Workload{Replicas: r(3), Config: cfg(1, 5).trigger("rps", 1).obj()}, StateAutoscaling, "",
			&scaling.Decision{Current: 3, Desired: 3, Min: 1, Max: 5, Triggers: []scaling.TriggerDecision{{Name: "rps", Problem: "no data"}}},
			row{v1alpha1.ScalingModeTriggers, "True/Ready", "True/Autoscaling", "False/NotPaused", "True/TriggersFailing"}},
		{"triggers, one in fallback", scaling.Workload{Replicas: r(3), Config: cfg(1, 5).trigger("rps", 1).obj()}, StateAutoscaling, "",
			&scaling.Decision{Current: 3, Desired: 4, Min: 1, Max: 5,
				Triggers: []scaling.TriggerDecision{{Name: "rps", Problem: "connection refused", Failures: 3, Fallback: true, Desired: 4}},
				Fallback: &scaling.FallbackState{Triggers: []string{"rps"}, FailureThreshold: 2, Behavior: scaling.FallbackStatic, Replicas: 4}},
			row{v1alpha1.ScalingModeTriggers, "True/Ready", "True/Autoscaling", "False/NotPaused", "True/FallbackActive"}},
		{"triggers, asleep", scaling.Workload{Replicas: r(0), Config: cfg(0, 5).trigger("rps", 1).idle(1, 60).obj()}, StateAutoscaling, "",
			&scaling.Decision{Current: 0, Desired: 0, Min: 0, Max: 5},
			row{v1alpha1.ScalingModeTriggers, "True/Ready", "False/ScaledToZero", "False/NotPaused", "False/TriggersHealthy"}},
		{"unreadable", scaling.Workload{}, StateUnreadable, "spec.replicas: bad", nil,
			row{"", "False/Unreadable", "Unknown/Unreadable", "False/NotPaused", "False/NoTriggers"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Build(Input{Kind: "RackedCluster", Name: "db", Workload: tc.w, Layout: v.Layout(),
				State: tc.state, Message: tc.msg, Decision: tc.d, History: &scaling.History{}, Now: now})
			c := func(typ string) string {
				for _, x := range st.Conditions {
					if x.Type == typ {
						return string(x.Status) + "/" + x.Reason
					}
				}
				return "missing"
			}
			got := row{st.Mode, c(v1alpha1.ScalingReady), c(v1alpha1.ScalingActive), c(v1alpha1.ScalingPaused), c(v1alpha1.ScalingFallback)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mode and conditions (-want +got):\n%s", diff)
			}
			if st.Target != "RackedCluster/db" {
				t.Errorf("target %q", st.Target)
			}
			for _, ts := range st.Triggers {
				if want := map[bool]string{true: "Happy", false: "Failing"}[ts.Problem == ""]; ts.Health != want {
					t.Errorf("trigger %s with problem %q has health %q, want %s", ts.Name, ts.Problem, ts.Health, want)
				}
			}
		})
	}
}

// A condition that holds keeps its transition time; the fingerprints
// separate the values that change every tick from those an operator acts on.
func TestScalingFingerprints(t *testing.T) {
	v := viewOf(t, "RackedCluster")
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	w := scaling.Workload{Replicas: ptr(int32(3)), Config: cfg(1, 5).trigger("rps", 1).obj()}
	build := func(now time.Time, value float64, recs []scaling.Recommendation, prev *v1alpha1.ScalingStatus) v1alpha1.ScalingStatus {
		return Build(Input{Kind: "RackedCluster", Name: "db", Workload: w, Layout: v.Layout(), State: StateAutoscaling,
			Decision: &scaling.Decision{Current: 3, Desired: 3, Min: 1, Max: 5, Triggers: []scaling.TriggerDecision{{Name: "rps", Valid: true, Value: value, Threshold: 1}}},
			History:  &scaling.History{Recommendations: recs}, Previous: prev, Now: now})
	}
	a := build(t0, 3.1, []scaling.Recommendation{{Replicas: 3, Time: t0}}, nil)
	b := build(t0.Add(15*time.Second), 2.9, []scaling.Recommendation{{Replicas: 3, Time: t0}, {Replicas: 3, Time: t0.Add(15 * time.Second)}}, &a)
	c := build(t0.Add(30*time.Second), 2.9, []scaling.Recommendation{{Replicas: 3, Time: t0}, {Replicas: 4, Time: t0.Add(30 * time.Second)}}, &b)
	sa, fa := scalings.Fingerprints(a)
	sb, fb := scalings.Fingerprints(b)
	sc, _ := scalings.Fingerprints(c)
	if sa != sb {
		t.Errorf("a new trigger value and a longer run of one recommendation changed the significant fingerprint")
	}
	if fa == fb {
		t.Errorf("the full fingerprint missed a new trigger value")
	}
	if sb == sc {
		t.Errorf("a new recommended count did not change the significant fingerprint")
	}
	// A failing trigger's count of failures grows on every tick without
	// changing what happens: soft, until it enters fallback.
	failing := func(n int32, fallback bool) string {
		st := a.DeepCopy()
		st.Triggers[0].Value, st.Triggers[0].Health, st.Triggers[0].Failures, st.Triggers[0].Fallback = "", "Failing", n, fallback
		sig, _ := scalings.Fingerprints(*st)
		return sig
	}
	if failing(1, false) != failing(2, false) {
		t.Errorf("one more failure changed the significant fingerprint")
	}
	if failing(2, false) == failing(3, true) {
		t.Errorf("entering fallback did not change the significant fingerprint")
	}
	if !a.Conditions[0].LastTransitionTime.Equal(&b.Conditions[0].LastTransitionTime) {
		t.Errorf("Ready's transition time moved without a transition")
	}
}

// roundTrip is a History written to a Scaling's status, read back by the
// API server's JSON (times to the microsecond), and restored at now.
func roundTrip(t *testing.T, h *scaling.History, now time.Time) *scaling.History {
	return roundTripActive(t, h, false, now)
}

func roundTripActive(t *testing.T, h *scaling.History, triggersActive bool, now time.Time) *scaling.History {
	t.Helper()
	raw, err := json.Marshal(HistoryToStatus(h))
	if err != nil {
		t.Fatal(err)
	}
	var back v1alpha1.ScalingHistory
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	return HistoryFromStatus(&back, triggersActive, now)
}

// scaling.History <-> status. Runs of equal
// recommendations keep their newest entry (what a window's min or max
// needs), events and timers survive to the microsecond, and the newest
// recommendation (and LastActive of a workload active at the last write)
// is taken to hold until the restore.
func TestHistoryRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	h := &scaling.History{
		// Out of time order, as storeRecommendation reuses slots.
		Recommendations: []scaling.Recommendation{{Replicas: 6, Time: at(30)}, {Replicas: 6, Time: at(0)}, {Replicas: 6, Time: at(15)}, {Replicas: 2, Time: at(45)}, {Replicas: 2, Time: at(60)}},
		ScaleUpEvents:   []scaling.ScaleEvent{{Change: 4, Time: at(10), Outdated: true}},
		ScaleDownEvents: []scaling.ScaleEvent{{Change: 1, Time: at(50)}},
		LastActive:      at(20),
		AwakeSince:      at(1).Add(1500 * time.Nanosecond),
		LastScaleTime:   at(50),
		// A trigger in fallback stays in it through a leader change.
		Failures: map[string]int32{"rps": 4},
	}
	got := roundTrip(t, h, at(75))
	want := &scaling.History{
		Recommendations: []scaling.Recommendation{{Replicas: 6, Time: at(30)}, {Replicas: 2, Time: at(60)}, {Replicas: 2, Time: at(75)}},
		ScaleUpEvents:   h.ScaleUpEvents,
		ScaleDownEvents: h.ScaleDownEvents,
		LastActive:      at(20),
		AwakeSince:      at(1).Add(time.Microsecond),
		LastScaleTime:   at(50),
		Failures:        map[string]int32{"rps": 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored History (-want +got):\n%s", diff)
	}

	h.LastActive = at(60)
	if got := roundTripActive(t, h, true, at(75)).LastActive; !got.Equal(at(75)) {
		t.Errorf("LastActive of a workload whose triggers were active at the last write = %v, want the restore time %v", got, at(75))
	}
	if got := roundTrip(t, h, at(75)).LastActive; !got.Equal(at(60)) {
		t.Errorf("LastActive from an activity signal = %v, want it as written, %v", got, at(60))
	}
	if got := roundTrip(t, &scaling.History{}, at(75)); len(got.Recommendations) != 0 || !got.LastActive.IsZero() {
		t.Errorf("an empty History restored as %+v", got)
	}
}

// A leader change in the middle of a scale-down
// stabilization window, of an idle timeout, and of a behavior's policy
// period gives the decisions an uninterrupted leader makes: the new leader
// neither shrinks early nor forgets.
func TestRestoredHistoryDecidesAsUninterrupted(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	const tick = 15 * time.Second
	behavior := cfg(1, 10).trigger("rps", 10).obj()
	pct := int32(50)
	period := int32(60)
	behavior.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr(int32(0)),
		Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: pct, PeriodSeconds: period}},
	}}
	cases := []struct {
		name   string
		config *scaling.Config
		start  int32
		// load is the trigger's value at tick i (rps in total).
		load func(i int) float64
		// activity is the activity signal at tick i, zero for none.
		activity func(i int) time.Time
		// restoreAt is the tick after which a new leader takes over.
		restoreAt []int
	}{
		{"scale-down stabilization", cfg(1, 10).trigger("rps", 10).obj(), 1,
			func(i int) float64 { return map[bool]float64{true: 60, false: 15}[i < 6] }, nil, []int{6, 8, 12, 19, 24}},
		{"idle timeout", cfg(0, 10).trigger("rps", 10).idle(1, 90).obj(), 0,
			func(i int) float64 { return 0 },
			func(i int) time.Time {
				if i == 1 || i == 4 {
					return t0.Add(time.Duration(i) * tick)
				}
				return time.Time{}
			}, []int{2, 5, 7, 9, 10}},
		{"policy periods", behavior, 10,
			func(i int) float64 { return map[bool]float64{true: 100, false: 10}[i < 2] }, nil, []int{3, 4, 6, 9}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(restoreAt int) []string {
				h := &scaling.History{}
				cur := tc.start
				var lastActivity time.Time
				var out []string
				for i := 0; i < 40; i++ {
					now := t0.Add(time.Duration(i) * tick)
					if i == restoreAt+1 {
						h = roundTrip(t, h, now)
					}
					if tc.activity != nil {
						if a := tc.activity(i); !a.IsZero() {
							lastActivity = a
						}
					}
					value := tc.load(i)
					d := scaling.Decide(scaling.DecideInput{Now: now, Current: cur, Config: tc.config, LastActivity: lastActivity,
						Triggers: []scaling.TriggerResult{{Name: "rps", Sample: scaling.Sample{Value: value, OK: true}}}}, h)
					out = append(out, fmt.Sprintf("%d: %d -> %d %s", i, cur, d.Desired, d.Action))
					h.RecordScale(tc.config, d)
					cur = d.Desired
				}
				return out
			}
			want := run(-10)
			for _, r := range tc.restoreAt {
				if diff := cmp.Diff(want, run(r)); diff != "" {
					t.Errorf("leader change after tick %d (-uninterrupted +restored):\n%s", r, diff)
				}
			}
			if fmt.Sprint(want) == fmt.Sprint(run(1000)) && len(want) == 0 {
				t.Fatal("no decisions")
			}
		})
	}
}

// In hpa mode the Scaling shows the built-in HPA's desired count, and its
// ScalingActive when the HPA says it cannot act.
func TestScalingShowsTheHPA(t *testing.T) {
	v := viewOf(t, "RackedCluster")
	w := scaling.Workload{Replicas: ptr(int32(3)), Config: cfg(1, 5).metric().obj()}
	hpa := &autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: 5, Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
		{Type: autoscalingv2.ScalingActive, Status: "False", Reason: "FailedGetResourceMetric", Message: "no metrics for pods"},
	}}
	st := Build(Input{Kind: "RackedCluster", Name: "db", Workload: w, Layout: v.Layout(), State: StateNotManaged,
		HPA: hpa, Now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)})
	type got struct {
		Mode            v1alpha1.ScalingMode
		Desired         int32
		Active, Message string
	}
	g := got{Mode: st.Mode, Desired: *st.DesiredReplicas}
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ScalingActive {
			g.Active, g.Message = string(c.Status)+"/"+c.Reason, c.Message
		}
	}
	if diff := cmp.Diff(got{v1alpha1.ScalingModeHPA, 5, "False/HPAFailedGetResourceMetric", "no metrics for pods"}, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The Fallback condition's reason is what decided the count: a trigger in
// fallback set it even while another trigger was throttled; a throttled
// trigger that kept the count says so over a failing one.
func TestFallbackConditionNamesWhatDecided(t *testing.T) {
	v := viewOf(t, "RackedCluster")
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	w := scaling.Workload{Replicas: ptr(int32(3)), Config: cfg(1, 5).trigger("rps", 1).trigger("queue", 1).obj()}
	reason := func(d scaling.Decision, throttled string) string {
		st := Build(Input{Kind: "RackedCluster", Name: "db", Workload: w, Layout: v.Layout(),
			State: StateAutoscaling, Decision: &d, Throttled: throttled, History: &scaling.History{}, Now: now})
		return meta.FindStatusCondition(st.Conditions, v1alpha1.ScalingFallback).Reason
	}
	inFallback := scaling.Decision{Current: 3, Desired: 4, Min: 1, Max: 5,
		Triggers: []scaling.TriggerDecision{{Name: "rps", Problem: "connection refused", Failures: 3, Fallback: true, Desired: 4}, {Name: "queue", Problem: "throttled"}},
		Fallback: &scaling.FallbackState{Triggers: []string{"rps"}, FailureThreshold: 2, Behavior: scaling.FallbackStatic, Replicas: 4}}
	if got := reason(inFallback, "throttled triggers keep the count: queue: over its share"); got != v1alpha1.ReasonFallbackActive {
		t.Errorf("fallback and a throttled trigger: reason %s, want %s", got, v1alpha1.ReasonFallbackActive)
	}
	kept := scaling.Decision{Current: 3, Desired: 3, Min: 1, Max: 5, Triggers: []scaling.TriggerDecision{{Name: "queue", Problem: "throttled"}}}
	if got := reason(kept, "throttled triggers keep the count: queue: over its share"); got != v1alpha1.ReasonTriggerThrottled {
		t.Errorf("a throttled trigger: reason %s, want %s", got, v1alpha1.ReasonTriggerThrottled)
	}
}
