package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Placeholders a profile may use in pod label values (both) and in the HPA
// target's name (${name} only).
const (
	// NamePlaceholder stands for the workload's name.
	NamePlaceholder = "${name}"
	// MemberGroupPlaceholder stands for a member group's name.
	MemberGroupPlaceholder = "${group}"
)

// ScaleProfileSpec says where one workload kind keeps what the scaling
// contract talks about: its replicas (R), its scale config (C), its member
// groups such as racks or zones (G), and the status fields scaleplane
// writes. Paths are written as in kubectl's JSONPath without braces: a
// leading dot, then field names separated by dots (".spec.replicas"); no
// indexes or filters. Desired state lives under .spec and observed state
// under .status, as the API server requires of a CRD's /scale paths.
//
// The component configuration lists the same spec as its profiles. Fields
// left out take the defaults package profile documents
// (docs/profiles.md), and package profile checks every rule with field
// paths; the schema below is a first line only.
type ScaleProfileSpec struct {
	// Target is the workload kind this profile describes.
	Target TargetKind `json:"target"`

	// ReplicasPath is the path of R, under .spec. Default .spec.replicas.
	// +kubebuilder:validation:Pattern=`^\.spec(\.[A-Za-z_][A-Za-z0-9_-]*)+$`
	// +optional
	ReplicasPath string `json:"replicasPath,omitempty"`

	// ScaleConfig is where C lives: exactly one of path and annotation.
	ScaleConfig ScaleConfigLocation `json:"scaleConfig"`

	// MemberGroups describes the kind's member groups (racks, zones):
	// a list in the spec, each item with a name and a member count, and
	// where they report readiness. Left out for kinds without member
	// groups.
	// +optional
	MemberGroups *MemberGroups `json:"memberGroups,omitempty"`

	// Status names the status paths scaleplane writes (C2, C3).
	// +optional
	Status StatusPaths `json:"status,omitempty"`

	// Pods says how the pods of a workload are labelled, for the /scale
	// selector and for scraping.
	// +optional
	Pods Pods `json:"pods,omitempty"`

	// HPATarget is the object a built-in HPA scales. Default: the
	// workload itself, through /scale.
	// +optional
	HPATarget HPATarget `json:"hpaTarget,omitempty"`

	// MaxReplicas is the upper bound for R (V1). Default 1000.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxReplicas int32 `json:"maxReplicas,omitempty"`

	// DefaultMetrics are the autoscaling/v2 metrics of a built-in HPA when
	// C has a range but no metrics of its own.
	// +listType=atomic
	// +optional
	DefaultMetrics []autoscalingv2.MetricSpec `json:"defaultMetrics,omitempty"`
}

// TargetKind names a workload kind and the resource it is served as.
type TargetKind struct {
	// APIVersion is the kind's group/version, e.g.
	// samples.scaleplane.io/v1alpha1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`

	// Kind is the kind, e.g. RackedCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Resource is the plural resource name, lowercase, e.g.
	// rackedclusters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Resource string `json:"resource"`
}

// ScaleConfigLocation names where C lives.
// +kubebuilder:validation:XValidation:rule="has(self.path) != has(self.annotation)",message="set exactly one of path (e.g. \".spec.scaleConfig\") and annotation (e.g. \"scaleplane.io/scale-config\")"
type ScaleConfigLocation struct {
	// Path of C in the spec, e.g. .spec.scaleConfig.
	// +kubebuilder:validation:Pattern=`^\.spec(\.[A-Za-z_][A-Za-z0-9_-]*)+$`
	// +optional
	Path string `json:"path,omitempty"`

	// Annotation is the key of an annotation holding C as JSON, for a
	// CRD whose schema has no room for it, e.g. scaleplane.io/scale-config.
	// +kubebuilder:validation:MaxLength=317
	// +optional
	Annotation string `json:"annotation,omitempty"`

	// Format of the annotation: JSON (default), the scale config as JSON;
	// or SlimFaas, for built-in kinds such as apps/v1 Deployment only,
	// where annotation must be SlimFaas/Function and C is
	// translated from the SlimFaas/* annotations as SlimFaas reads them
	// (docs/slimfaas.md). A SlimFaas config is read only: scaleplane never
	// writes it back.
	// +kubebuilder:validation:Enum=JSON;SlimFaas
	// +optional
	Format ScaleConfigFormat `json:"format,omitempty"`
}

// ScaleConfigFormat is how an annotation holds C.
type ScaleConfigFormat string

const (
	// ScaleConfigFormatJSON is the scale config as JSON in one annotation.
	ScaleConfigFormatJSON ScaleConfigFormat = "JSON"
	// ScaleConfigFormatSlimFaas is SlimFaas's annotations, read as they are.
	ScaleConfigFormatSlimFaas ScaleConfigFormat = "SlimFaas"
)

