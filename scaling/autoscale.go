package scaling

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"
)

// The built-in autoscaler's decision: from trigger samples, the clock and a
// per-workload History to the count R should have. Decide is pure apart
// from updating the History it is given; the controller samples triggers,
// calls Decide, writes R through /scale and, when the write succeeded,
// calls History.RecordScale.

// History is the per-workload memory of the autoscaler: what the HPA keeps
// in its controller (recommendations and scale events), plus what scale to
// zero needs. The caller keeps one per workload, passes the same one to
// every Decide, and never shares it between goroutines. It is JSON so that
// it can be persisted or shown; losing it (a restart) behaves like a new
// HPA: the count is held for a downscale window and the idle timer restarts.
type History struct {
	// Recommendations are the raw recommendations of recent ticks, for
	// stabilization windows.
	Recommendations []Recommendation `json:"recommendations,omitempty"`
	// ScaleUpEvents and ScaleDownEvents are recent changes, for the
	// policies' periods. Only kept when the config has a behavior.
	ScaleUpEvents   []ScaleEvent `json:"scaleUpEvents,omitempty"`
	ScaleDownEvents []ScaleEvent `json:"scaleDownEvents,omitempty"`
	// LastActive is the latest activity seen: an activity signal, or a
	// tick where a trigger was active.
	LastActive time.Time `json:"lastActive,omitempty"`
	// AwakeSince is when the workload was first seen above zero since it
	// last was at zero; an idle timeout never ends before AwakeSince +
	// timeout, whoever woke it.
	AwakeSince time.Time `json:"awakeSince,omitempty"`
	// LastScaleTime is when RecordScale last recorded a change.
	LastScaleTime time.Time `json:"lastScaleTime,omitempty"`
	// Failures counts, per trigger name, the ticks in a row on which the
	// trigger failed (V12's fallback); a trigger that succeeded last is
	// absent. Only the config's triggers are kept.
	Failures map[string]int32 `json:"failures,omitempty"`
}

// Clone returns a deep copy, for callers that snapshot a History before a
// decision whose write may fail.
func (h *History) Clone() *History {
	c := *h
	c.Recommendations = append([]Recommendation(nil), h.Recommendations...)
	c.ScaleUpEvents = append([]ScaleEvent(nil), h.ScaleUpEvents...)
	c.ScaleDownEvents = append([]ScaleEvent(nil), h.ScaleDownEvents...)
	c.Failures = maps.Clone(h.Failures)
	return &c
}

// RecordScale records that the decision's count was written. Call it only
// after the /scale write succeeded, as the HPA stores a scale event only
// after a successful update. Only changes made by the HPA algorithm (and its
// min/max corrections) count against the behavior's policies; waking from
// and sleeping to zero do not.
func (h *History) RecordScale(c *Config, d Decision) {
	if d.Desired == d.Current {
		return
	}
	h.LastScaleTime = d.Time
	if c == nil || c.Behavior == nil || d.Action == ActionWakeUp || d.Action == ActionScaleToZero {
		return
	}
	if d.Desired > d.Current {
		h.ScaleUpEvents = storeScaleEvent(h.ScaleUpEvents, resolveScaleUp(c.Behavior.ScaleUp), d.Desired-d.Current, d.Time)
		return
	}
	h.ScaleDownEvents = storeScaleEvent(h.ScaleDownEvents, resolveScaleDown(c.Behavior.ScaleDown, 0), d.Current-d.Desired, d.Time)
}

// TriggerResult is one trigger's sample for this tick, matched to the
// config's trigger by Name.
type TriggerResult struct {
	Name string
	Sample
	// Err is a failure to sample (query error, unreachable server).
	Err error
	// NotEvaluated: scaleplane did not ask the source this tick (its
	// namespace was over its share, or the tick ran out of time first).
	// The trigger has no value, as with Err, but the source did not fail:
	// its failures in a row neither grow nor reset.
	NotEvaluated bool
}

