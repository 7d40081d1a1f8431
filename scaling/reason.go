package scaling

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// The text of a decision of the HPA step: pure functions of the Decision
// that Decide built, so that every number a reason shows is one the
// decision used (the per-replica value an AverageValue target is compared
// with is the sample divided by the current count, as TriggerReplicas
// divides it), and the window or policy that held or limited the count is
// named with its own values. A part whose values the decision does not
// carry is left out, never guessed.

// HPAReason is the reason of a decision of the HPA step (Decide's step 4):
// the headline (Scale up/Scale down/Keep), the trigger that gave the
// recommendation with the values it was judged by, then the stabilization
// window that held the count and the bound or policy that limited it.
//
//	Scale down from 6 to 4: q=7 over 6 replicas is 1.17 per replica, below the target 2: asks for ceil(7 / 2) = 4
//	Keep 6: q=7 over 6 replicas is 1.17 per replica, below the target 2: asks for ceil(7 / 2) = 4; desired 4, held at 6 by the 300 s scale-down window until 12:04:10 UTC
func HPAReason(d Decision) string {
	var b strings.Builder
	switch {
	case d.Desired > d.Current:
		b.WriteString("Scale up from ")
		b.WriteString(strconv.Itoa(int(d.Current)))
		b.WriteString(" to ")
		b.WriteString(strconv.Itoa(int(d.Desired)))
	case d.Desired < d.Current:
		b.WriteString("Scale down from ")
		b.WriteString(strconv.Itoa(int(d.Current)))
		b.WriteString(" to ")
		b.WriteString(strconv.Itoa(int(d.Desired)))
	default:
		b.WriteString("Keep ")
		b.WriteString(strconv.Itoa(int(d.Current)))
	}
	var parts []string
	if best := recommendingTrigger(d); best >= 0 {
		t := d.Triggers[best]
		clause := TriggerReason(t, d.Current, d.Tolerances)
		if valid := countValid(d.Triggers); valid > 1 {
			clause += " (the highest of " + strconv.Itoa(valid) + " triggers)"
		}
		parts = append(parts, clause)
	}
	if held := HeldReason(d); held != "" {
		parts = append(parts, held)
	}
	if lim := limitReason(d); lim != "" {
		parts = append(parts, lim)
	} else if b := boundReason(d); b != "" {
		parts = append(parts, b)
	}
	if len(parts) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(parts, "; "))
	}
	return b.String()
}

// recommendingTrigger is the index of the valid trigger whose count is
// the recommendation (the first of equals, as Decide picks it), -1 when
// none.
func recommendingTrigger(d Decision) int {
	best := -1
	for i, t := range d.Triggers {
		if (t.Valid || t.Fallback) && (best < 0 || t.Desired > d.Triggers[best].Desired) {
			best = i
		}
	}
	return best
}

func countValid(ts []TriggerDecision) int {
	n := 0
	for _, t := range ts {
		if t.Valid || t.Fallback {
			n++
		}
	}
	return n
}

