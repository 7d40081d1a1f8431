package autoscaler

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

func cpuMetric() autoscalingv2.MetricSpec {
	q := resource.MustParse("100m")
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}
}

func TestManages(t *testing.T) {
	rcLayout := viewOf(t, "RackedCluster").Layout()
	type want struct {
		Ours   bool
		Reason string
	}
	cases := []struct {
		name           string
		w              scaling.Workload
		defaultMetrics []autoscalingv2.MetricSpec
		want           want
	}{
		{"no config", scaling.Workload{Replicas: ptr(int32(2))}, nil, want{false, "no scale config"}},
		{"range without triggers or idle", scaling.Workload{Replicas: ptr(int32(2)), Config: cfg(1, 5).obj()}, nil,
			want{false, "scale config has neither triggers nor idle settings"}},
		{"triggers", scaling.Workload{Replicas: ptr(int32(2)), Config: cfg(1, 5).trigger("rps", 20).obj()}, nil, want{true, ""}},
		{"idle only, range from 0", scaling.Workload{Replicas: ptr(int32(2)), Config: cfg(0, 5).idle(1, 60).obj()}, nil, want{true, ""}},
		{"metrics are the built-in HPA's", scaling.Workload{Replicas: ptr(int32(2)), Config: cfg(1, 5).idle(1, 60).metric().obj()}, nil,
			want{false, "scale config has metrics: the built-in HPA scales this workload"}},
		{"idle with the profile's default metrics gets an HPA", scaling.Workload{Replicas: ptr(int32(2)), Config: cfg(0, 5).idle(1, 60).obj()},
			[]autoscalingv2.MetricSpec{cpuMetric()},
			want{false, "the built-in HPA scales this workload (the profile's default metrics apply)"}},
		{"triggers win over default metrics", scaling.Workload{Replicas: ptr(int32(2)), Config: cfg(0, 5).trigger("rps", 20).obj()},
			[]autoscalingv2.MetricSpec{cpuMetric()}, want{true, ""}},
		{"pinned", scaling.Workload{Replicas: ptr(int32(3)), Config: cfg(3, 3).trigger("rps", 20).obj()}, nil,
			want{false, "scale config is pinned at 3: no autoscaling range"}},
		{"no replicas", scaling.Workload{Config: cfg(1, 5).trigger("rps", 20).obj()}, nil,
			want{false, "spec.replicas is not set: nothing to scale through /scale"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ours, reason := manages(tc.w, rcLayout, tc.defaultMetrics)
			if diff := cmp.Diff(tc.want, want{ours, reason}); diff != "" {
				t.Errorf("manages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadPause(t *testing.T) {
	cases := []struct {
		name string
		ann  map[string]string
		want pause
	}{
		{"none", nil, pause{}},
		{"paused", map[string]string{v1alpha1.AnnotationPaused: "true"}, pause{Paused: true}},
		{"paused, any case", map[string]string{v1alpha1.AnnotationPaused: " True "}, pause{Paused: true}},
		{"explicitly not paused", map[string]string{v1alpha1.AnnotationPaused: "false"}, pause{}},
		{"hold", map[string]string{v1alpha1.AnnotationPausedReplicas: "4"}, pause{Paused: true, Hold: ptr(int32(4))}},
		{"hold at zero", map[string]string{v1alpha1.AnnotationPausedReplicas: "0"}, pause{Paused: true, Hold: ptr(int32(0))}},
		{"hold wins over paused false", map[string]string{v1alpha1.AnnotationPausedReplicas: "2", v1alpha1.AnnotationPaused: "false"},
			pause{Paused: true, Hold: ptr(int32(2))}},
		{"bad hold is hands off, with what to fix", map[string]string{v1alpha1.AnnotationPausedReplicas: "two"}, pause{Paused: true,
			Problem: `annotation scaleplane.io/paused-replicas is "two": set a whole number >= 0, or remove it to resume autoscaling`}},
		{"negative hold", map[string]string{v1alpha1.AnnotationPausedReplicas: "-1"}, pause{Paused: true,
			Problem: `annotation scaleplane.io/paused-replicas is "-1": set a whole number >= 0, or remove it to resume autoscaling`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, readPause(tc.ann)); diff != "" {
				t.Errorf("readPause (-want +got):\n%s", diff)
			}
			// Read from an object with other annotations as well.
			ann := map[string]string{"example.com/other": "x"}
			maps.Copy(ann, tc.ann)
			if diff := cmp.Diff(tc.want, readPause(pauseAnnotations(rackedCluster("shop", "cart", 1, ann)))); diff != "" {
				t.Errorf("readPause of the object (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPollingInterval(t *testing.T) {
	cases := []struct {
		name string
		c    *scaling.Config
		want time.Duration
	}{
		{"no config", nil, 15 * time.Second},
		{"unset", cfg(1, 2).obj(), 15 * time.Second},
		{"own", &scaling.Config{PollingIntervalSeconds: ptr(int32(2))}, 2 * time.Second},
		{"zero reads as unset", &scaling.Config{PollingIntervalSeconds: ptr(int32(0))}, 15 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, pollingInterval(tc.c, 15*time.Second)); diff != "" {
				t.Errorf("pollingInterval (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanTick(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	type plan struct {
		Run   bool
		After time.Duration
	}
	cases := []struct {
		name   string
		now    time.Time
		last   time.Time
		urgent bool
		want   plan
	}{
		{"first tick", t0, time.Time{}, false, plan{true, 15 * time.Second}},
		{"due", t0.Add(15 * time.Second), t0, false, plan{true, 15 * time.Second}},
		{"overdue", t0.Add(time.Minute), t0, false, plan{true, 15 * time.Second}},
		{"a watch event between ticks waits for the rest of the interval", t0.Add(4 * time.Second), t0, false, plan{false, 11 * time.Second}},
		{"urgent: config, activity or pause changed", t0.Add(4 * time.Second), t0, true, plan{true, 15 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run, after := planTick(tc.now, tc.last, 15*time.Second, tc.urgent)
			if diff := cmp.Diff(tc.want, plan{run, after}); diff != "" {
				t.Errorf("planTick (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventNote(t *testing.T) {
	cases := []struct {
		reason, want string
	}{
		{"Scale up from 2 to 6: rps=103 over 2 replicas is 51.5 per replica, above the target 20: asks for ceil(103 / 20) = 6", "Scaled up from 2 to 6: rps=103 over 2 replicas is 51.5 per replica, above the target 20: asks for ceil(103 / 20) = 6"},
		{"Scale down from 6 to 2: rps=30 over 6 replicas is 5 per replica, below the target 20: asks for ceil(30 / 20) = 2", "Scaled down from 6 to 2: rps=30 over 6 replicas is 5 per replica, below the target 20: asks for ceil(30 / 20) = 2"},
		{"Scale to zero from 2: no activity for 5m1s (timeout 5m0s) and every trigger asks for 0", "Scaled to zero from 2: no activity for 5m1s (timeout 5m0s) and every trigger asks for 0"},
		{"Wake up from 0 to 2: activity at 2026-06-01T12:00:00Z", "Woke up from 0 to 2: activity at 2026-06-01T12:00:00Z"},
		{"Scale up from 0 to 1: below minReplicas", "Scaled up from 0 to 1: below minReplicas"},
		{"Keep 3: within tolerance", "Keep 3: within tolerance"},
		{"Scale up " + strings.Repeat("x", 2000), "Scaled up " + strings.Repeat("x", 1024-len("Scaled up ")-3) + "..."},
	}
	for _, tc := range cases {
		t.Run(tc.reason[:min(len(tc.reason), 30)], func(t *testing.T) {
			if diff := cmp.Diff(tc.want, eventNote(scaling.Decision{Reason: tc.reason})); diff != "" {
				t.Errorf("eventNote (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventNoteOfRealDecision(t *testing.T) {
	// The text an operator sees, from a decision Decide really makes.
	c := cfg(1, 10).trigger("rps", 20).obj()
	c.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	d := scaling.Decide(scaling.DecideInput{
		Now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), Current: 2, Config: c,
		Triggers: []scaling.TriggerResult{{Name: "rps", Sample: scaling.Sample{Value: 103, OK: true}}},
	}, &scaling.History{})
	if diff := cmp.Diff("Scaled up from 2 to 6: rps=103 over 2 replicas is 51.5 per replica, above the target 20: asks for ceil(103 / 20) = 6", eventNote(d)); diff != "" {
		t.Errorf("event note (-want +got):\n%s", diff)
	}
}

func TestTriggerProblems(t *testing.T) {
	invalid := func(name, problem string) scaling.TriggerDecision {
		return scaling.TriggerDecision{Name: name, Problem: problem}
	}
	valid := scaling.TriggerDecision{Name: "ok", Valid: true, Value: 3}
	cases := []struct {
		name string
		d    scaling.Decision
		want string
	}{
		{"all valid", scaling.Decision{Current: 2, Triggers: []scaling.TriggerDecision{valid}}, ""},
		{"no data above zero", scaling.Decision{Current: 2, Triggers: []scaling.TriggerDecision{valid, invalid("rps", "no data")}},
			"invalid triggers keep the count: rps: no data"},
		{"no data at zero is normal: nothing to scrape", scaling.Decision{Current: 0, Triggers: []scaling.TriggerDecision{invalid("rps", "no data")}}, ""},
		{"errors at zero are reported", scaling.Decision{Current: 0, Triggers: []scaling.TriggerDecision{invalid("rps", `invalid query: parse error`)}},
			"invalid triggers keep the count: rps: invalid query: parse error"},
		{"sorted", scaling.Decision{Current: 1, Triggers: []scaling.TriggerDecision{invalid("z", "value is NaN"), invalid("a", "no data")}},
			"invalid triggers keep the count: a: no data; z: value is NaN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, triggerProblems(tc.d)); diff != "" {
				t.Errorf("triggerProblems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWarningsOncePerStateChange(t *testing.T) {
	// One workload's Warnings over ticks: a problem is reported when it
	// appears or changes, not while it persists, and again after it went
	// away and came back.
	steps := []struct {
		reason, note string
		emit         bool
	}{
		{v1alpha1.ReasonInvalidTrigger, "rps: no data", true},
		{v1alpha1.ReasonInvalidTrigger, "rps: no data", false},
		{v1alpha1.ReasonInvalidTrigger, "rps: no data", false},
		{v1alpha1.ReasonForeignAutoscaler, "HorizontalPodAutoscaler/ns/x", true},
		{v1alpha1.ReasonInvalidTrigger, "rps: value is NaN", true},
		{v1alpha1.ReasonInvalidTrigger, "", false},
		{v1alpha1.ReasonInvalidTrigger, "rps: value is NaN", true},
		{v1alpha1.ReasonForeignAutoscaler, "HorizontalPodAutoscaler/ns/x", false},
	}
	w := warnings{}
	var got, want []bool
	for _, s := range steps {
		got = append(got, w.next(s.reason, s.note))
		want = append(want, s.emit)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("emitted per step (-want +got):\n%s", diff)
	}
}

func TestScalersKeyMatchesOnlyTheSameTriggers(t *testing.T) {
	withMeta := func(c *scaling.Config, k, v string) *scaling.Config {
		c.Triggers[0].Metadata = map[string]string{k: v}
		return c
	}
	built := withMeta(cfg(1, 5).trigger("rps", 20).obj(), "window", "1m")
	key := newScalersKey(built.Triggers, "promql")
	// The key is a copy: changing the config it came from in place must
	// not change what it matches.
	built.Triggers[0].Metadata["window"] = "5m"
	built.Triggers[0].Threshold = 99
	cases := []struct {
		name          string
		triggers      []scaling.Trigger
		defaultSource string
		want          bool
	}{
		{"same triggers", withMeta(cfg(1, 5).trigger("rps", 20).obj(), "window", "1m").Triggers, "promql", true},
		{"new threshold", withMeta(cfg(1, 5).trigger("rps", 30).obj(), "window", "1m").Triggers, "promql", false},
		{"new metadata", withMeta(cfg(1, 5).trigger("rps", 20).obj(), "window", "5m").Triggers, "promql", false},
		{"new default source", withMeta(cfg(1, 5).trigger("rps", 20).obj(), "window", "1m").Triggers, "prometheus", false},
		{"one more trigger", withMeta(cfg(1, 5).trigger("rps", 20).trigger("q", 1).obj(), "window", "1m").Triggers, "promql", false},
		{"the config changed in place", built.Triggers, "promql", false},
	}
	for _, tc := range cases {
		if got := key.matches(tc.triggers, tc.defaultSource); got != tc.want {
			t.Errorf("%s: matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	var none *scalersKey
	if none.matches(nil, "promql") {
		t.Error("nothing built must match nothing")
	}
	if configFingerprint(built) != configFingerprint(withMeta(cfg(1, 5).trigger("rps", 99).obj(), "window", "5m")) {
		t.Error("equal configs must have equal fingerprints")
	}
}
