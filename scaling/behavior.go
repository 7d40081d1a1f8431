package scaling

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// This file is the HorizontalPodAutoscaler's rate limiting and stabilization
// (k8s.io/kubernetes pkg/controller/podautoscaler, v1.37), rewritten as pure
// functions of a History and an injected clock. Every rule, including the
// quirks (which stored slot is reused, strict time comparisons, truncation of
// percentages) follows upstream, because users tune behaviors from the HPA
// documentation and expect the same numbers. hpa_upstream_test.go holds the
// upstream test cases.

// DownscaleStabilization is the kube-controller-manager's default
// --horizontal-pod-autoscaler-downscale-stabilization: the scale-down window
// used without a behavior, and when a behavior leaves
// scaleDown.stabilizationWindowSeconds unset.
const DownscaleStabilization = 5 * time.Minute

// The scale-up limit the HPA applies when no behavior is given: at most
// double, and always at least 4 replicas.
const (
	legacyScaleUpFactor  = 2.0
	legacyScaleUpMinimum = 4.0
)

// Limit reasons, with the names the HPA gives its ScalingLimited and
// AbleToScale condition reasons.
const (
	LimitNone            = "DesiredWithinRange"
	LimitScaleUp         = "ScaleUpLimit"
	LimitScaleDown       = "ScaleDownLimit"
	LimitTooMany         = "TooManyReplicas"
	LimitTooFew          = "TooFewReplicas"
	StabilizedScaleUp    = "ScaleUpStabilized"
	StabilizedScaleDown  = "ScaleDownStabilized"
	limitMessageNone     = "the desired count is within the acceptable range"
	limitMessageUp       = "the desired replica count is increasing faster than the maximum scale rate"
	limitMessageDown     = "the desired replica count is decreasing faster than the maximum scale rate"
	limitMessageTooMany  = "the desired replica count is more than the maximum replica count"
	limitMessageTooFew   = "the desired replica count is less than the minimum replica count"
	stabilizedMessageUp  = "recent recommendations were lower than current one, applying the lowest recent recommendation"
	stabilizedMessageDwn = "recent recommendations were higher than current one, applying the highest recent recommendation"
)

// Recommendation is one unstabilized desired count, as computed on one tick.
type Recommendation struct {
	Replicas int32     `json:"replicas"`
	Time     time.Time `json:"time"`
}

// ScaleEvent is one change the autoscaler made, as an absolute count.
type ScaleEvent struct {
	Change int32     `json:"change"`
	Time   time.Time `json:"time"`
	// Outdated marks an event older than every policy period: its slot is
	// reused by the next event instead of growing the list.
	Outdated bool `json:"outdated,omitempty"`
}

// directionRules is one direction of a behavior with every default applied.
// It references the caller's policies instead of copying them: resolving a
// behavior on every tick must not allocate.
type directionRules struct {
	window   time.Duration
	selector autoscalingv2.ScalingPolicySelect
	policies []autoscalingv2.HPAScalingPolicy
	// tolerance is nil when the behavior leaves it to the controller.
	tolerance *float64
}

var (
	upstreamScaleUpPolicies = []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
		{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
	}
	upstreamScaleDownPolicies = []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
	}
)

// resolveScaleUp fills a scale-up rule the way the API server defaults an
// HPA (GenerateHPAScaleUpRules): window 0, selectPolicy Max, policies
// "4 pods or 100% per 15 s". Only nil fields are filled: an empty but non-nil
// policy list stays empty, as upstream.
func resolveScaleUp(r *autoscalingv2.HPAScalingRules) directionRules {
	out := directionRules{selector: autoscalingv2.MaxChangePolicySelect, policies: upstreamScaleUpPolicies}
	overlayRules(&out, r)
	return out
}

// resolveScaleDown fills a scale-down rule (GenerateHPAScaleDownRules): the
// controller's downscale window, selectPolicy Max, policy "100% per 15 s".
func resolveScaleDown(r *autoscalingv2.HPAScalingRules, downscale time.Duration) directionRules {
	out := directionRules{window: downscale, selector: autoscalingv2.MaxChangePolicySelect, policies: upstreamScaleDownPolicies}
	overlayRules(&out, r)
	return out
}