// MemberGroups describes a list of member groups (racks, zones) in the
// spec and where they report readiness.
type MemberGroups struct {
	// Path of the list, under .spec, e.g. .spec.racks.
	// +kubebuilder:validation:Pattern=`^\.spec(\.[A-Za-z_][A-Za-z0-9_-]*)+$`
	Path string `json:"path"`

	// NameField is the field of an item holding the group's name.
	// Default name.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_-]*$`
	// +optional
	NameField string `json:"nameField,omitempty"`

	// MembersField is the field of an item holding the group's member
	// count. Default members.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_-]*$`
	// +optional
	MembersField string `json:"membersField,omitempty"`

	// Status says where each member group's ready count is reported.
	// +optional
	Status *MemberGroupStatus `json:"status,omitempty"`
}

// MemberGroupStatusStyle is how member groups are reported in status.
// +kubebuilder:validation:Enum=List;Map
type MemberGroupStatusStyle string

const (
	// MemberGroupStatusList is a list of objects, each with a name field.
	MemberGroupStatusList MemberGroupStatusStyle = "List"
	// MemberGroupStatusMap is an object keyed by member group name.
	MemberGroupStatusMap MemberGroupStatusStyle = "Map"
)

// MemberGroupStatus names where member groups report readiness.
type MemberGroupStatus struct {
	// Path of the list or map, under .status, e.g. .status.racks.
	// +kubebuilder:validation:Pattern=`^\.status(\.[A-Za-z_][A-Za-z0-9_-]*)+$`
	Path string `json:"path"`

	// Style is List (default) or Map.
	// +optional
	Style MemberGroupStatusStyle `json:"style,omitempty"`

	// NameField of a list item. Default name. Must be empty for Map,
	// whose keys are the names.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_-]*$`
	// +optional
	NameField string `json:"nameField,omitempty"`

	// ReadyMembersField of an item. Default readyMembers.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_-]*$`
	// +optional
	ReadyMembersField string `json:"readyMembersField,omitempty"`

	// ObservedGenerationField of an item, if the kind reports one: C2
	// then writes status replicas only once every group has caught up.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_-]*$`
	// +optional
	ObservedGenerationField string `json:"observedGenerationField,omitempty"`
}

// StatusPaths names the status paths scaleplane owns.
type StatusPaths struct {
	// ReplicasPath is where scaleplane writes the status replicas (C2):
	// the CRD's /scale statusReplicasPath, under .status.
	// +kubebuilder:validation:Pattern=`^\.status(\.[A-Za-z_][A-Za-z0-9_-]*)+$`
	// +optional
	ReplicasPath string `json:"replicasPath,omitempty"`

	// SelectorPath is where scaleplane writes the /scale selector (C3):
	// the CRD's labelSelectorPath, under .status.
	// +kubebuilder:validation:Pattern=`^\.status(\.[A-Za-z_][A-Za-z0-9_-]*)+$`
	// +optional
	SelectorPath string `json:"selectorPath,omitempty"`
}

// Pods says how a workload's pods are labelled. Values may use ${name}
// (the workload's name) and ${group} (a member group's name).
type Pods struct {
	// Labels every pod of the workload carries. Required when
	// status.selectorPath is set.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// MemberGroupLabel is the label holding a pod's member group name;
	// with it the /scale selector picks the pods of one member group (C3).
	// +optional
	MemberGroupLabel string `json:"memberGroupLabel,omitempty"`
}

// HPATarget is the object a built-in HPA scales.
type HPATarget struct {
	// APIVersion and Kind of a child object; both empty means the
	// workload itself.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`

	// Name of the child; ${name} is the workload's name. Default ${name}.
	// +optional
	Name string `json:"name,omitempty"`
}

// Self reports whether the HPA targets the workload itself.
func (t HPATarget) Self() bool { return t.Kind == "" }

// Scope is whether a kind's objects live in a namespace.
// +kubebuilder:validation:Enum=Namespaced;Cluster
type Scope string

const (
	ScopeNamespaced Scope = "Namespaced"
	ScopeCluster    Scope = "Cluster"
)

// ScaleProfileStatus is what scaleplane observed of a ScaleProfile.
type ScaleProfileStatus struct {
	// Conditions: Active says whether scaleplane runs the profile, and
	// its reason why not.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Resource is the target as the API server serves it, e.g.
	// rackedclusters.samples.scaleplane.io.
	// +optional
	Resource string `json:"resource,omitempty"`

	// Scope of the target kind.
	// +optional
	Scope Scope `json:"scope,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ScaleProfile makes a workload kind with a /scale subresource a kind
// scaleplane scales: its spec is the profile of one kind.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sprof
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="API Version",type=string,JSONPath=`.spec.target.apiVersion`,priority=1
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScaleProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ScaleProfileSpec `json:"spec"`
	// +optional
	Status ScaleProfileStatus `json:"status,omitempty"`
}

// ScaleProfileList is a list of ScaleProfiles.
//
// +kubebuilder:object:root=true
type ScaleProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScaleProfile `json:"items"`
}
