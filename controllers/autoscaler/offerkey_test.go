package autoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// offerRun is one workload whose Scaling is offered by offerScaling to a
// writer that records what it writes, at a clock the test moves.
type offerRun struct {
	k      *kindLoop
	st     *workload
	u      *unstructured.Unstructured
	e      *env
	at     *time.Time
	writes []string
	builds int
}

func newOfferRun(t *testing.T, always bool, at *time.Time, refresh time.Duration) *offerRun {
	t.Helper()
	a, err := New(Options{Views: []*profile.Compiled{viewOf(t, "RackedCluster")}, Sources: testSources(t, nil), Now: func() time.Time { return *at }})
	if err != nil {
		t.Fatal(err)
	}
	a.alwaysOffer = always
	r := &offerRun{k: a.kindList()[0], u: benchRackedCluster("shop", "db", 3), at: at}
	record := func(kind string, obj runtime.ApplyConfiguration) error {
		b, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		r.writes = append(r.writes, fmt.Sprintf("%s %s %s", r.at.Format(time.TimeOnly), kind, b))
		return nil
	}
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Apply: func(_ context.Context, _ client.WithWatch, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
			return record("object", obj)
		},
		SubResourceApply: func(_ context.Context, _ client.Client, _ string, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
			return record("status", obj)
		},
	})
	w := scalings.NewWriter(c, ScalingWrites{RefreshInterval: refresh}, func() time.Time { return *at })
	w.MarkServed()
	r.e = &env{scalings: w}
	r.st = r.k.get(types.NamespacedName{Namespace: "shop", Name: "db"})
	r.st.restored = true
	return r
}

// offer runs offerScaling and counts the statuses it built.
func (r *offerRun) offer() {
	prev := r.st.scalingPrev
	r.k.offerScaling(r.e, r.u, r.st)
	if r.st.scalingPrev != prev {
		r.builds++
	}
}

// flush lets the writer write what is due at the clock's time.
func (r *offerRun) flush() { r.e.scalings.Flush(context.Background(), *r.at) }

// A reconcile that skips building the Scaling status (its inputs but the
// soft values are the last offer's, and the writer would not write it
// before the next tick) leaves what is written exactly as when every
// reconcile builds and offers it: ticks change each input of the status
// in turn, between runs of ticks that change soft values only, and the
// writer flushes at every tick and between two. With a refresh interval
// that is no multiple of the ticks' the refreshes fall between two ticks;
// with one longer than the run every change meets a writer that would
// not write a change of soft values, so that one the key missed would not
// be written.
func TestScalingOfferShortcutWritesWhatEveryOfferWould(t *testing.T) {
	for _, refresh := range []time.Duration{50 * time.Second, time.Hour} {
		t.Run(refresh.String(), func(t *testing.T) { testScalingOfferShortcut(t, refresh) })
	}
}