// DecideInput is everything one decision depends on.
type DecideInput struct {
	// Now is the decision's time; nothing else reads a clock.
	Now time.Time
	// Current is R, the count the workload is asked to run.
	Current int32
	// Config is the workload's scale config. Unset bounds read as
	// minReplicas 1 and maxReplicas max(minReplicas, Current).
	Config *Config
	// Triggers are the samples of Config.Triggers. A trigger without a
	// result is invalid on this tick.
	Triggers []TriggerResult
	// LastActivity is the latest activity signal (a request seen by a
	// proxy, a message enqueued); zero when none.
	LastActivity time.Time
	// Dependencies is a snapshot of Config.DependsOn's workloads.
	Dependencies map[string]DependencyState
	// Tolerance overrides StandardTolerance for directions whose behavior
	// sets none (the controller's --horizontal-pod-autoscaler-tolerance).
	Tolerance *float64
	// DownscaleStabilization overrides DownscaleStabilization.
	DownscaleStabilization *time.Duration
}

// ScaleAction names what a decision does.
type ScaleAction string

const (
	ActionNone        ScaleAction = "None"
	ActionScaleUp     ScaleAction = "ScaleUp"
	ActionScaleDown   ScaleAction = "ScaleDown"
	ActionWakeUp      ScaleAction = "WakeUp"
	ActionScaleToZero ScaleAction = "ScaleToZero"
	ActionWait        ScaleAction = "WaitForDependencies"
)

// Decision is the autoscaler's answer with everything needed to explain it
// (the /debug/autoscaler view): the count, why, and each step's effect.
type Decision struct {
	Time     time.Time         `json:"time"`
	Current  int32             `json:"current"`
	Desired  int32             `json:"desired"`
	Action   ScaleAction       `json:"action"`
	Reason   string            `json:"reason"`
	Min      int32             `json:"minReplicas"`
	Max      int32             `json:"maxReplicas"`
	Triggers []TriggerDecision `json:"triggers,omitempty"`
	// Recommended is the highest count the valid triggers ask for, before
	// stabilization and limits; -1 when the triggers gave no usable answer
	// (all invalid, or some invalid while the rest would scale down).
	Recommended int32 `json:"recommended"`
	// Stabilized is the count after the stabilization window(s), -1 when
	// the HPA step did not run (at zero, outside [min, max], unusable
	// data). Stabilization names the window that changed it
	// (ScaleUpStabilized/ScaleDownStabilized), empty when none did.
	Stabilized    int32  `json:"stabilized"`
	Stabilization string `json:"stabilization,omitempty"`
	// StabilizationWindowSeconds is the length of the window Stabilization
	// names, and StabilizedUntil when the recommendations that hold the
	// count at Stabilized leave it; both set only with Stabilization.
	StabilizationWindowSeconds int32     `json:"stabilizationWindowSeconds,omitempty"`
	StabilizedUntil            time.Time `json:"stabilizedUntil,omitzero"`
	// Limit names the bound applied after stabilization: ScaleUpLimit,
	// ScaleDownLimit, TooManyReplicas, TooFewReplicas or
	// DesiredWithinRange.
	Limit        string `json:"limit,omitempty"`
	LimitMessage string `json:"limitMessage,omitempty"`
	// LimitPolicy describes the rule behind ScaleUpLimit or ScaleDownLimit
	// with its values ("the scale-up policy 2 Pods per 60 s").
	LimitPolicy string `json:"limitPolicy,omitempty"`
	// Tolerances are the dead bands the triggers were judged with.
	Tolerances Tolerances `json:"tolerances"`
	// Idle explains scale to zero; nil when the range does not start at 0.
	Idle *IdleState `json:"idle,omitempty"`
	// Dependencies explains a wake-up's dependencies; nil when not waking
	// or without dependsOn.
	Dependencies *DependencyCheck `json:"dependencies,omitempty"`
	// SignalDependencies are the workloads the caller records activity for
	// at Time (their DecideInput.LastActivity): a workload's dependencies
	// count as active while it is awake or waking, so they wake before it
	// and never go to zero under it. It is the config's dependsOn slice:
	// read it, do not modify it.
	SignalDependencies []string `json:"signalDependencies,omitempty"`
	// Problems lists config entries the decision had to ignore (bad time
	// zone, bad HH:mm); admission validation normally prevents them.
	Problems []string `json:"problems,omitempty"`
	// Fallback is set while a trigger stands for the config's fallback
	// count; nil otherwise.
	Fallback *FallbackState `json:"fallback,omitempty"`
	// Formula explains a decision made with scaling modifiers (Triggers
	// then holds the one trigger FormulaTrigger); nil without.
	Formula *FormulaState `json:"formula,omitempty"`
}

