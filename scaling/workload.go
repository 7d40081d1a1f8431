package scaling

import "k8s.io/apimachinery/pkg/util/validation/field"

// Workload is a profile's view of one workload object: the values the
// contract talks about, with no knowledge of where they live in the object.
type Workload struct {
	// Name is metadata.name; empty when not known (a create with
	// generateName), and then no rule that needs it applies.
	Name string
	// Replicas is R; nil when the field is absent.
	Replicas *int32
	// Config is C; nil when absent.
	Config *Config
	// Groups are the racks (G), in object order. Empty for kinds without
	// groups.
	Groups []Group
	// GroupStatus is what each group reports in status, in object order.
	GroupStatus []GroupStatus
	// StatusReplicas is the current status.replicas, nil when absent.
	StatusReplicas *int32
	// Generation is metadata.generation, compared with observed generations.
	Generation int64
}

// Group is one rack or group of a workload.
type Group struct {
	Name string
	// Members is nil when the field is absent.
	Members *int32
}

// GroupStatus is a group's reported state.
type GroupStatus struct {
	Name         string
	ReadyMembers *int32
	// ObservedGeneration is nil where the profile names no such field.
	ObservedGeneration *int64
}

// Layout says where a workload's values live, so decisions can report exact
// field paths and apply rules that depend on the profile. Webhooks and
// controllers build it from the profile.
type Layout struct {
	// ReplicasPath is R's path, e.g. spec.replicas.
	ReplicasPath *field.Path
	// ConfigPath is C's path: a spec path such as spec.scaleConfig, or
	// metadata.annotations[scaleplane.io/scale-config].
	ConfigPath *field.Path
	// ConfigInAnnotation is true when C is JSON in an annotation (M1 does not
	// create an annotation the user did not write; V9 applies).
	ConfigInAnnotation bool
	// GroupsPath is the groups list path, e.g. spec.racks; nil without groups.
	GroupsPath *field.Path
	// GroupNameField and GroupMembersField name the fields of one group.
	GroupNameField, GroupMembersField string
	// TargetSelf is true when the HPA targets the workload through /scale;
	// false when it targets a child object (Kyma's runtime Deployment).
	TargetSelf bool
	// MaxReplicas is the profile's upper bound for R (V1).
	MaxReplicas int32
	// HasDefaultMetrics is true when the profile supplies metrics for configs
	// that give none (C4).
	HasDefaultMetrics bool
	// ClusterScoped is true for a cluster-scoped kind. No HPA can scale one:
	// an HPA is namespaced and reads its target's /scale in its own
	// namespace (KEDA's ScaledObject likewise), so C4 never wants one.
	ClusterScoped bool
	// GroupNamesInSelector is true when group names become label values of
	// the pods' selectors (the profile's pods.memberGroupLabel, or ${group} in a
	// pod label), so they must be valid label values (V11).
	GroupNamesInSelector bool
	// Schema is what the CRD's served schema accepts in the fields
	// scaleplane writes (M7, S2, C6); the zero value limits nothing.
	Schema Schema
}
