package status

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	"github.com/scaleplane/scaleplane/scaling"
)

// The Scaling object's status, built from the autoscaler's memory of one
// workload: pure functions, values in and values out. Package scalings
// writes what they build.

// MaxDecisions bounds status.decisions.
const MaxDecisions = 10

// Mode says who sets the count of a workload in state s.
func Mode(s State, w scaling.Workload, l scaling.Layout, defaultMetrics []autoscalingv2.MetricSpec) v1alpha1.ScalingMode {
	switch s {
	case StateAutoscaling:
		return v1alpha1.ScalingModeTriggers
	case StatePaused, StateHeld:
		return v1alpha1.ScalingModePaused
	case StateForeign:
		return v1alpha1.ScalingModeExternal
	}
	c := w.Config
	switch {
	case c == nil || c.Pinned():
		return v1alpha1.ScalingModePinned
	case scaling.DecideHPA(w, l, defaultMetrics, nil).Want:
		return v1alpha1.ScalingModeHPA
	}
	// A range nothing of scaleplane acts in (no metrics, triggers or
	// idle settings; or a child's HPA with R set, W2): the count comes
	// from outside, kubectl scale or the user's own autoscaler.
	return v1alpha1.ScalingModeExternal
}

// Input is what one reconcile knows of a workload.
type Input struct {
	Kind, Name string
	Generation int64
	Workload   scaling.Workload
	Layout     scaling.Layout
	Defaults   []autoscalingv2.MetricSpec
	State      State
	Message    string
	// Decision is this reconcile's decision (nil when none ran) and
	// WriteError its failed write.
	Decision   *scaling.Decision
	WriteError string
	// Throttled names the decision's triggers the fair scheduler did not
	// evaluate, and why; "" when none.
	Throttled string
	History   *scaling.History
	Decisions []v1alpha1.ScalingDecision
	// Previous is the status as last built (or restored), for condition
	// transition times; nil for a new one.
	Previous *v1alpha1.ScalingStatus
	Now      time.Time
	// HPA is the built-in HPA's status in hpa mode, nil when unknown.
	HPA *autoscalingv2.HorizontalPodAutoscalerStatus
}

// Build is the Scaling status of in. Values that change on
// every tick without changing what an operator or a new leader acts on
// (trigger values, the newest recommendation's time, LastActive of a busy
// workload) are the "soft" part that scalings.Fingerprints separates.
func Build(in Input) v1alpha1.ScalingStatus {
	w := in.Workload
	mode := Mode(in.State, w, in.Layout, in.Defaults)
	if in.State == StateUnreadable {
		mode = ""
	}
	st := v1alpha1.ScalingStatus{
		Target:             in.Kind + "/" + in.Name,
		Mode:               mode,
		Replicas:           clonePtr(w.Replicas),
		DesiredReplicas:    clonePtr(w.Replicas),
		ObservedGeneration: in.Generation,
		Decisions:          in.Decisions,
	}
	if c := w.Config; c != nil {
		st.MinReplicas, st.MaxReplicas = clonePtr(c.MinReplicas), clonePtr(c.MaxReplicas)
	} else if mode == v1alpha1.ScalingModePinned && w.Replicas != nil {
		// No config stands for the pin M1 would write: min = max = R.
		st.MinReplicas, st.MaxReplicas = clonePtr(w.Replicas), clonePtr(w.Replicas)
	}
	if h := in.HPA; h != nil && mode == v1alpha1.ScalingModeHPA {
		st.DesiredReplicas = ptr(h.DesiredReplicas)
	}
	d := in.Decision
	if d != nil {
		st.DesiredReplicas = ptr(d.Desired)
		st.MinReplicas, st.MaxReplicas = ptr(d.Min), ptr(d.Max)
		for _, t := range d.Triggers {
			ts := v1alpha1.TriggerStatus{Name: t.Name, Type: string(t.Type), Threshold: formatFloat(t.Threshold), Active: t.Active, Problem: t.Problem,
				Health: v1alpha1.TriggerHealthy, Failures: t.Failures, Fallback: t.Fallback}
			if t.Valid {
				ts.Value = formatFloat(t.Value)
			} else {
				ts.Health = v1alpha1.TriggerFailing
			}
			st.Triggers = append(st.Triggers, ts)
		}
		if f := d.Formula; f != nil {
			// The formula's result is the one trigger decided on; the
			// triggers' own values follow it as its inputs (V13).
			names := slices.Sorted(maps.Keys(f.Inputs))
			for _, n := range names {
				st.Triggers = append(st.Triggers, v1alpha1.TriggerStatus{Name: n, Type: v1alpha1.TriggerTypeFormulaInput, Value: formatFloat(f.Inputs[n]), Health: v1alpha1.TriggerHealthy})
			}
		}
	}
	if in.State == StateAutoscaling && in.History != nil {
		st.History = HistoryToStatus(in.History)
		if !in.History.LastScaleTime.IsZero() {
			t := metav1.NewTime(in.History.LastScaleTime)
			st.LastScaleTime = &t
		}
	}
	var prev []metav1.Condition
	if in.Previous != nil {
		prev = append(prev, in.Previous.Conditions...)
		if st.LastScaleTime == nil {
			st.LastScaleTime = in.Previous.LastScaleTime
		}
	}
	for _, c := range scalingConditions(in, mode) {
		c.ObservedGeneration = in.Generation
		c.LastTransitionTime = metav1.NewTime(in.Now)
		meta.SetStatusCondition(&prev, c)
	}
	st.Conditions = prev
	return st
}