// FallbackState explains a decision some triggers of which are in
// fallback: they failed more than FailureThreshold times in a row and each
// asks for Replicas.
type FallbackState struct {
	Triggers         []string         `json:"triggers"`
	FailureThreshold int32            `json:"failureThreshold"`
	Behavior         FallbackBehavior `json:"behavior"`
	Replicas         int32            `json:"replicas"`
}

// TriggerDecision is one trigger's part of a decision.
type TriggerDecision struct {
	Name      string     `json:"name"`
	Type      TargetType `json:"type"`
	Threshold float64    `json:"threshold"`
	// Value is the sample; 0 when invalid.
	Value float64 `json:"value"`
	// Ratio is the usage ratio compared with the tolerances; 0 when
	// undefined (invalid, or AverageValue at zero replicas).
	Ratio float64 `json:"ratio"`
	// Desired is the count this trigger asks for; 0 when invalid.
	Desired int32 `json:"desired"`
	// WithinTolerance: the ratio was too close to 1 to act on.
	WithinTolerance bool `json:"withinTolerance,omitempty"`
	Valid           bool `json:"valid"`
	// Active: the value is above the activation threshold (or the scaler
	// declared activity); an active trigger wakes a workload at zero.
	Active bool `json:"active,omitempty"`
	// Problem says why the trigger is invalid.
	Problem string `json:"problem,omitempty"`
	// Failures is how many ticks in a row the trigger has failed,
	// this one included; 0 when it succeeded.
	Failures int32 `json:"failures,omitempty"`
	// Fallback: the trigger failed more than the fallback's threshold
	// allows, and Desired is the fallback count (Valid stays false).
	Fallback bool `json:"fallback,omitempty"`
}

// IdleState explains the scale-to-zero part of a decision.
type IdleState struct {
	// LastActivity is the latest activity: signal, active trigger, or
	// scheduled wake-up; zero when none was ever seen.
	LastActivity time.Time `json:"lastActivity,omitempty"`
	// AwakeSince is when the workload was last seen waking.
	AwakeSince time.Time `json:"awakeSince,omitempty"`
	// TimeoutSeconds is the idle timeout in force now.
	TimeoutSeconds int64 `json:"timeoutSeconds"`
	// IdleSeconds is how long the workload has been without activity
	// (counted from AwakeSince at the latest); 0 when it never had any.
	IdleSeconds int64 `json:"idleSeconds"`
	// Idle: the timeout has passed.
	Idle bool `json:"idle"`
	// MetricsVeto: idle, but the triggers still ask for capacity (or have
	// no data), so at least one replica stays.
	MetricsVeto bool `json:"metricsVeto,omitempty"`
	// LastWakeUp and NextWakeUp are the scheduled wake-ups around now.
	LastWakeUp time.Time `json:"lastWakeUp,omitempty"`
	NextWakeUp time.Time `json:"nextWakeUp,omitempty"`
}

