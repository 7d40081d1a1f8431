package scaling

import (
	"fmt"

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

// ScaleReplicasPath is where a Scale keeps its count, whatever the
// parent's replicas path: the object being judged is the Scale.
var ScaleReplicasPath = field.NewPath("spec", "replicas")

// ScaleNeedsParent reports whether CheckScale's answer for r depends on the
// parent workload; when it does not, the webhook answers without reading it.
func ScaleNeedsParent(r ScaleRequest, l Layout) bool {
	return r.Replicas >= 0 && !keepsCount(r) && !(l.MaxReplicas > 0 && r.Replicas > l.MaxReplicas) &&
		(l.TargetSelf || l.Schema != (Schema{}))
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
	refuse := func(detail string) *field.Error { return field.Invalid(ScaleReplicasPath, n, detail) }
	if n < 0 {
		return refuse("must be greater than or equal to 0")
	}
	if keepsCount(r) {
		return nil
	}
	if l.MaxReplicas > 0 && n > l.MaxReplicas {
		return refuse(fmt.Sprintf("must be less than or equal to %d, the upper bound this kind's profile allows; scale to %d or less, or raise the profile's maxReplicas", l.MaxReplicas, l.MaxReplicas))
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
	switch {
	case n > hi:
		return refuse(fmt.Sprintf("outside the autoscaling range [%d, %d] of %s; raise %s to %d or more, or pin the config (minReplicas = maxReplicas) to scale by hand",
			lo, hi, names.Config, names.Max, n))
	case n < lo:
		return refuse(fmt.Sprintf("outside the autoscaling range [%d, %d] of %s; lower %s to %d or less, or pin the config (minReplicas = maxReplicas) to scale by hand",
			lo, hi, names.Config, names.Min, n))
	}
	return nil
}
