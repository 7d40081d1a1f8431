package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScalingMode is who sets a workload's replica count.
// +kubebuilder:validation:Enum=pinned;hpa;triggers;external;paused
type ScalingMode string

const (
	// ScalingModePinned: no autoscaling range (no scale config, or
	// minReplicas = maxReplicas); the count is set by hand and the pin
	// follows it (C1).
	ScalingModePinned ScalingMode = "pinned"
	// ScalingModeHPA: the built-in HPA scales the workload (C4).
	ScalingModeHPA ScalingMode = "hpa"
	// ScalingModeTriggers: scaleplane's trigger autoscaler scales it.
	ScalingModeTriggers ScalingMode = "triggers"
	// ScalingModeExternal: something outside scaleplane sets the count
	// (a foreign HPA or KEDA ScaledObject, or a range nothing of
	// scaleplane acts in).
	ScalingModeExternal ScalingMode = "external"
	// ScalingModePaused: a pause annotation holds the autoscaler.
	ScalingModePaused ScalingMode = "paused"
)

// Scaling condition types, modelled on KEDA's ScaledObject (Ready, Active,
// Paused, Fallback) and the HPA's (AbleToScale, ScalingActive).
const (
	// ScalingReady: scaleplane reads the workload as its profile says and
	// its last write succeeded.
	ScalingReady = "Ready"
	// ScalingActive: the workload is scaled above zero by an autoscaler
	// acting now (triggers active or awake, the HPA running).
	ScalingActive = "Active"
	// ScalingPaused: a pause annotation holds the count.
	ScalingPaused = "Paused"
	// ScalingFallback: some triggers have no usable value, so the count is
	// kept instead of following them.
	ScalingFallback = "Fallback"
	// TriggerHealthy and TriggerFailing are a trigger's health
	// (TriggerStatus.Health), with KEDA's words.
	TriggerHealthy = "Happy"
	TriggerFailing = "Failing"
	// TriggerTypeFormulaInput is the type of a trigger listed as an input
	// of the scale config's scalingModifiers formula, after the formula's
	// own result (named scalingModifiers).
	TriggerTypeFormulaInput = "FormulaInput"
)

// ScalingTargetRef names the workload a Scaling describes.
type ScalingTargetRef struct {
	// APIVersion is the workload's group/version.
	APIVersion string `json:"apiVersion"`
	// Kind is the workload's kind.
	Kind string `json:"kind"`
	// Name is the workload's name, in the Scaling's namespace (or, for a
	// cluster-scoped kind, without a namespace).
	Name string `json:"name"`
}

// ScalingSpec names the workload. scaleplane writes it; nothing reads it
// back as desired state.
type ScalingSpec struct {
	// TargetRef is the workload.
	TargetRef ScalingTargetRef `json:"targetRef"`
}

// TriggerStatus is one trigger on the autoscaler's last tick.
type TriggerStatus struct {
	// Name of the trigger in the scale config.
	Name string `json:"name"`
	// Type is Value or AverageValue.
	// +optional
	Type string `json:"type,omitempty"`
	// Value is the last sample, as a decimal; empty when it had none.
	// +optional
	Value string `json:"value,omitempty"`
	// Threshold is the target the value is compared with.
	// +optional
	Threshold string `json:"threshold,omitempty"`
	// Active: the value is above the activation threshold.
	// +optional
	Active bool `json:"active,omitempty"`
	// Problem says why the trigger had no usable value.
	// +optional
	Problem string `json:"problem,omitempty"`
	// Health is Happy when the trigger's last evaluation gave a usable
	// value, Failing otherwise (KEDA's health status).
	// +optional
	Health string `json:"health,omitempty"`
	// Failures is how many evaluations in a row have failed; 0 when the
	// last one succeeded.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// Fallback: the trigger failed more than the fallback's threshold
	// allows and stands for the fallback count.
	// +optional
	Fallback bool `json:"fallback,omitempty"`
}

// ScalingDecision is one decision of the autoscaler that changed (or tried
// to change) the count.
type ScalingDecision struct {
	Time    metav1.MicroTime `json:"time"`
	Current int32            `json:"current"`
	Desired int32            `json:"desired"`
	// Action is ScaleUp, ScaleDown, WakeUp, ScaleToZero, None or
	// WaitForDependencies.
	Action string `json:"action"`
	Reason string `json:"reason"`
	// Error is the failed write's error.
	// +optional
	Error string `json:"error,omitempty"`
}