// scalingConditions are Ready, Active, Paused and Fallback with reasons an
// operator can act on (the Active reason is kubectl's REASON column).
func scalingConditions(in Input, mode v1alpha1.ScalingMode) []metav1.Condition {
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: Truncate(msg, 32768)}
	}
	w := in.Workload
	ready := cond(v1alpha1.ScalingReady, metav1.ConditionTrue, "Ready", "")
	switch {
	case in.State == StateUnreadable:
		ready = cond(v1alpha1.ScalingReady, metav1.ConditionFalse, "Unreadable", in.Message)
	case in.WriteError != "":
		ready = cond(v1alpha1.ScalingReady, metav1.ConditionFalse, v1alpha1.ReasonWriteFailed, in.WriteError)
	}
	paused := cond(v1alpha1.ScalingPaused, metav1.ConditionFalse, "NotPaused", "")
	switch in.State {
	case StatePaused:
		paused = cond(v1alpha1.ScalingPaused, metav1.ConditionTrue, "Paused", in.Message)
	case StateHeld:
		paused = cond(v1alpha1.ScalingPaused, metav1.ConditionTrue, "PausedReplicas", in.Message)
	}
	fallback := cond(v1alpha1.ScalingFallback, metav1.ConditionFalse, "NoTriggers", "")
	var active metav1.Condition
	switch mode {
	case v1alpha1.ScalingModeTriggers:
		fallback = cond(v1alpha1.ScalingFallback, metav1.ConditionFalse, "TriggersHealthy", "")
		if d := in.Decision; d != nil {
			// The reason is what decided the count: a fallback count over
			// a throttled trigger kept, over a failing one kept.
			switch p := TriggerProblems(*d); {
			case d.Fallback != nil:
				fallback = cond(v1alpha1.ScalingFallback, metav1.ConditionTrue, v1alpha1.ReasonFallbackActive, scaling.FallbackReason(*d))
			case in.Throttled != "":
				fallback = cond(v1alpha1.ScalingFallback, metav1.ConditionTrue, v1alpha1.ReasonTriggerThrottled, in.Throttled)
			case p != "":
				fallback = cond(v1alpha1.ScalingFallback, metav1.ConditionTrue, "TriggersFailing", p)
			}
		}
		desired := int32(0)
		if w.Replicas != nil {
			desired = *w.Replicas
		}
		if in.Decision != nil {
			desired = in.Decision.Desired
		}
		switch {
		case in.Decision != nil && in.Decision.Action == scaling.ActionWait:
			active = cond(v1alpha1.ScalingActive, metav1.ConditionFalse, "WaitingForDependencies", in.Decision.Reason)
		case desired == 0:
			active = cond(v1alpha1.ScalingActive, metav1.ConditionFalse, "ScaledToZero", "no activity and no active trigger: the workload sleeps until one")
		case in.Decision != nil && scaling.HeldReason(*in.Decision) != "":
			// A count a stabilization window holds is no decision that
			// changed it: say what the triggers want and until when.
			active = cond(v1alpha1.ScalingActive, metav1.ConditionTrue, in.Decision.Stabilization, scaling.HeldReason(*in.Decision))
		case in.Decision != nil && scaling.LimitedReason(*in.Decision) != "":
			active = cond(v1alpha1.ScalingActive, metav1.ConditionTrue, in.Decision.Limit, scaling.LimitedReason(*in.Decision))
		default:
			active = cond(v1alpha1.ScalingActive, metav1.ConditionTrue, "Autoscaling", "the trigger autoscaler scales this workload")
		}
	case v1alpha1.ScalingModeHPA:
		active = cond(v1alpha1.ScalingActive, metav1.ConditionTrue, "HPA", "the built-in HPA scales this workload")
		if _, reason, note := scaling.RangeActor(w.Replicas, w.Config, in.Layout); reason != "" {
			// At 0 replicas the HPA controller does not act (its own
			// ScalingDisabled), whether or not its status says so yet.
			active = cond(v1alpha1.ScalingActive, metav1.ConditionFalse, reason, note)
		} else if in.HPA != nil {
			// The HPA's own ScalingActive, when it says it cannot act
			// (no metrics, an invalid selector).
			for _, c := range in.HPA.Conditions {
				if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse {
					active = cond(v1alpha1.ScalingActive, metav1.ConditionFalse, "HPA"+c.Reason, c.Message)
				}
			}
		}
	case v1alpha1.ScalingModePinned:
		msg := "no scale config: the count is set by hand"
		if w.Config == nil && w.Replicas != nil {
			msg = fmt.Sprintf("no scale config: pinned at %d (min = max = %s), set by hand or kubectl scale; give the scale config a range to autoscale", *w.Replicas, PathOr(in.Layout.ReplicasPath, "replicas"))
		}
		if c := w.Config; c != nil && c.Pinned() {
			msg = fmt.Sprintf("the scale config is pinned at %d: no autoscaling range; widen it to autoscale", *c.MinReplicas)
		}
		active = cond(v1alpha1.ScalingActive, metav1.ConditionFalse, "Pinned", msg)
	case v1alpha1.ScalingModePaused:
		active = cond(v1alpha1.ScalingActive, metav1.ConditionFalse, paused.Reason, in.Message)
	case v1alpha1.ScalingModeExternal:
		if in.State == StateForeign {
			active = cond(v1alpha1.ScalingActive, metav1.ConditionFalse, v1alpha1.ReasonForeignAutoscaler, in.Message)
		} else if _, reason, note := scaling.RangeActor(w.Replicas, w.Config, in.Layout); reason == scaling.InRangeNoAutoscaler || reason == scaling.InRangeClusterScoped {
			// (At 0 replicas in external mode no built-in HPA exists to be
			// disabled: that case stays External.)
			active = cond(v1alpha1.ScalingActive, metav1.ConditionFalse, reason, note)
		} else {
			active = cond(v1alpha1.ScalingActive, metav1.ConditionFalse, "External", in.Message)
		}
	default:
		active = cond(v1alpha1.ScalingActive, metav1.ConditionUnknown, "Unreadable", in.Message)
	}
	return []metav1.Condition{ready, active, paused, fallback}
}