func overlayRules(out *directionRules, r *autoscalingv2.HPAScalingRules) {
	if r == nil {
		return
	}
	if r.StabilizationWindowSeconds != nil {
		out.window = time.Duration(*r.StabilizationWindowSeconds) * time.Second
	}
	if r.SelectPolicy != nil {
		out.selector = *r.SelectPolicy
	}
	if r.Policies != nil {
		out.policies = r.Policies
	}
	if r.Tolerance != nil {
		t := r.Tolerance.AsApproximateFloat64()
		out.tolerance = &t
	}
}

// EffectiveBehavior returns the behavior the algorithm applies: nil when b
// is nil (the HPA's behavior-less algorithm), otherwise a copy of b with
// every unset field filled as the API server and the HPA controller fill it.
// It is meant for explanations; decisions do not call it.
func EffectiveBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior, downscale time.Duration) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if b == nil {
		return nil
	}
	up := resolveScaleUp(b.ScaleUp)
	down := resolveScaleDown(b.ScaleDown, downscale)
	out := b.DeepCopy()
	out.ScaleUp = up.toAPI(b.ScaleUp)
	out.ScaleDown = down.toAPI(b.ScaleDown)
	return out
}

func (r directionRules) toAPI(orig *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	out := &autoscalingv2.HPAScalingRules{}
	if orig != nil {
		out = orig.DeepCopy()
	}
	window := int32(r.window / time.Second)
	sel := r.selector
	out.StabilizationWindowSeconds = &window
	out.SelectPolicy = &sel
	out.Policies = append([]autoscalingv2.HPAScalingPolicy(nil), r.policies...)
	return out
}

// stabilizeLegacy is the behavior-less stabilization: the highest
// recommendation of the downscale window wins, so scale-down waits for the
// window while scale-up is immediate. The newest recommendation is stored in
// the slot of an expired one (the last expired one, as upstream) or appended.
func stabilizeLegacy(recs []Recommendation, desired int32, window time.Duration, now time.Time) (int32, []Recommendation) {
	best := desired
	old := -1
	cutoff := now.Add(-window)
	for i, r := range recs {
		if r.Time.Before(cutoff) {
			old = i
		} else if r.Replicas > best {
			best = r.Replicas
		}
	}
	return best, storeRecommendation(recs, old, Recommendation{Replicas: desired, Time: now})
}

// stabilizeWithBehavior bounds the recommendation by the lowest of the
// scale-up window and the highest of the scale-down window, starting from the
// current count: a rise must have lasted the whole up window, a fall the
// whole down window. The reason names the direction the raw recommendation
// points to; callers report it only when stabilization changed the count.
func stabilizeWithBehavior(recs []Recommendation, desired, current int32, upWindow, downWindow time.Duration, now time.Time) (int32, string, []Recommendation) {
	upRec, downRec := desired, desired
	upCutoff, downCutoff := now.Add(-upWindow), now.Add(-downWindow)
	old := -1
	for i, r := range recs {
		if r.Time.After(upCutoff) {
			upRec = min(upRec, r.Replicas)
		}
		if r.Time.After(downCutoff) {
			downRec = max(downRec, r.Replicas)
		}
		if r.Time.Before(upCutoff) && r.Time.Before(downCutoff) {
			old = i
		}
	}
	rec := current
	if rec < upRec {
		rec = upRec
	}
	if rec > downRec {
		rec = downRec
	}
	recs = storeRecommendation(recs, old, Recommendation{Replicas: desired, Time: now})
	reason := StabilizedScaleUp
	if desired < current {
		reason = StabilizedScaleDown
	}
	return rec, reason, recs
}

func storeRecommendation(recs []Recommendation, slot int, r Recommendation) []Recommendation {
	if slot >= 0 {
		recs[slot] = r
		return recs
	}
	return append(recs, r)
}

// legacyScaleUpLimit is the behavior-less cap on one step up: guards against
// a bogus metric multiplying the workload, as the HPA controller does.
func legacyScaleUpLimit(current int32) int32 {
	return int32(math.Max(legacyScaleUpFactor*float64(current), legacyScaleUpMinimum))
}

