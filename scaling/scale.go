package scaling

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// S1: the /scale subresource's range check. A write through /scale never
// reaches the main resource's webhooks, so this is the only place an
// out-of-range `kubectl scale` can be refused. The webhook decodes the
// autoscaling/v1 Scale, asks ScaleNeedsParent whether the parent must be
// read, reads it, and returns what CheckScale says.

// ScaleRequest is one write of a Scale's spec.replicas.
type ScaleRequest struct {
	// Replicas is the count being written.
	Replicas int32
	// OldReplicas is the count the Scale had, nil when unknown.
	OldReplicas *int32
	// Parent is the workload whose Scale is written, as read now; nil when
	// it was not read (ScaleNeedsParent said so) or does not exist.
	Parent *Workload
}

// ScaleNames are how refusals name the scale config and its bounds for a
// profile: "spec.scaleConfig", "spec.scaleConfig.maxReplicas", or "the
// annotation scaleplane.io/scale-config", "maxReplicas in the annotation
// scaleplane.io/scale-config".
type ScaleNames struct {
	Config, Min, Max string
}

// ScaleNeedsParent reports whether CheckScale's answer for r depends on the
// parent workload; when it does not, the webhook answers without reading it.
func ScaleNeedsParent(r ScaleRequest, l Layout) bool {
	return r.Replicas >= 0 && !keepsCount(r) && !(l.MaxReplicas > 0 && r.Replicas > l.MaxReplicas) &&
		(l.TargetSelf || !l.Schema.limitsNothing())
}

// keepsCount: a write that keeps the count (an HPA or KEDA re-asserting it)
// is not a scaling decision; refusing it would only fail their loop.
func keepsCount(r ScaleRequest) bool {
	return r.OldReplicas != nil && *r.OldReplicas == r.Replicas
}

// CheckScale is S1 and S2: it refuses replicas below 0, above the profile's upper
// bound (V1, which the main resource's validation would otherwise catch
// only on the next edit), whose follow-up writes the schema refuses (S2,
// ScaleFollowUp), or outside [minReplicas, maxReplicas] while the
// parent's scale config (with M2's defaults for missing bounds) has a range
// that an autoscaler of the workload itself acts in, saying which bound to
// move. It returns nil to allow. For a kind whose HPA targets a child object
// (TargetSelf false) the range is the child's, and a count written through
// the parent's /scale selects external scaling (W2), so it is not held to
// the range. Everything else is allowed: the controller fans the new count
// out (C1).
func CheckScale(r ScaleRequest, l Layout, names ScaleNames) *field.Error {
	n := r.Replicas
	// The count lands in the kind's own replicas field: refusals name it,
	// as the API server's own refusal of the write would.
	refuse := func(detail string) *field.Error { return field.Invalid(replicasPath(l), n, detail) }
	if n < 0 {
		return refuse("must be greater than or equal to 0")
	}
	if keepsCount(r) {
		return nil
	}
	if l.MaxReplicas > 0 && n > l.MaxReplicas {
		return refuse(fmt.Sprintf("must be less than or equal to %d, the upper bound this kind's profile allows; scale to %d or less, or raise the profile's maxReplicas", l.MaxReplicas, l.MaxReplicas))
	}
	// The schema of the field itself, or of the member counts it is
	// copied to: no change of the scale config could make n writable.
	if f, why := countRefusal(l, n); f != "" {
		return refuse(fmt.Sprintf("%s cannot be %d: %s; this kind cannot be scaled to %d; %s", f, n, why, n, scaleToAccepted(l)))
	}
	if r.Parent == nil {
		return nil
	}
	// S2: a count whose follow-up writes (C1) the schema refuses could
	// never be carried to the pin or the member groups.
	if e := ScaleFollowUp(*r.Parent, n, l); e != nil {
		return e
	}
	if !l.TargetSelf || r.Parent.Config == nil {
		return nil
	}
	c := Default(nil, *r.Parent, l).Config
	if !c.HasRange() {
		return nil
	}
	lo, hi := *c.MinReplicas, *c.MaxReplicas
	if n >= lo && n <= hi {
		return nil
	}
	// Each piece of advice is one the schema and the rules accept: a bound
	// moved to n, or a pin at n, which C1 then follows.
	var advice []string
	switch {
	case n > hi && boundAccepts(l, false, n):
		advice = append(advice, fmt.Sprintf("raise %s to %d or more", names.Max, n))
	case n < lo && boundAccepts(l, true, n):
		a := fmt.Sprintf("lower %s to %d or less", names.Min, n)
		if n == 0 && len(c.Triggers) == 0 && c.Idle == nil {
			// V2: a range from zero needs something to wake the workload.
			a += " and add triggers or idle settings"
		}
		advice = append(advice, a)
	}
	if boundAccepts(l, true, n) && boundAccepts(l, false, n) {
		advice = append(advice, "pin the config (minReplicas = maxReplicas) to scale by hand")
	}
	if len(advice) == 0 {
		return refuse(fmt.Sprintf("outside the autoscaling range [%d, %d] of %s, and no range or pin the schema accepts holds %d: this count cannot be reached; scale within [%d, %d]",
			lo, hi, names.Config, n, lo, hi))
	}
	return refuse(fmt.Sprintf("outside the autoscaling range [%d, %d] of %s; %s",
		lo, hi, names.Config, strings.Join(advice, ", or ")))
}

// boundAccepts reports whether the scale config's minReplicas (min) or
// maxReplicas may hold n: its schema at a spec path, and the schema of the
// fields the range's counts are written to.
func boundAccepts(l Layout, min bool, n int32) bool {
	if f, _ := countRefusal(l, n); f != "" {
		return false
	}
	if l.ConfigInAnnotation {
		return true
	}
	if min {
		return l.Schema.MinReplicas.Refuses(n) == ""
	}
	return l.Schema.MaxReplicas.Refuses(n) == ""
}

// scaleToAccepted is the advice to scale to a count the schema accepts,
// with the counts it accepts.
func scaleToAccepted(l Layout) string {
	lo, hi := CountLimits(l)
	lo = max(lo, 0)
	if l.MaxReplicas > 0 {
		hi = min(hi, l.MaxReplicas)
	}
	switch {
	case lo > hi:
		return "and no count can be written to it"
	case hi == math.MaxInt32:
		return fmt.Sprintf("scale to %d or more", lo)
	}
	return fmt.Sprintf("scale to a count from %d to %d", lo, hi)
}