// HistoryToStatus is h as status.history: the recommendations in time
// order, only the newest of each run of equal counts (a stabilization
// window's min or max is the same with or without the older ones, and the
// status then changes when the count does, not on every tick).
func HistoryToStatus(h *scaling.History) *v1alpha1.ScalingHistory {
	out := &v1alpha1.ScalingHistory{
		LastActive:    MicroOrNil(h.LastActive),
		AwakeSince:    MicroOrNil(h.AwakeSince),
		LastScaleTime: MicroOrNil(h.LastScaleTime),
		Failures:      maps.Clone(h.Failures),
	}
	recs := append([]scaling.Recommendation(nil), h.Recommendations...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Time.Before(recs[j].Time) })
	for i, r := range recs {
		if i+1 < len(recs) && recs[i+1].Replicas == r.Replicas {
			continue
		}
		out.Recommendations = append(out.Recommendations, v1alpha1.ScalingRecommendation{Replicas: r.Replicas, Time: metav1.NewMicroTime(r.Time)})
	}
	for _, e := range h.ScaleUpEvents {
		out.ScaleUpEvents = append(out.ScaleUpEvents, v1alpha1.ScalingEvent{Change: e.Change, Time: metav1.NewMicroTime(e.Time), Outdated: e.Outdated})
	}
	for _, e := range h.ScaleDownEvents {
		out.ScaleDownEvents = append(out.ScaleDownEvents, v1alpha1.ScalingEvent{Change: e.Change, Time: metav1.NewMicroTime(e.Time), Outdated: e.Outdated})
	}
	return out
}