func testScalingOfferShortcut(t *testing.T, refresh time.Duration) {
	const interval = 15 * time.Second
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	short, always := newOfferRun(t, false, &at, refresh), newOfferRun(t, true, &at, refresh)
	runs := []*offerRun{short, always}

	rv := 4711
	newVersion := func(r *offerRun, change func(u *unstructured.Unstructured)) {
		change(r.u)
		r.u.SetResourceVersion(strconv.Itoa(rv))
	}
	decision := func(st *workload) *scaling.Decision { return &st.lastRec.Decision }
	// Each change is applied to both runs' workload before a tick.
	changes := []struct {
		name   string
		change func(r *offerRun)
	}{
		{"nothing", func(*offerRun) {}},
		{"message", func(r *offerRun) { r.st.message = "a new message" }},
		{"generation", func(r *offerRun) { newVersion(r, func(u *unstructured.Unstructured) { u.SetGeneration(4) }) }},
		{"replicas", func(r *offerRun) {
			newVersion(r, func(u *unstructured.Unstructured) {
				racks, _, _ := unstructured.NestedSlice(u.Object, "spec", "racks")
				for _, rk := range racks {
					rk.(map[string]any)["members"] = int64(4)
				}
				_ = unstructured.SetNestedSlice(u.Object, racks, "spec", "racks")
			})
		}},
		{"desired", func(r *offerRun) { decision(r.st).Desired = 5 }},
		{"current", func(r *offerRun) { decision(r.st).Current = 4 }},
		{"action", func(r *offerRun) { decision(r.st).Action = scaling.ActionWait }},
		{"reason", func(r *offerRun) { decision(r.st).Reason = "waiting for db-deps" }},
		{"action back", func(r *offerRun) { decision(r.st).Action = scaling.ActionNone }},
		{"range", func(r *offerRun) { decision(r.st).Max = 30 }},
		{"write error", func(r *offerRun) { r.st.lastRec.Error = "the /scale write was refused" }},
		{"write error gone", func(r *offerRun) { r.st.lastRec.Error = "" }},
		{"throttled", func(r *offerRun) { r.st.throttled = "rps: over the namespace's share" }},
		{"throttled gone", func(r *offerRun) { r.st.throttled = "" }},
		{"trigger problem", func(r *offerRun) {
			d := decision(r.st)
			d.Triggers = append([]scaling.TriggerDecision(nil), d.Triggers...)
			d.Triggers[1].Valid, d.Triggers[1].Problem, d.Triggers[1].Failures = false, "no data", 1
		}},
		{"trigger problem changed", func(r *offerRun) { decision(r.st).Triggers[1].Problem = "query failed" }},
		{"trigger failing again", func(r *offerRun) { decision(r.st).Triggers[1].Failures = 2 }},
		{"fallback", func(r *offerRun) {
			d := decision(r.st)
			d.Triggers[1].Fallback, d.Triggers[1].Failures = true, 3
			d.Fallback = &scaling.FallbackState{Triggers: []string{"queue"}, FailureThreshold: 2, Behavior: "static", Replicas: 6}
		}},
		{"fallback failing again", func(r *offerRun) { decision(r.st).Triggers[1].Failures = 4 }},
		{"healthy", func(r *offerRun) {
			d := decision(r.st)
			d.Triggers[1] = scaling.TriggerDecision{Name: "queue", Type: scaling.TargetAverageValue, Threshold: 1, Valid: true, Desired: 3}
			d.Fallback = nil
		}},
		{"trigger active", func(r *offerRun) { decision(r.st).Triggers[0].Active = true }},
		{"stabilization", func(r *offerRun) {
			d := decision(r.st)
			d.Recommended, d.Stabilized, d.Stabilization, d.StabilizationWindowSeconds = 2, 5, scaling.StabilizedScaleDown, 300
			d.StabilizedUntil = at.Add(5 * time.Minute)
		}},
		{"stabilization window", func(r *offerRun) { decision(r.st).StabilizationWindowSeconds = 600 }},
		{"stabilized until", func(r *offerRun) { decision(r.st).StabilizedUntil = at.Add(6 * time.Minute) }},
		{"limit", func(r *offerRun) {
			d := decision(r.st)
			d.Stabilization, d.Recommended, d.Stabilized = "", 9, 9
			d.Limit, d.LimitPolicy = scaling.LimitScaleUp, "the scale-up policy 2 Pods per 60 s"
		}},
		{"limit policy", func(r *offerRun) { decision(r.st).LimitPolicy = "the scale-up policy 4 Pods per 60 s" }},
		{"history: another count", func(r *offerRun) {
			r.st.history.Recommendations = append(r.st.history.Recommendations, scaling.Recommendation{Replicas: 7, Time: at})
		}},
		{"history: scaled", func(r *offerRun) { r.st.history.LastScaleTime = at }},
		{"history: scale event", func(r *offerRun) {
			r.st.history.ScaleUpEvents = append(r.st.history.ScaleUpEvents, scaling.ScaleEvent{Change: 2, Time: at})
		}},
		{"history: the oldest gone", func(r *offerRun) { r.st.history.Recommendations = r.st.history.Recommendations[1:] }},
		{"history: the other count gone", func(r *offerRun) {
			recs := r.st.history.Recommendations
			for len(recs) > 1 && recs[0].Replicas == 3 {
				recs = recs[1:]
			}
			r.st.history.Recommendations = recs
		}},
		{"history: woke", func(r *offerRun) { r.st.history.AwakeSince = at }},
		{"decisions", func(r *offerRun) {
			r.st.noteChange(&Record{Decision: scaling.Decision{Time: at, Current: 5, Desired: 7, Action: scaling.ActionScaleUp, Reason: "rps"}})
		}},
		{"activity", func(r *offerRun) { r.st.recordActivity(at) }},
		{"paused", func(r *offerRun) { r.st.state, r.st.message = StatePaused, "scaleplane.io/paused is true" }},
		{"paused message", func(r *offerRun) { r.st.message = "scaleplane.io/paused is True" }},
		{"autoscaling again", func(r *offerRun) { r.st.state = StateAutoscaling }},
	}

	for _, r := range runs {
		r.st.mu.Lock()
		r.st.state, r.st.message, r.st.interval = StateAutoscaling, "", interval
		r.st.history = &scaling.History{AwakeSince: at.Add(-time.Hour)}
		r.st.lastRec = &Record{Decision: scaling.Decision{Current: 3, Desired: 3, Action: scaling.ActionNone, Reason: "within tolerance", Min: 1, Max: 20,
			Recommended: 3, Stabilized: 3,
			Triggers: []scaling.TriggerDecision{
				{Name: "rps", Type: scaling.TargetAverageValue, Threshold: 4, Valid: true, Desired: 3},
				{Name: "queue", Type: scaling.TargetAverageValue, Threshold: 1, Valid: true, Desired: 3},
			}}}
		r.st.mu.Unlock()
	}
	tick := 0
	step := func() {
		// What changes on every tick: the soft values.
		tick++
		for _, r := range runs {
			d := decision(r.st)
			d.Time = at
			d.Triggers = append([]scaling.TriggerDecision(nil), d.Triggers...)
			for i := range d.Triggers {
				d.Triggers[i].Value = float64(tick%5) + float64(i)/10
			}
			h := r.st.history
			n := len(h.Recommendations)
			replicas := d.Desired
			if n > 0 {
				replicas = h.Recommendations[n-1].Replicas
			}
			h.Recommendations = append(h.Recommendations, scaling.Recommendation{Replicas: replicas, Time: at})
			h.LastActive = at
			h.Failures = map[string]int32{"queue": int32(tick % 3)}
			r.offer()
			r.flush()
		}
		at = at.Add(interval / 2)
		for _, r := range runs {
			r.flush()
		}
		at = at.Add(interval - interval/2)
	}
	for _, c := range changes {
		rv++
		for _, r := range runs {
			c.change(r)
		}
		// Long enough for a refresh of soft values between two changes, at
		// another phase of the refresh for each change.
		for range 7 {
			step()
		}
		if diff := cmp.Diff(always.writes, short.writes); diff != "" {
			t.Fatalf("after the change of %s, the Scalings written differ (-every offer +shortcut):\n%s", c.name, diff)
		}
	}
	if short.builds >= always.builds || len(short.writes) == 0 {
		t.Errorf("the shortcut built %d statuses, every offer %d, and %d writes: the shortcut was never taken", short.builds, always.builds, len(short.writes))
	}
	t.Logf("%d ticks: %d statuses built with the shortcut, %d without; %d writes", always.builds, short.builds, always.builds, len(always.writes))
}
