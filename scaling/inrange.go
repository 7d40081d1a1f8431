package scaling

import "fmt"

// What acts in a config's range, decided with the tests the built-in HPA
// (C4, DecideHPA) and the trigger autoscaler use, so that W1 and the
// Scaling say what will actually happen to R rather than that "an
// autoscaler" will.

// Reasons a range has no autoscaler that can act on R now. They are the
// Scaling's Active reasons too.
const (
	// InRangeHPADisabled: the built-in HPA's workload is at 0 replicas; the
	// HPA controller does not scale a target at zero (its ScalingActive
	// condition says ScalingDisabled).
	InRangeHPADisabled = "HPAScalingDisabled"
	// InRangeNoAutoscaler: the range has no metrics (and the profile gives
	// none), no triggers and no idle settings.
	InRangeNoAutoscaler = "NoMetricsOrTriggers"
	// InRangeClusterScoped: metrics on a cluster-scoped kind, which no HPA
	// can scale.
	InRangeClusterScoped = "ClusterScopedMetrics"
)

// RangeActor says who moves R within eff's range (M2 applied) for a
// workload at replicas (nil when unset): actor names it ("the built-in
// HPA", "scaleplane's autoscaler") when one can act now; otherwise actor is
// empty and reason and note say why nothing will. A config without a range
// has no actor and no reason.
func RangeActor(replicas *int32, eff *Config, l Layout) (actor, reason, note string) {
	if !eff.HasRange() {
		return "", "", ""
	}
	rp := replicasPath(l)
	switch {
	case len(eff.Triggers) > 0 || eff.Idle != nil:
		return "scaleplane's autoscaler", "", ""
	case len(eff.Metrics) > 0 || l.HasDefaultMetrics:
		if l.ClusterScoped {
			return "", InRangeClusterScoped, "an HPA cannot scale a cluster-scoped workload (it is namespaced and reads its target's /scale in its own namespace), so no built-in HPA acts in the range: use triggers instead of metrics"
		}
		if replicas != nil && *replicas == 0 {
			return "", InRangeHPADisabled, fmt.Sprintf("the built-in HPA does not scale a workload at 0 replicas (the HPA controller reports ScalingDisabled): %s stays at 0 until it is set to at least 1", rp)
		}
		return "the built-in HPA", "", ""
	}
	return "", InRangeNoAutoscaler, fmt.Sprintf("the range %d..%d has no metrics, triggers or idle settings, so no autoscaler of scaleplane's acts in it: %s stays where kubectl scale or your own autoscaler sets it",
		*eff.MinReplicas, *eff.MaxReplicas, rp)
}