// HistoryFromStatus is the History a new leader restores at now. The
// status is written when a count changes, and at most once per refresh
// interval otherwise, so its newest recommendation and a LastActive that
// active triggers move on every tick may lag the old leader's last tick:
// what was true at the last write is taken to have lasted until now (the
// newest recommendation, and LastActive when triggersActive said the
// workload was active at that tick). That is never less than what an
// uninterrupted leader would hold, so a new leader never shrinks early;
// at worst it holds a count or an idle timer for one more window.
// Activity signals need no such guess: every replica records them in
// status.lastActivity as they come.
func HistoryFromStatus(s *v1alpha1.ScalingHistory, triggersActive bool, now time.Time) *scaling.History {
	h := &scaling.History{}
	if s == nil {
		return h
	}
	for _, r := range s.Recommendations {
		h.Recommendations = append(h.Recommendations, scaling.Recommendation{Replicas: r.Replicas, Time: r.Time.Time})
	}
	for _, e := range s.ScaleUpEvents {
		h.ScaleUpEvents = append(h.ScaleUpEvents, scaling.ScaleEvent{Change: e.Change, Time: e.Time.Time, Outdated: e.Outdated})
	}
	for _, e := range s.ScaleDownEvents {
		h.ScaleDownEvents = append(h.ScaleDownEvents, scaling.ScaleEvent{Change: e.Change, Time: e.Time.Time, Outdated: e.Outdated})
	}
	h.LastActive = microTime(s.LastActive)
	if _, ok := scalings.ActivityTime(h.LastActive, now); !ok {
		h.LastActive = time.Time{} // in the future: not activity (scalings.ActivityTime)
	}
	h.AwakeSince = microTime(s.AwakeSince)
	h.LastScaleTime = microTime(s.LastScaleTime)
	for name, n := range s.Failures {
		if n > 0 {
			if h.Failures == nil {
				h.Failures = make(map[string]int32, len(s.Failures))
			}
			h.Failures[name] = n
		}
	}
	if n := len(h.Recommendations); n > 0 {
		last := h.Recommendations[n-1]
		if triggersActive && !h.LastActive.IsZero() && !h.LastActive.Before(last.Time) && now.After(h.LastActive) {
			h.LastActive = now
		}
		if now.After(last.Time) {
			h.Recommendations = append(h.Recommendations, scaling.Recommendation{Replicas: last.Replicas, Time: now})
		}
	}
	return h
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func ptr[T any](v T) *T { return &v }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func MicroOrNil(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewMicroTime(t)
	return &m
}

func microTime(m *metav1.MicroTime) time.Time {
	if m == nil {
		return time.Time{}
	}
	return m.Time
}