// TriggerReason says how one valid trigger was judged at current replicas
// and the count it asks for, from the same values TriggerReplicas used:
//
//	AverageValue: rps=103 over 2 replicas is 51.5 per replica, above the target 20: asks for ceil(103 / 20) = 6
//	Value:        latency=0.8 is 1.6 times the target 0.5: asks for ceil(1.6 × 3) = 5
func TriggerReason(t TriggerDecision, current int32, tol Tolerances) string {
	if t.Fallback {
		return fmt.Sprintf("trigger %s failed %d %s in a row (%s), so it stands for its fallback count %d", t.Name, t.Failures, plural(t.Failures, "time"), t.Problem, t.Desired)
	}
	// Appended rather than printed with fmt: every tick of every workload
	// builds one, and fmt's boxing of each value was a tenth of a tick's
	// allocations outside the queries.
	b := make([]byte, 0, 192)
	b = append(b, t.Name...)
	b = append(b, '=')
	b = appendNum(b, t.Value)
	switch t.Type {
	case TargetAverageValue:
		if current > 0 {
			per := t.Value / float64(current)
			b = append(b, " over "...)
			b = strconv.AppendInt(b, int64(current), 10)
			b = append(b, " replica"...)
			if current != 1 {
				b = append(b, 's')
			}
			b = append(b, " is "...)
			b = appendShort(b, per)
			b = append(b, " per replica, "...)
			b = appendCompare(b, per, t.Threshold, t.WithinTolerance, t.Ratio, tol)
			b = append(b, " the target "...)
			b = appendNum(b, t.Threshold)
		} else {
			b = append(b, " at a target of "...)
			b = appendNum(b, t.Threshold)
			b = append(b, " per replica"...)
		}
		if t.WithinTolerance {
			b = append(b, ": keeps "...)
			b = strconv.AppendInt(b, int64(current), 10)
		} else {
			b = append(b, ": asks for ceil("...)
			b = appendNum(b, t.Value)
			b = append(b, " / "...)
			b = appendNum(b, t.Threshold)
			b = append(b, ") = "...)
			b = strconv.AppendInt(b, int64(t.Desired), 10)
		}
	default:
		b = append(b, " is "...)
		b = appendShort(b, t.Ratio)
		b = append(b, " times the target "...)
		b = appendNum(b, t.Threshold)
		switch {
		case t.WithinTolerance:
			b = append(b, ", within the tolerance ("...)
			b = appendBand(b, tol)
			b = append(b, "): keeps "...)
			b = strconv.AppendInt(b, int64(current), 10)
		case current == 0:
			b = append(b, ": asks for ceil("...)
			b = appendShort(b, t.Ratio)
			b = append(b, ") = "...)
			b = strconv.AppendInt(b, int64(t.Desired), 10)
		default:
			b = append(b, ": asks for ceil("...)
			b = appendShort(b, t.Ratio)
			b = append(b, " × "...)
			b = strconv.AppendInt(b, int64(current), 10)
			b = append(b, ") = "...)
			b = strconv.AppendInt(b, int64(t.Desired), 10)
		}
	}
	return string(b)
}

// appendCompare appends where a per-replica value stands against its
// target: within the tolerance band (the ratio the decision computed),
// above or below.
func appendCompare(b []byte, per, target float64, within bool, ratio float64, tol Tolerances) []byte {
	switch {
	case within:
		b = append(b, "within the tolerance (ratio "...)
		b = appendShort(b, ratio)
		b = append(b, ", "...)
		b = appendBand(b, tol)
		return append(b, ") of"...)
	case per > target:
		return append(b, "above"...)
	case per < target:
		return append(b, "below"...)
	}
	return append(b, "at"...)
}

// appendBand appends the tolerance band, "band 0.9..1.1".
func appendBand(b []byte, tol Tolerances) []byte {
	b = append(b, "band "...)
	b = appendShort(b, 1-tol.Down)
	b = append(b, ".."...)
	return appendShort(b, 1+tol.Up)
}

// HeldReason says how a stabilization window held the count away from the
// recommendation ("desired 4, held at 6 by the 300 s scale-down window
// until 12:04:10 UTC"), "" when no window changed it.
// A window whose count the range's bounds would give anyway (desired 0,
// held at 1, with minReplicas 1) held nothing and is not reported.
func HeldReason(d Decision) string {
	if d.Stabilization == "" || d.Stabilized < 0 || d.Recommended < 0 || d.Stabilized == d.Recommended {
		return ""
	}
	lo := d.Min
	if lo == 0 && d.Max > 0 {
		lo = 1 // the HPA step never goes below 1 (Decide, step 3)
	}
	if min(max(d.Recommended, lo), d.Max) == d.Desired {
		return ""
	}
	dir := "scale-down"
	if d.Stabilization == StabilizedScaleUp {
		dir = "scale-up"
	}
	s := fmt.Sprintf("desired %d, held at %d by the %d s %s window", d.Recommended, d.Stabilized, d.StabilizationWindowSeconds, dir)
	if !d.StabilizedUntil.IsZero() {
		s += " until " + d.StabilizedUntil.UTC().Format("15:04:05") + " UTC"
	}
	return s
}

// LimitedReason says how a scale-up or scale-down policy kept the count
// from where the stabilized recommendation would put it ("desired 5,
// limited to 2 by the scale-up selectPolicy Disabled"), "" when none did.
func LimitedReason(d Decision) string {
	if (d.Limit != LimitScaleUp && d.Limit != LimitScaleDown) || d.Stabilized < 0 || d.Desired == d.Stabilized {
		return ""
	}
	by := d.LimitPolicy
	if by == "" {
		by = d.Limit
	}
	return fmt.Sprintf("desired %d, limited to %d by %s", d.Stabilized, d.Desired, by)
}

