package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScaleHandleKind is the kind of a ScaleHandle, for the profile that makes
// it a profiled kind of its own (package profile, ScaleHandleProfile).
const (
	ScaleHandleKind     = "ScaleHandle"
	ScaleHandleResource = "scalehandles"
)

// ScaleHandleTarget names the object a ScaleHandle scales, in the handle's
// namespace.
type ScaleHandleTarget struct {
	// APIVersion is the target's group/version, e.g. scylla.scylladb.com/v1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`
	// Kind is the target's kind, e.g. ScyllaCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name is the target's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ScaleHandleSpec holds the one replica count (R) and the scale config (C)
// of a workload whose kind has no /scale subresource and no replicas field,
// and says where that workload keeps its member groups (racks).
// +kubebuilder:validation:XValidation:rule="!has(self.pods) || !has(self.pods.labels) || size(self.pods.labels) == 0 || has(self.pods.memberGroupLabel)",message="pods.labels is set, so set pods.memberGroupLabel too: the handle's /scale selector must match the pods of one member group, or an HPA overshoots by the number of member groups (C3)",fieldPath=".pods.memberGroupLabel"
type ScaleHandleSpec struct {
	// TargetRef is the workload whose member groups the handle sizes. It
	// cannot change: a handle scales one workload for its whole life.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="targetRef is immutable; create another ScaleHandle for another workload"
	TargetRef ScaleHandleTarget `json:"targetRef"`

	// Replicas is R: while set, every member group of the target has
	// exactly this many members (C1), and a group set to another count
	// is put back. Unset, the groups keep the sizes they are given.
	// kubectl scale, an HPA and a KEDA ScaledObject write it through
	// /scale.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// ScaleConfig is C, the same scale config a profiled kind keeps at a
	// spec path: a range with metrics (a built-in HPA on the handle) or
	// triggers, idle and schedule (scaleplane's autoscaler).
	// +optional
	ScaleConfig *TriggerAutoscaling `json:"scaleConfig,omitempty"`

	// MemberGroups says where the target keeps its member groups and
	// where they report readiness, with the same fields as a profile's.
	MemberGroups MemberGroups `json:"memberGroups"`

	// Pods says how the target's pods are labelled, for the /scale
	// selector (C3); ${name} is the target's name.
	// +optional
	Pods Pods `json:"pods,omitempty"`
}

// ScaleHandleStatus is what scaleplane observed of the target.
type ScaleHandleStatus struct {
	// Replicas is the ready count every member group of the target
	// reports, written only when they all agree (C2).
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector matches the pods of one member group of the target (C3),
	// so an HPA counts one pod per unit of replicas.
	// +optional
	Selector string `json:"selector,omitempty"`
}

// ScaleHandle gives a workload whose kind has no /scale subresource one
// replica count: kubectl scale, an HPA's or a KEDA ScaledObject's
// scaleTargetRef name the handle, and scaleplane fans its count out to
// every member group of the target. Neither the target's CRD nor its
// operator changes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:scope=Namespaced,shortName=shandle
// +kubebuilder:printcolumn:name="Target Kind",type=string,JSONPath=`.spec.targetRef.kind`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScaleHandle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ScaleHandleSpec   `json:"spec"`
	Status ScaleHandleStatus `json:"status,omitempty"`
}

// ScaleHandleList is a list of ScaleHandles.
//
// +kubebuilder:object:root=true
type ScaleHandleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScaleHandle `json:"items"`
}