// Decide computes the count R should have now, updating h's recommendations
// and activity. Steps, each recorded in the Decision:
//
//  1. Each trigger's desired count (TriggerReplicas) and activity.
//  2. At zero with a range starting at 0: wake to
//     max(idle.replicasAtStart, 1) on activity (an active trigger, an
//     activity signal or a scheduled wake-up within the idle timeout), after
//     the dependencies are ready; otherwise stay at zero.
//  3. Outside [min, max] (min raised to 1 when the range starts at 0):
//     move to the nearest bound.
//  4. The HPA algorithm: the maximum over valid triggers; all invalid, or
//     some invalid while the rest would scale down, keeps the count; then
//     stabilization and the behavior's policies (or the behavior-less
//     rules).
//  5. With a range starting at 0: idle past the timeout and every trigger
//     asking for 0 goes to zero; idle while a trigger asks for capacity
//     keeps the step 4 count (metrics veto).
func Decide(in DecideInput, h *History) Decision {
	if h == nil {
		h = &History{}
	}
	cfg := in.Config
	if cfg == nil {
		cfg = &Config{}
	}
	now, cur := in.Now, in.Current
	minR, maxR := autoscaleBounds(cfg, cur)
	tolBase := StandardTolerance
	if in.Tolerance != nil {
		tolBase = *in.Tolerance
	}
	downscale := DownscaleStabilization
	if in.DownscaleStabilization != nil {
		downscale = *in.DownscaleStabilization
	}
	d := Decision{Time: now, Current: cur, Min: minR, Max: maxR, Recommended: -1, Stabilized: -1,
		Tolerances: TolerancesFor(cfg.Behavior, tolBase)}

	// 1. Triggers; with scaling modifiers, the one their formula makes
	// of the triggers' values (V13).
	triggers, results := cfg.Triggers, in.Triggers
	if cfg.ScalingModifiers != nil && len(cfg.Triggers) > 0 {
		triggers, results, d.Formula = compositeTriggers(cfg, in.Triggers)
	}
	active, invalid, best := false, 0, -1
	recommended := int32(0)
	if len(triggers) > 0 {
		d.Triggers = make([]TriggerDecision, len(triggers))
	}
	failures := countFailures(triggers, results, h, cur)
	for i := range triggers {
		td := &d.Triggers[i]
		evalTrigger(td, &triggers[i], findResult(results, triggers[i].Name), cur, d.Tolerances)
		td.Failures = failures[triggers[i].Name]
		if !td.Valid {
			if fb := cfg.Fallback; fb != nil && td.Failures > fb.FailureThreshold {
				// V12: the trigger stands for the fallback count, as
				// KEDA's metrics adapter makes the HPA see it, and goes
				// through the same stabilization and limits.
				td.Fallback, td.Desired = true, fb.FallbackReplicas(cur)
				d.Fallback = fallbackState(d.Fallback, fb, td.Name, td.Desired)
				if best < 0 || td.Desired > recommended {
					best, recommended = i, td.Desired
				}
				continue
			}
			invalid++
			continue
		}
		active = active || td.Active
		if best < 0 || td.Desired > recommended {
			best, recommended = i, td.Desired
		}
	}
	usable := !(invalid >= len(triggers) || (invalid > 0 && recommended < cur))
	if usable {
		d.Recommended = recommended
	}

	// Activity.
	if in.LastActivity.After(h.LastActive) {
		h.LastActive = in.LastActivity
	}
	if active {
		h.LastActive = now
	}
	if cur == 0 {
		h.AwakeSince = time.Time{}
		// Asleep: recommendations of the last awake period would hold a
		// stale count after the next wake-up.
		h.Recommendations = h.Recommendations[:0]
	} else {
		if h.AwakeSince.IsZero() {
			h.AwakeSince = now
		}
		// The HPA's first recommendation is the current count, so that a new
		// autoscaler (or a restarted controller) holds it for a downscale
		// window instead of shrinking at once.
		if len(h.Recommendations) == 0 {
			h.Recommendations = append(h.Recommendations, Recommendation{Replicas: cur, Time: now})
		}
	}

	toZero := minR == 0 && maxR > 0
	hpaMin := minR
	if toZero {
		hpaMin = 1
		d.Idle = idleState(cfg, h, now, &d)
	}

	switch {
	case cur == 0 && toZero:
		// A trigger in fallback asking for capacity wakes the workload, as
		// KEDA scales a ScaledObject at zero to its fallback count.
		decideAtZero(&d, cfg, in, active || (d.Fallback != nil && d.Fallback.Replicas > 0))
		if d.Desired > 0 {
			// The idle timer of a woken workload starts now, not at the
			// first tick that sees it awake.
			h.AwakeSince = now
		}
	case cur > maxR:
		d.Desired = maxR
		d.Reason = fmt.Sprintf("Scale down from %d to %d: above maxReplicas %d", cur, maxR, maxR)
	case cur < hpaMin:
		d.Desired = hpaMin
		d.Reason = fmt.Sprintf("Scale up from %d to %d: below minReplicas %d", cur, hpaMin, hpaMin)
		if cur == 0 {
			gateOnDependencies(&d, cfg, in.Dependencies)
		}
	case !usable:
		d.Desired = cur
		d.Reason = holdReason(&d, invalid)
	default:
		normalize(&d, cfg, h, recommended, hpaMin, maxR, downscale)
		d.Reason = HPAReason(d)
	}

	if toZero && cur > 0 && d.Idle.Idle && d.Desired > 0 {
		if wantsZero(&d, invalid) {
			d.Desired = 0
			d.Reason = fmt.Sprintf("Scale to zero from %d: no activity for %s (timeout %s) and every trigger asks for 0",
				cur, time.Duration(d.Idle.IdleSeconds)*time.Second, time.Duration(d.Idle.TimeoutSeconds)*time.Second)
		} else {
			d.Idle.MetricsVeto = true
			d.Reason += "; idle, but not scaling to zero: " + vetoReason(&d)
		}
	}

	if len(cfg.DependsOn) > 0 && (d.Desired > 0 || d.Action == ActionWait) {
		d.SignalDependencies = cfg.DependsOn
	}

	switch {
	case d.Action != "":
	case d.Desired == 0 && cur > 0:
		d.Action = ActionScaleToZero
	case d.Desired > cur:
		d.Action = ActionScaleUp
	case d.Desired < cur:
		d.Action = ActionScaleDown
	default:
		d.Action = ActionNone
	}
	return d
}

