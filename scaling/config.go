package scaling

// The config types themselves (Config, Trigger, Idle, Schedule,
// ScaleDownTimeout, Fallback, ScalingModifiers) are generated from
// api/v1alpha1/autoscaling_types.go into zz_generated.config.go, and their
// deepcopy into zz_generated.deepcopy.go (`make generate`): a field is
// added to the API type, once. This file holds what the API types have no
// room for: the named string types and the methods.

// FallbackBehavior says which count a failing trigger stands for, with
// KEDA's names and meanings.
type FallbackBehavior string

const (
	// FallbackStatic: Fallback.Replicas (the default).
	FallbackStatic FallbackBehavior = "static"
	// FallbackCurrentReplicas: the current count.
	FallbackCurrentReplicas FallbackBehavior = "currentReplicas"
	// FallbackCurrentReplicasIfHigher: the current count when it is above
	// Fallback.Replicas, Fallback.Replicas otherwise.
	FallbackCurrentReplicasIfHigher FallbackBehavior = "currentReplicasIfHigher"
	// FallbackCurrentReplicasIfLower: the current count when it is below
	// Fallback.Replicas, Fallback.Replicas otherwise.
	FallbackCurrentReplicasIfLower FallbackBehavior = "currentReplicasIfLower"
)

// FallbackReplicas is the count a trigger in fallback stands for when the
// workload runs cur replicas.
func (f *Fallback) FallbackReplicas(cur int32) int32 {
	switch f.Behavior {
	case FallbackCurrentReplicas:
		return cur
	case FallbackCurrentReplicasIfHigher:
		return max(cur, f.Replicas)
	case FallbackCurrentReplicasIfLower:
		return min(cur, f.Replicas)
	default:
		return f.Replicas
	}
}

// TargetType says how a trigger's value compares with its threshold, with the
// meaning autoscaling/v2 gives the same words.
type TargetType string

const (
	// TargetValue: desired = ceil(current * value / threshold).
	TargetValue TargetType = "Value"
	// TargetAverageValue: desired = ceil(value / threshold); value is a total
	// across the workload and threshold is what one replica can take.
	TargetAverageValue TargetType = "AverageValue"
)

// Pinned reports whether the config names exactly one count (min == max):
// no autoscaling range, so it follows replicas.
func (c *Config) Pinned() bool {
	return c != nil && c.MinReplicas != nil && c.MaxReplicas != nil && *c.MinReplicas == *c.MaxReplicas
}

// HasRange reports whether the config lets an autoscaler choose (min < max).
func (c *Config) HasRange() bool {
	return c != nil && c.MinReplicas != nil && c.MaxReplicas != nil && *c.MinReplicas < *c.MaxReplicas
}
