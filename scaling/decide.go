package scaling

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// FanOut is C1: when R is set, every group gets R members and a pinned
// config is re-pinned to R. It returns the workload to write and whether a
// write is needed; without a write, the returned value equals w.
//
// A pinned config means "no autoscaling range", so it always follows R:
// after kubectl scale, an HPA or KEDA wrote R through /scale (which admission
// on the main resource never sees), the pin would otherwise contradict R.
// A config with a range is left alone: its bounds are the user's, and the
// /scale webhook (S1) already kept R inside them.
func FanOut(w Workload) (Workload, bool) {
	out := w.deepCopy()
	if w.Replicas == nil {
		return out, false
	}
	r := *w.Replicas
	changed := false
	for i := range out.Groups {
		if m := out.Groups[i].Members; m == nil || *m != r {
			out.Groups[i].Members = ptrTo(r)
			changed = true
		}
	}
	if c := out.Config; c.Pinned() && *c.MinReplicas != r {
		*c.MinReplicas, *c.MaxReplicas = r, r
		changed = true
	}
	return out, changed
}

// StatusReplicas is C2: the count status.replicas should hold, and whether
// it differs from what w reports. The count is known only when every group
// in the spec reports readyMembers, all equal, and every group that reports
// an observed generation has caught up with w.Generation; otherwise it
// returns (nil, false) and status.replicas stays as it is, because a count
// from a half-rolled-out workload would make an HPA or KEDA decide on stale
// data.
//
// Kinds without groups get (nil, false) too: their own operator maintains
// status.replicas (that is what makes them scalable at all), and a second
// writer would fight it. Status entries of groups no longer in the spec are
// ignored: they describe racks being removed, not the workload's count.
func StatusReplicas(w Workload) (*int32, bool) {
	if len(w.Groups) == 0 {
		return nil, false
	}
	byName := make(map[string]GroupStatus, len(w.GroupStatus))
	for _, s := range w.GroupStatus {
		byName[s.Name] = s
	}
	var count *int32
	for _, g := range w.Groups {
		s, ok := byName[g.Name]
		if !ok || s.ReadyMembers == nil {
			return nil, false
		}
		if s.ObservedGeneration != nil && *s.ObservedGeneration < w.Generation {
			return nil, false
		}
		if count == nil {
			count = ptrTo(*s.ReadyMembers)
		} else if *count != *s.ReadyMembers {
			return nil, false
		}
	}
	return count, w.StatusReplicas == nil || *w.StatusReplicas != *count
}

// HPADecision is what C4 and C5 decide about the built-in HPA of one
// workload.
type HPADecision struct {
	// Want is true when the built-in HPA should exist with the values below;
	// false means it should not exist (delete ours if there is one).
	Want bool
	// Reason says, when Want is false, why not, in words fit for an event or
	// a status condition.
	Reason string
	// Min and Max are the HPA's minReplicas and maxReplicas.
	Min int32
	Max int32
	// Metrics are the config's metrics, or the profile's defaults when the
	// config has none.
	Metrics []autoscalingv2.MetricSpec
	// Behavior is the config's behavior, nil for the HPA's defaults.
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
}

// DecideHPA is C4 and C5: whether a built-in HPA should exist for w and with
// which spec. foreign names the autoscalers scaleplane does not own that
// target the same workload (e.g. "HorizontalPodAutoscaler/ns/x",
// "ScaledObject/ns/y"); any of them rules the built-in HPA out, because two
// autoscalers on one count fight.
//
// The config is read with the M2 defaults applied. An HPA cannot scale to
// zero, so a range starting at 0 (valid with idle settings) gives an HPA
// from 1; the workload reaches zero through its idle settings, and an HPA
// leaves a workload at zero replicas alone.
func DecideHPA(w Workload, l Layout, defaultMetrics []autoscalingv2.MetricSpec, foreign []string) HPADecision {
	no := func(format string, args ...any) HPADecision {
		return HPADecision{Reason: fmt.Sprintf(format, args...)}
	}
	switch len(foreign) {
	case 0:
	case 1:
		return no("foreign autoscaler %s targets this workload", foreign[0])
	default:
		return no("foreign autoscalers %s target this workload", strings.Join(foreign, ", "))
	}
	c := effectiveConfig(w)
	if c == nil {
		return no("no scale config")
	}
	lo, hi := *c.MinReplicas, *c.MaxReplicas
	switch {
	case c.Pinned():
		return no("scale config pinned at %d: no autoscaling range", lo)
	case !c.HasRange():
		return no("scale config range %d..%d is empty", lo, hi)
	case len(c.Triggers) > 0:
		return no("scale config has triggers: scaleplane's autoscaler scales this workload")
	case !l.TargetSelf && !ReplicasUnset(w, l):
		return no("%s is set: external scaling mode", replicasPath(l))
	}
	metrics := c.Metrics
	if len(metrics) == 0 {
		metrics = defaultMetrics
	}
	if len(metrics) == 0 {
		return no("scale config has no metrics and the profile gives no default metrics")
	}
	if lo < 1 {
		lo = 1
	}
	if lo >= hi {
		return no("scale config range %d..%d leaves an HPA, which cannot scale to zero, no range", *c.MinReplicas, hi)
	}
	if l.ClusterScoped {
		return no("the workload is cluster-scoped and an HPA, which is namespaced and reads its target's /scale in its own namespace, cannot scale it: use triggers instead of metrics")
	}
	d := HPADecision{Want: true, Min: lo, Max: hi, Behavior: c.Behavior.DeepCopy()}
	d.Metrics = make([]autoscalingv2.MetricSpec, len(metrics))
	for i := range metrics {
		metrics[i].DeepCopyInto(&d.Metrics[i])
	}
	return d
}