// autoscaleBounds reads the range with the defaults of M2, so that a
// decision on an undefaulted config still has bounds.
func autoscaleBounds(c *Config, cur int32) (int32, int32) {
	minR := int32(1)
	if c.MinReplicas != nil {
		minR = *c.MinReplicas
	}
	maxR := max(minR, cur)
	if c.MaxReplicas != nil {
		maxR = *c.MaxReplicas
	}
	return minR, maxR
}

func findResult(rs []TriggerResult, name string) *TriggerResult {
	for i := range rs {
		if rs[i].Name == name {
			return &rs[i]
		}
	}
	return nil
}

func evalTrigger(td *TriggerDecision, t *Trigger, r *TriggerResult, cur int32, tol Tolerances) {
	td.Name, td.Type = t.Name, t.Type
	if !math.IsNaN(t.Threshold) && !math.IsInf(t.Threshold, 0) {
		td.Threshold = t.Threshold // a Decision must stay valid JSON
	}
	switch {
	case r == nil:
		td.Problem = "no result"
	case r.Err != nil:
		td.Problem = r.Err.Error()
	case sampleProblem(r.Sample) != "":
		td.Problem = sampleProblem(r.Sample)
	case t.Type != TargetValue && t.Type != TargetAverageValue:
		td.Problem = fmt.Sprintf("type %q is neither Value nor AverageValue", t.Type)
	case !(t.Threshold > 0) || math.IsInf(t.Threshold, 0):
		td.Problem = "threshold must be a number > 0"
	}
	if td.Problem != "" {
		return
	}
	td.Valid, td.Value = true, r.Value
	var ratio float64
	td.Desired, ratio, td.WithinTolerance = TriggerReplicas(t.Type, r.Value, t.Threshold, cur, tol)
	if !math.IsNaN(ratio) && !math.IsInf(ratio, 0) {
		td.Ratio = ratio
	}
	activation := 0.0
	if t.ActivationThreshold != nil {
		activation = *t.ActivationThreshold
	}
	td.Active = r.Active || r.Value > activation
}

// idleState computes the idle timer, folding the latest scheduled wake-up
// into the activity.
func idleState(c *Config, h *History, now time.Time, d *Decision) *IdleState {
	s := &IdleState{AwakeSince: h.AwakeSince, LastActivity: h.LastActive}
	timeout, err := IdleTimeoutAt(c.Idle, c.Schedule, now)
	if err != nil {
		d.Problems = append(d.Problems, err.Error())
	}
	last, next, err := LastWakeUp(c.Schedule, now)
	if err != nil {
		d.Problems = append(d.Problems, err.Error())
	}
	if last.After(s.LastActivity) {
		s.LastActivity = last
	}
	s.LastWakeUp, s.NextWakeUp = last, next
	s.TimeoutSeconds = int64(timeout / time.Second)
	since := s.LastActivity
	if h.AwakeSince.After(since) {
		since = h.AwakeSince
	}
	if since.IsZero() {
		// Asleep and never active: idle, for no measurable time.
		s.Idle = true
	} else {
		idle := now.Sub(since)
		s.IdleSeconds = int64(idle / time.Second)
		s.Idle = idle > timeout
	}
	return s
}