// limitWithRules clamps a behavior-less recommendation to [min, max] and to
// the legacy scale-up limit, naming the bound that applied.
func limitWithRules(current, desired, minR, maxR int32) (int32, string, string) {
	upper, reason, msg := maxR, LimitTooMany, limitMessageTooMany
	if lim := legacyScaleUpLimit(current); maxR > lim {
		upper, reason, msg = lim, LimitScaleUp, limitMessageUp
	}
	switch {
	case desired < minR:
		return minR, LimitTooFew, limitMessageTooFew
	case desired > upper:
		return upper, reason, msg
	}
	return desired, LimitNone, limitMessageNone
}

// changeInPeriod sums the changes of events strictly newer than period.
func changeInPeriod(periodSeconds int32, events []ScaleEvent, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var sum int32
	for _, e := range events {
		if e.Time.After(cutoff) {
			sum += e.Change
		}
	}
	return sum
}

// scaleUpLimit is the highest count the scale-up policies allow now.
func scaleUpLimit(current int32, up, down []ScaleEvent, r directionRules, now time.Time) int32 {
	return policyLimit(current, up, down, r, now, true)
}

// scaleDownLimit is the lowest count the scale-down policies allow now.
func scaleDownLimit(current int32, up, down []ScaleEvent, r directionRules, now time.Time) int32 {
	return policyLimit(current, up, down, r, now, false)
}

// policyLimit is how far the policies of one direction let the count move
// now. Each policy measures from the count at the start of its period
// (current minus what was added, plus what was removed, within the period).
// selectPolicy Max takes the policy allowing the biggest change (the highest
// count up, the lowest down), Min the smallest, Disabled forbids any.
func policyLimit(current int32, up, down []ScaleEvent, r directionRules, now time.Time, scaleUp bool) int32 {
	if r.selector == autoscalingv2.DisabledPolicySelect {
		return current
	}
	highest := (r.selector != autoscalingv2.MinChangePolicySelect) == scaleUp
	result := int32(math.MaxInt32)
	if highest {
		result = math.MinInt32
	}
	for _, p := range r.policies {
		start := current - changeInPeriod(p.PeriodSeconds, up, now) + changeInPeriod(p.PeriodSeconds, down, now)
		var proposed int32
		switch {
		case p.Type == autoscalingv2.PodsScalingPolicy && scaleUp:
			proposed = start + p.Value
		case p.Type == autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case scaleUp:
			// Rounded up so that a small percentage still allows one more.
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		default:
			// Truncated (towards zero), as upstream.
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		if highest {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// limitWithBehaviorRate clamps a stabilized recommendation to the policies of
// its direction and to [min, max], naming the bound that applied. Past
// events can put the policy limit on the wrong side of current; the count
// then stays where it is until those events leave their period.
func limitWithBehaviorRate(current, desired, minR, maxR int32, up, down directionRules, upEvents, downEvents []ScaleEvent, now time.Time) (int32, string, string) {
	switch {
	case desired > current:
		lim := max(scaleUpLimit(current, upEvents, downEvents, up, now), current)
		upper, reason, msg := maxR, LimitTooMany, limitMessageTooMany
		if maxR > lim {
			upper, reason, msg = lim, LimitScaleUp, limitMessageUp
		}
		if desired > upper {
			return upper, reason, msg
		}
	case desired < current:
		lim := min(scaleDownLimit(current, upEvents, downEvents, down, now), current)
		lower, reason, msg := minR, LimitTooFew, limitMessageTooFew
		if minR < lim {
			lower, reason, msg = lim, LimitScaleDown, limitMessageDown
		}
		if desired < lower {
			return lower, reason, msg
		}
	}
	return desired, LimitNone, limitMessageNone
}

// longestPeriod is how long events of a direction matter.
func longestPeriod(r directionRules) int32 {
	var longest int32
	for _, p := range r.policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return longest
}

// storeScaleEvent records a change of |change| replicas in one direction's
// event list: events older than every policy period are marked outdated and
// the last of them gives its slot to the new event, so the list stays as
// short as the periods require.
func storeScaleEvent(events []ScaleEvent, r directionRules, change int32, now time.Time) []ScaleEvent {
	cutoff := now.Add(-time.Duration(longestPeriod(r)) * time.Second)
	slot := -1
	for i := range events {
		if events[i].Time.Before(cutoff) {
			events[i].Outdated = true
		}
		if events[i].Outdated {
			slot = i
		}
	}
	e := ScaleEvent{Change: change, Time: now}
	if slot >= 0 {
		events[slot] = e
		return events
	}
	return append(events, e)
}