// ScalingRecommendation is one unstabilized desired count.
type ScalingRecommendation struct {
	Replicas int32            `json:"replicas"`
	Time     metav1.MicroTime `json:"time"`
}

// ScalingEvent is one change the autoscaler made, for the behavior's
// policy periods.
type ScalingEvent struct {
	Change int32            `json:"change"`
	Time   metav1.MicroTime `json:"time"`
	// +optional
	Outdated bool `json:"outdated,omitempty"`
}

// ScalingHistory is the autoscaler's memory a new leader restores before
// its first decision: the HPA's recommendations and scale events (for the
// stabilization windows and the policies' periods) and the idle timer.
type ScalingHistory struct {
	// Recommendations within the longest stabilization window, the newest
	// of each run of equal counts (what a window's min or max needs).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Recommendations []ScalingRecommendation `json:"recommendations,omitempty"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	ScaleUpEvents []ScalingEvent `json:"scaleUpEvents,omitempty"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	ScaleDownEvents []ScalingEvent `json:"scaleDownEvents,omitempty"`
	// LastActive is the latest activity the autoscaler acted on (a signal
	// or an active trigger).
	// +optional
	LastActive *metav1.MicroTime `json:"lastActive,omitempty"`
	// AwakeSince is when the workload was last seen waking from zero.
	// +optional
	AwakeSince *metav1.MicroTime `json:"awakeSince,omitempty"`
	// LastScaleTime is when the autoscaler last changed the count.
	// +optional
	LastScaleTime *metav1.MicroTime `json:"lastScaleTime,omitempty"`
	// Failures counts, per trigger name, its failed evaluations in a row,
	// so that a new leader keeps a fallback (or the way to one).
	// +kubebuilder:validation:MaxProperties=100
	// +optional
	Failures map[string]int32 `json:"failures,omitempty"`
}

// ScalingStatus is what scaleplane does with one workload and why.
type ScalingStatus struct {
	// Target is Kind/name of the workload, for kubectl's TARGET column.
	// +optional
	Target string `json:"target,omitempty"`
	// Mode is who sets the workload's count.
	// +optional
	Mode ScalingMode `json:"mode,omitempty"`
	// Replicas is the count the workload is asked to run (R).
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// DesiredReplicas is the count the autoscaler decided last.
	// +optional
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`
	// MinReplicas and MaxReplicas are the range in force.
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// Conditions: Ready, Active, Paused, Fallback.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Triggers are the triggers' last values and thresholds.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Triggers []TriggerStatus `json:"triggers,omitempty"`
	// Decisions are the last decisions that changed, or tried to change,
	// the count, oldest first (at most 10).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Decisions []ScalingDecision `json:"decisions,omitempty"`
	// LastScaleTime is when the count last changed by scaleplane's
	// autoscaler.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// LastActivity is the latest POST /activity/... any replica received.
	// Written by a status patch of this field alone, never moved back; the
	// leader's apply never owns it.
	// +optional
	LastActivity *metav1.MicroTime `json:"lastActivity,omitempty"`
	// History is what the autoscaler needs after a leader change.
	// +optional
	History *ScalingHistory `json:"history,omitempty"`
	// ObservedGeneration is the workload's generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Scaling shows what scaleplane does with one profiled workload: who sets
// its count, the autoscaler's last values and decisions, and the memory a
// new leader restores. scaleplane writes it (named <workload>-<kind lower>,
// owned by the workload); read it with kubectl get scalings or
// scaleplane explain.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=scl
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.target`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.status.minReplicas`
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.status.maxReplicas`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].reason`
// +kubebuilder:printcolumn:name="Fallback",type=string,JSONPath=`.status.conditions[?(@.type=="Fallback")].status`
// +kubebuilder:printcolumn:name="Last Scale",type=date,JSONPath=`.status.lastScaleTime`
type Scaling struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ScalingSpec `json:"spec"`
	// +optional
	Status ScalingStatus `json:"status,omitempty"`
}

// ScalingList is a list of Scalings.
//
// +kubebuilder:object:root=true
type ScalingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Scaling `json:"items"`
}
