package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Autoscaling is the scale config as an API type, for an operator author
// to embed in a workload's spec, e.g. `Autoscaling *v1alpha1.Autoscaling
// `json:"autoscaling,omitempty"“ with a profile whose
// scaleConfig.specPath is spec.autoscaling. It holds what the built-in
// HorizontalPodAutoscaler mode needs: the range and, optionally, the
// HPA's own metrics and behavior. Triggers are opt-in: embed
// TriggerAutoscaling instead when the operator wires scaleplane's trigger
// autoscaler (scaleplane.Builder.WithAutoscaler).
//
// The JSON form is exactly the scale config scaleplane reads at a spec
// path (docs/contract.md, docs/profiles.md), so the rules (V1–V11) and
// defaults (M1–M7) apply unchanged; controller-gen turns it into a
// structural schema with no floats (trigger thresholds are quantities, as
// an HPA's metric targets are).
type Autoscaling struct {
	// MinReplicas is the lower bound of the autoscaling range. Left out,
	// 1, or 0 when maxReplicas is 0 (M2). A workload with replicas and no
	// scale config at all gets one pinned to spec.replicas (M1).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the upper bound of the autoscaling range. Left out,
	// the larger of minReplicas and spec.replicas (M2).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// Metrics drive a built-in HorizontalPodAutoscaler, exactly as in an
	// autoscaling/v2 HPA.
	// +listType=atomic
	// +optional
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`
	// Behavior tunes scaling speed and stabilization, as an HPA's does,
	// for the built-in HPA and the trigger autoscaler alike.
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// TriggerAutoscaling is Autoscaling plus scaleplane's trigger autoscaler:
// PromQL (or another registered source) triggers, scale to zero after an
// idle timeout, wake-up schedules and dependencies. Embed it only when the
// operator wires the trigger autoscaler: without it, admission refuses a
// config with triggers, saying so.
type TriggerAutoscaling struct {
	Autoscaling `json:",inline"`
	// Triggers drive the trigger autoscaler; mutually exclusive with
	// metrics (V6).
	// +listType=map
	// +listMapKey=name
	// +optional
	Triggers []Trigger `json:"triggers,omitempty"`
	// Idle enables scale to zero after a period without activity.
	// +optional
	Idle *Idle `json:"idle,omitempty"`
	// Schedule wakes the workload and shortens idle timeouts by time of day.
	// +optional
	Schedule *Schedule `json:"schedule,omitempty"`
	// DependsOn names workloads of the same kind in the same namespace
	// that must be awake before this one wakes from zero.
	// +listType=set
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`
	// PollingIntervalSeconds overrides the autoscaler's evaluation interval
	// for this workload.
	// +kubebuilder:validation:Minimum=1
	// +optional
	PollingIntervalSeconds *int32 `json:"pollingIntervalSeconds,omitempty"`
	// Fallback is the count a trigger stands for once it has failed more
	// than failureThreshold times in a row (KEDA's fallback, V12). Without
	// it a failing trigger keeps the current count.
	// +optional
	Fallback *Fallback `json:"fallback,omitempty"`
	// ScalingModifiers combine the triggers' values with a CEL formula
	// into the one metric the count follows (KEDA's scalingModifiers,
	// V13).
	// +optional
	ScalingModifiers *ScalingModifiers `json:"scalingModifiers,omitempty"`
}

// ScalingModifiers are a formula over the triggers' values and the target
// its result is held to.
type ScalingModifiers struct {
	// Formula is a CEL expression of type double over the triggers' names,
	// e.g. "(queue + backlog) / 2.0". Numbers are doubles: write 2.0.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Formula string `json:"formula"`
	// Target is the value one replica takes (AverageValue) or the value
	// to hold (Value). A quantity, as a trigger's threshold.
	Target resource.Quantity `json:"target"`
	// ActivationTarget is the value above which a workload at zero
	// wakes. Default 0.
	// +optional
	ActivationTarget *resource.Quantity `json:"activationTarget,omitempty"`
	// MetricType is AverageValue (default) or Value.
	// +kubebuilder:validation:Enum=Value;AverageValue
	// +optional
	MetricType string `json:"metricType,omitempty"`
}

// Fallback is what a trigger that keeps failing (its source errors, or
// gives no series, NaN or Inf) stands for.
type Fallback struct {
	// FailureThreshold is how many failures in a row a trigger may have;
	// from the next one on it stands for the fallback count, until it
	// succeeds again.
	// +kubebuilder:validation:Minimum=0
	FailureThreshold int32 `json:"failureThreshold"`
	// Replicas is the fallback count (behavior static), or the bound the
	// currentReplicasIf* behaviors compare the current count with.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// Behavior is static (default: replicas), currentReplicas (keep the
	// current count), currentReplicasIfHigher (the current count if above
	// replicas) or currentReplicasIfLower (the current count if below
	// replicas).
	// +kubebuilder:validation:Enum=static;currentReplicas;currentReplicasIfHigher;currentReplicasIfLower
	// +optional
	Behavior string `json:"behavior,omitempty"`
}

// Trigger is one signal of the trigger autoscaler.
type Trigger struct {
	// Name identifies the trigger in events, metrics and explanations;
	// unique among the triggers.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Type says how the value compares with the threshold: Value (the
	// workload's value against the threshold) or AverageValue (a total,
	// the threshold being what one replica can take).
	// +kubebuilder:validation:Enum=Value;AverageValue
	Type string `json:"type"`
	// Source names the trigger source (promql, prometheus, cron, or one
	// the operator registered); left out, the configured default.
	// +optional
	Source string `json:"source,omitempty"`
	// Query is the source's query, e.g. PromQL with ${namespace} and
	// ${name} placeholders.
	// +optional
	Query string `json:"query,omitempty"`
	// Threshold is the target: per replica for AverageValue. A quantity
	// ("0.5", "500m", 10), as an HPA's metric targets are.
	Threshold resource.Quantity `json:"threshold"`
	// ActivationThreshold is the value above which a workload at zero
	// wakes. Default 0.
	// +optional
	ActivationThreshold *resource.Quantity `json:"activationThreshold,omitempty"`
	// Metadata carries source-specific settings (a cron window).
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Idle is scale to zero after a period without activity.
type Idle struct {
	// ReplicasAtStart is the count a workload wakes to from zero.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ReplicasAtStart *int32 `json:"replicasAtStart,omitempty"`
	// TimeoutSeconds without activity (and with every trigger asking for
	// zero) before scaling to zero.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// Schedule adds time-of-day rules, evaluated in TimeZone.
type Schedule struct {
	// TimeZone is an IANA name such as "Europe/Paris"; default UTC.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
	// WakeUp lists HH:mm times at which a workload at zero wakes.
	// +listType=atomic
	// +optional
	WakeUp []string `json:"wakeUp,omitempty"`
	// ScaleDownTimeout lists idle timeouts that apply from a time of day on.
	// +listType=atomic
	// +optional
	ScaleDownTimeout []ScaleDownTimeout `json:"scaleDownTimeout,omitempty"`
}

// ScaleDownTimeout is the idle timeout in force from Time (HH:mm) until
// the next entry's time.
type ScaleDownTimeout struct {
	// Time of day, HH:mm.
	Time string `json:"time"`
	// Seconds of idle timeout from Time on.
	// +kubebuilder:validation:Minimum=1
	Seconds int32 `json:"seconds"`
}
