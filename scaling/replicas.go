package scaling

import (
	"math"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// StandardTolerance is the HPA controller's default
// --horizontal-pod-autoscaler-tolerance: a usage ratio within 10 % of 1
// changes nothing.
const StandardTolerance = 0.1

// Tolerances is the dead band around a usage ratio of 1, per direction.
type Tolerances struct {
	// Up: a ratio up to 1+Up does not scale up.
	Up float64 `json:"up"`
	// Down: a ratio down to 1-Down does not scale down.
	Down float64 `json:"down"`
}

// Within reports whether a usage ratio is too close to 1 to act on. NaN is
// never within.
func (t Tolerances) Within(ratio float64) bool {
	return 1-t.Down <= ratio && ratio <= 1+t.Up
}

// TolerancesFor returns the tolerances a behavior asks for (autoscaling/v2
// scaleUp.tolerance and scaleDown.tolerance), base for a direction that sets
// none.
func TolerancesFor(b *autoscalingv2.HorizontalPodAutoscalerBehavior, base float64) Tolerances {
	t := Tolerances{Up: base, Down: base}
	if b == nil {
		return t
	}
	if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
		t.Up = b.ScaleUp.Tolerance.AsApproximateFloat64()
	}
	if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
		t.Down = b.ScaleDown.Tolerance.AsApproximateFloat64()
	}
	return t
}

// TriggerReplicas is the count one trigger asks for, as the HPA computes it
// for an External (or Object) metric:
//
//   - Value: the ratio is value/threshold; desired = ceil(ratio * current).
//   - AverageValue: the ratio is value/(threshold*current);
//     desired = ceil(value/threshold).
//
// A ratio within the tolerances keeps current. From zero replicas there is no
// tolerance: Value asks for ceil(value/threshold) (the HPA's "scale to zero
// or n pods depending on the ratio"), AverageValue for ceil(value/threshold).
// The result is never negative and saturates at MaxInt32. ratio is NaN when
// it is undefined (AverageValue at zero replicas).
func TriggerReplicas(typ TargetType, value, threshold float64, current int32, tol Tolerances) (desired int32, ratio float64, within bool) {
	switch typ {
	case TargetAverageValue:
		ratio = math.NaN()
		if current > 0 {
			ratio = value / (threshold * float64(current))
			if tol.Within(ratio) {
				return current, ratio, true
			}
		}
		return ceilReplicas(value / threshold), ratio, false
	default:
		ratio = value / threshold
		if current == 0 {
			return ceilReplicas(ratio), ratio, false
		}
		if tol.Within(ratio) {
			return current, ratio, true
		}
		return ceilReplicas(ratio * float64(current)), ratio, false
	}
}

func ceilReplicas(f float64) int32 {
	c := math.Ceil(f)
	switch {
	case c >= math.MaxInt32:
		return math.MaxInt32
	case c <= 0 || math.IsNaN(c):
		return 0
	}
	return int32(c)
}