// decideAtZero wakes a sleeping workload on recent activity.
func decideAtZero(d *Decision, c *Config, in DecideInput, active bool) {
	s := d.Idle
	recent := !s.LastActivity.IsZero() && in.Now.Sub(s.LastActivity) <= time.Duration(s.TimeoutSeconds)*time.Second
	if !active && !recent {
		d.Desired = 0
		d.Reason = "Stay at zero: no activity"
		if !s.LastActivity.IsZero() {
			d.Reason += " since " + s.LastActivity.UTC().Format(time.RFC3339)
		}
		if !s.NextWakeUp.IsZero() {
			d.Reason += "; next scheduled wake-up " + s.NextWakeUp.Format(time.RFC3339)
		}
		return
	}
	start := int32(IdleReplicasAtStart)
	if c.Idle != nil && c.Idle.ReplicasAtStart != nil {
		start = max(*c.Idle.ReplicasAtStart, 1)
	}
	d.Desired = min(start, d.Max)
	d.Action = ActionWakeUp
	d.Reason = fmt.Sprintf("Wake up from 0 to %d: %s", d.Desired, wakeCause(d, in))
	gateOnDependencies(d, c, in.Dependencies)
}

func wakeCause(d *Decision, in DecideInput) string {
	for _, t := range d.Triggers {
		if t.Active {
			return fmt.Sprintf("trigger %s=%s is active", t.Name, fmtNum(t.Value))
		}
	}
	if !in.LastActivity.IsZero() && !in.LastActivity.Before(d.Idle.LastActivity) {
		return "activity at " + in.LastActivity.UTC().Format(time.RFC3339)
	}
	if !d.Idle.LastWakeUp.IsZero() && d.Idle.LastWakeUp.Equal(d.Idle.LastActivity) {
		return "scheduled wake-up at " + d.Idle.LastWakeUp.Format(time.RFC3339)
	}
	return "activity at " + d.Idle.LastActivity.UTC().Format(time.RFC3339)
}

// gateOnDependencies keeps a waking workload at zero until its dependencies
// are ready, naming those to wake.
func gateOnDependencies(d *Decision, c *Config, snap map[string]DependencyState) {
	if len(c.DependsOn) == 0 {
		return
	}
	dc := CheckDependencies(c.DependsOn, snap)
	d.Dependencies = &dc
	if !dc.Wait {
		return
	}
	d.Desired = 0
	d.Action = ActionWait
	d.Reason = fmt.Sprintf("Wait at 0: dependencies not ready: %s", strings.Join(dc.NotReady, ", "))
	if len(dc.Wake) > 0 {
		d.Reason += "; waking " + strings.Join(dc.Wake, ", ")
	}
	if len(dc.Missing) > 0 {
		d.Reason += "; missing " + strings.Join(dc.Missing, ", ")
	}
}

