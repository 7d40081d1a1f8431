package scaling

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Config is a workload's scale config (C in the contract). A Kyma-style
// scaleConfig holding only minReplicas and maxReplicas is a Config too.
//
// Pointers distinguish "absent" from "zero" because defaulting (M2) fills only
// absent fields and must never overwrite what a user set.
type Config struct {
	// MinReplicas is the lower bound of the autoscaling range. Defaults to 1.
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the upper bound. Defaults to max(minReplicas, replicas).
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// Metrics drive a built-in HorizontalPodAutoscaler, exactly as in an
	// autoscaling/v2 HPA.
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`
	// Behavior tunes scaling speed and stabilization, for the built-in HPA and
	// for the trigger autoscaler alike.
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
	// Triggers drive scaleplane's own autoscaler from PromQL (or another
	// registered scaler). Mutually exclusive with Metrics (V6).
	Triggers []Trigger `json:"triggers,omitempty"`
	// Idle enables scale to zero after a period without activity.
	Idle *Idle `json:"idle,omitempty"`
	// Schedule wakes the workload and shortens idle timeouts by time of day.
	Schedule *Schedule `json:"schedule,omitempty"`
	// DependsOn names workloads of the same kind in the same namespace that
	// must be awake (ready replicas > 0) before this one wakes from zero.
	DependsOn []string `json:"dependsOn,omitempty"`
	// PollingIntervalSeconds overrides the autoscaler's evaluation interval
	// (default 15 s) for this workload.
	PollingIntervalSeconds *int32 `json:"pollingIntervalSeconds,omitempty"`
	// Fallback is the count a trigger stands for once it has failed more
	// than FailureThreshold times in a row (KEDA's fallback). Without it a
	// failing trigger keeps the current count.
	Fallback *Fallback `json:"fallback,omitempty"`
	// ScalingModifiers combine the triggers' values with a formula into
	// the one metric the count follows (KEDA's scalingModifiers, V13).
	ScalingModifiers *ScalingModifiers `json:"scalingModifiers,omitempty"`
}

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

// Fallback is what a trigger that keeps failing stands for (V12).
type Fallback struct {
	// FailureThreshold is how many failures in a row a trigger may have
	// before the fallback applies: it applies from failure
	// FailureThreshold+1 on, and the next success ends it.
	FailureThreshold int32 `json:"failureThreshold"`
	// Replicas is the fallback count of the static behavior, and the bound
	// of the currentReplicasIf* behaviors.
	Replicas int32 `json:"replicas"`
	// Behavior is static (default), currentReplicas,
	// currentReplicasIfHigher or currentReplicasIfLower.
	Behavior FallbackBehavior `json:"behavior,omitempty"`
}

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

// Trigger is one signal of the built-in autoscaler.
type Trigger struct {
	// Name identifies the trigger in events, metrics and explanations; unique
	// within a Config.
	Name string `json:"name"`
	// Type is Value or AverageValue.
	Type TargetType `json:"type"`
	// Source selects the scaler that produces the value: "promql" (the
	// embedded store, the default), "prometheus" (a remote server), "cron", or
	// any type a library user registered.
	Source string `json:"source,omitempty"`
	// Query is a PromQL expression; ${namespace} and ${name} are replaced by
	// the workload's namespace and name before evaluation.
	Query string `json:"query,omitempty"`
	// Threshold is the target value (per replica for AverageValue). > 0.
	Threshold float64 `json:"threshold"`
	// ActivationThreshold is the value above which a workload at zero wakes.
	ActivationThreshold *float64 `json:"activationThreshold,omitempty"`
	// Metadata carries source-specific settings (for example the remote
	// server address, or a cron window).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Idle configures scale to zero.
type Idle struct {
	// ReplicasAtStart is the count a workload wakes to from zero.
	ReplicasAtStart *int32 `json:"replicasAtStart,omitempty"`
	// TimeoutSeconds without activity before the workload may go to zero.
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// Schedule adds time-of-day rules, evaluated in TimeZone.
type Schedule struct {
	// TimeZone is an IANA name such as "Europe/Paris"; defaults to UTC.
	TimeZone string `json:"timeZone,omitempty"`
	// WakeUp lists HH:mm times at which a workload at zero wakes.
	WakeUp []string `json:"wakeUp,omitempty"`
	// ScaleDownTimeout lists idle timeouts that apply from a time of day on.
	ScaleDownTimeout []ScaleDownTimeout `json:"scaleDownTimeout,omitempty"`
}

// ScaleDownTimeout is the idle timeout in force from Time (HH:mm) until the
// next entry's time.
type ScaleDownTimeout struct {
	Time    string `json:"time"`
	Seconds int32  `json:"seconds"`
}

// Pinned reports whether the config names exactly one count (min == max):
// no autoscaling range, so it follows replicas.
func (c *Config) Pinned() bool {
	return c != nil && c.MinReplicas != nil && c.MaxReplicas != nil && *c.MinReplicas == *c.MaxReplicas
}

// HasRange reports whether the config lets an autoscaler choose (min < max).
func (c *Config) HasRange() bool {
	return c != nil && c.MinReplicas != nil && c.MaxReplicas != nil && *c.MinReplicas < *c.MaxReplicas
}