// limitReason names the bound or policy that moved the stabilized count,
// "" when none did.
func limitReason(d Decision) string {
	if d.Limit == "" || d.Limit == LimitNone || d.Stabilized < 0 || d.Desired == d.Stabilized {
		return ""
	}
	switch d.Limit {
	case LimitTooMany:
		return fmt.Sprintf("capped at maxReplicas %d", d.Desired)
	case LimitTooFew:
		return fmt.Sprintf("raised to minReplicas %d", d.Desired)
	}
	if d.LimitPolicy == "" {
		return fmt.Sprintf("limited to %d by %s", d.Desired, d.Limit)
	}
	return fmt.Sprintf("limited to %d by %s", d.Desired, d.LimitPolicy)
}

// boundReason names the bound that gave the count when a window held the
// count where the bound would have put it anyway (HeldReason is then
// silent and the limit step had nothing left to do).
func boundReason(d Decision) string {
	if d.Recommended < 0 || d.Desired == d.Recommended {
		return ""
	}
	switch {
	case d.Recommended < d.Min && d.Desired == d.Min:
		return fmt.Sprintf("raised to minReplicas %d", d.Min)
	case d.Min == 0 && d.Recommended < 1 && d.Desired == 1:
		return "kept at 1: a range from 0 goes to zero only when idle"
	case d.Recommended > d.Max && d.Desired == d.Max:
		return fmt.Sprintf("capped at maxReplicas %d", d.Max)
	}
	return ""
}

// policyText describes one direction's rules as the limit step applied
// them, for LimitPolicy.
func policyText(direction string, r directionRules) string {
	if r.selector == autoscalingv2.DisabledPolicySelect {
		return fmt.Sprintf("the %s selectPolicy Disabled", direction)
	}
	ps := make([]string, len(r.policies))
	for i, p := range r.policies {
		switch p.Type {
		case autoscalingv2.PercentScalingPolicy:
			ps[i] = fmt.Sprintf("%d%% per %d s", p.Value, p.PeriodSeconds)
		default:
			ps[i] = fmt.Sprintf("%d %s per %d s", p.Value, plural(p.Value, "pod"), p.PeriodSeconds)
		}
	}
	if len(ps) == 1 {
		return fmt.Sprintf("the %s policy %s", direction, ps[0])
	}
	return fmt.Sprintf("the %s policies (selectPolicy %s of %s)", direction, r.selector, strings.Join(ps, ", "))
}

// legacyScaleUpText is LimitPolicy for the behavior-less scale-up limit.
func legacyScaleUpText(current int32) string {
	return fmt.Sprintf("the scale-up limit without a behavior (max(2 × %d, 4) = %d)", current, legacyScaleUpLimit(current))
}

// heldUntil is when the stabilization that holds the count at held ends:
// the latest time a recommendation on held's side of the window (at least
// held for a scale-down window, at most held for a scale-up one) leaves
// it. Zero when none is in the window.
func heldUntil(recs []Recommendation, held int32, scaleDown bool, window time.Duration, now time.Time) time.Time {
	var until time.Time
	for _, r := range recs {
		end := r.Time.Add(window)
		if end.Before(now) || (scaleDown && r.Replicas < held) || (!scaleDown && r.Replicas > held) {
			continue
		}
		if end.After(until) {
			until = end
		}
	}
	return until
}

func plural(n int32, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// appendShort appends a value computed for a reason (a per-replica value,
// a ratio) with three significant digits.
func appendShort(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', 3, 64)
}

// FallbackReason says which triggers stand for the fallback count, why,
// and what count the decision came to; "" without a fallback.
func FallbackReason(d Decision) string {
	f := d.Fallback
	if f == nil {
		return ""
	}
	var problems []string
	for _, t := range d.Triggers {
		if t.Fallback {
			problems = append(problems, fmt.Sprintf("%s failed %d %s in a row (%s)", t.Name, t.Failures, plural(t.Failures, "time"), t.Problem))
		}
	}
	return fmt.Sprintf("%s, more than the failureThreshold %d: it stands for the fallback count %d (behavior %s); decided %d",
		strings.Join(problems, "; "), f.FailureThreshold, f.Replicas, f.Behavior, d.Desired)
}

// appendNum appends f as fmtNum prints it.
func appendNum(b []byte, f float64) []byte { return strconv.AppendFloat(b, f, 'g', 6, 64) }