// normalize applies stabilization and limits to the recommendation.
func normalize(d *Decision, c *Config, h *History, recommended, minR, maxR int32, downscale time.Duration) {
	cur, now := d.Current, d.Time
	if c.Behavior == nil {
		stab, recs := stabilizeLegacy(h.Recommendations, recommended, downscale, now)
		h.Recommendations = recs
		d.Stabilized = stab
		if stab != recommended {
			d.Stabilization = StabilizedScaleDown
			d.StabilizationWindowSeconds = int32(downscale / time.Second)
			d.StabilizedUntil = heldUntil(h.Recommendations, stab, true, downscale, now)
		}
		d.Desired, d.Limit, d.LimitMessage = limitWithRules(cur, stab, minR, maxR)
		if d.Limit == LimitScaleUp {
			d.LimitPolicy = legacyScaleUpText(cur)
		}
		return
	}
	up := resolveScaleUp(c.Behavior.ScaleUp)
	down := resolveScaleDown(c.Behavior.ScaleDown, downscale)
	stab, reason, recs := stabilizeWithBehavior(h.Recommendations, recommended, cur, up.window, down.window, now)
	h.Recommendations = recs
	d.Stabilized = stab
	if stab != recommended {
		d.Stabilization = reason
		window := down.window
		if reason == StabilizedScaleUp {
			window = up.window
		}
		d.StabilizationWindowSeconds = int32(window / time.Second)
		d.StabilizedUntil = heldUntil(h.Recommendations, stab, reason == StabilizedScaleDown, window, now)
	}
	d.Desired, d.Limit, d.LimitMessage = limitWithBehaviorRate(cur, stab, minR, maxR, up, down, h.ScaleUpEvents, h.ScaleDownEvents, now)
	switch d.Limit {
	case LimitScaleUp:
		d.LimitPolicy = policyText("scale-up", up)
	case LimitScaleDown:
		d.LimitPolicy = policyText("scale-down", down)
	}
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

func holdReason(d *Decision, invalid int) string {
	if len(d.Triggers) == 0 {
		return fmt.Sprintf("Keep %d: no triggers", d.Current)
	}
	var b strings.Builder
	if invalid >= len(d.Triggers) {
		fmt.Fprintf(&b, "Keep %d: no trigger has usable data (", d.Current)
	} else {
		fmt.Fprintf(&b, "Keep %d: never scale down while a trigger has no usable data (", d.Current)
	}
	first := true
	for _, t := range d.Triggers {
		if t.Valid {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(t.Name)
		b.WriteString(": ")
		b.WriteString(t.Problem)
	}
	b.WriteByte(')')
	return b.String()
}

// wantsZero: every trigger is valid and asks for 0. A workload in
// fallback never goes to zero.
func wantsZero(d *Decision, invalid int) bool {
	if invalid > 0 || d.Fallback != nil {
		return false
	}
	for _, t := range d.Triggers {
		if t.Desired > 0 {
			return false
		}
	}
	return true
}

func vetoReason(d *Decision) string {
	if f := d.Fallback; f != nil {
		return fmt.Sprintf("trigger %s is in fallback", strings.Join(f.Triggers, ", "))
	}
	for _, t := range d.Triggers {
		if !t.Valid {
			return fmt.Sprintf("trigger %s has no usable data (%s)", t.Name, t.Problem)
		}
		if t.Desired > 0 {
			return fmt.Sprintf("trigger %s=%s still asks for %d", t.Name, fmtNum(t.Value), t.Desired)
		}
	}
	return "triggers still ask for capacity"
}

// countFailures updates h's failures in a row from this tick's results and
// returns them: a trigger whose source failed or gave no usable value
// counts one more, one with a value goes back to 0, one not evaluated
// keeps its count, and so does one without data while the workload is at
// zero (no pods, no series: the normal state of a sleeping workload, which
// must not fall back and wake it). Names no longer in the config are
// forgotten.
func countFailures(triggers []Trigger, results []TriggerResult, h *History, cur int32) map[string]int32 {
	if len(triggers) == 0 {
		h.Failures = nil
		return nil
	}
	// Most ticks of most workloads have no failure: no map for them.
	var next map[string]int32
	for i := range triggers {
		name := triggers[i].Name
		r := findResult(results, name)
		switch {
		case r != nil && (r.NotEvaluated || cur == 0 && r.Err == nil && !r.OK):
			if n := h.Failures[name]; n > 0 {
				next = setFailures(next, len(triggers), name, n)
			}
		case r == nil || r.Err != nil || sampleProblem(r.Sample) != "":
			next = setFailures(next, len(triggers), name, h.Failures[name]+1)
		}
	}
	h.Failures = next
	return next
}

func setFailures(m map[string]int32, size int, name string, n int32) map[string]int32 {
	if m == nil {
		m = make(map[string]int32, size)
	}
	m[name] = n
	return m
}

// fallbackState adds trigger name, asking for replicas, to s.
func fallbackState(s *FallbackState, fb *Fallback, name string, replicas int32) *FallbackState {
	if s == nil {
		behavior := fb.Behavior
		if behavior == "" {
			behavior = FallbackStatic
		}
		s = &FallbackState{FailureThreshold: fb.FailureThreshold, Behavior: behavior, Replicas: replicas}
	}
	s.Triggers = append(s.Triggers, name)
	return s
}
