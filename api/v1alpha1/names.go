package v1alpha1

// Names shared by every package: field managers, labels, annotations and
// event reasons live here so that a rename happens once.
const (
	// FieldManager is the server-side apply field manager of every write
	// scaleplane makes.
	FieldManager = "scaleplane"
	// AutoscalerFieldManager writes spec.replicas through /scale for the
	// trigger autoscaler, so managedFields tell its writes from a person's.
	AutoscalerFieldManager = "scaleplane-autoscaler"
	// ActivityFieldManager patches a Scaling's status.lastActivity, from
	// whichever replica received POST /activity/...
	ActivityFieldManager = "scaleplane-activity"

	// LabelManagedBy marks objects scaleplane creates (HPAs).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "scaleplane"
	// LabelWorkloadKind and LabelWorkloadName name the workload an object
	// belongs to.
	LabelWorkloadKind = "scaleplane.io/workload-kind"
	LabelWorkloadName = "scaleplane.io/workload-name"
	// LabelWorkloadGroup is the API group of the workload's kind, on
	// Scalings and built-in HPAs (on an HPA only when the group is a valid
	// label value). A value longer than a label holds is cut and ends in a hash.
	LabelWorkloadGroup = "scaleplane.io/workload-group"
	// LabelOwner marks the webhook configurations and the ScaleProfiles
	// one scaleplane binary or embedding operator owns; its value is that
	// owner's name. Each entry it owns ends in "."+owner+OwnerEntrySuffix.
	// A ScaleProfile without it is DefaultOwner's.
	LabelOwner = "scaleplane.io/owner"
	// DefaultOwner is the scaleplane binary's owner unless its
	// configuration names another.
	DefaultOwner = "scaleplane"
	// OwnerEntrySuffix ends every webhook entry name, after the owner.
	OwnerEntrySuffix = ".scaleplane.io"
	// LabelAdmission set to AdmissionDisabled on a namespace takes it out
	// of every scaleplane webhook entry: the break-glass for one namespace
	// (docs/production.md).
	LabelAdmission    = "scaleplane.io/admission"
	AdmissionDisabled = "disabled"

	// AnnotationScaleConfig is the conventional annotation holding a scale
	// config as JSON for CRDs whose schema has no room for one.
	AnnotationScaleConfig = "scaleplane.io/scale-config"
	// AnnotationPaused stops the trigger autoscaler for a workload ("true").
	AnnotationPaused = "scaleplane.io/paused"
	// AnnotationPausedReplicas pins the replicas while paused.
	AnnotationPausedReplicas = "scaleplane.io/paused-replicas"

	// Event reasons (docs/autoscaling.md lists them). ScaledGroups is a
	// fan-out that set member groups' sizes; Scaled is any other change of
	// the count: the autoscaler's /scale write, or a fan-out that only
	// re-pinned the scale config of a kind without member groups.
	ReasonScaledGroups      = "ScaledGroups"
	ReasonStatusReplicas    = "StatusReplicasUpdated"
	ReasonHPAApplied        = "HPAApplied"
	ReasonHPADeleted        = "HPADeleted"
	ReasonForeignAutoscaler = "ForeignAutoscaler"
	ReasonScaled            = "Scaled"
	ReasonInvalidTrigger    = "InvalidTrigger"
	// ReasonTriggerThrottled: a trigger was not evaluated because its
	// namespace is over its fair share of the evaluation slots or spent its
	// budget of samples or evaluation time (autoscaler.fairness).
	ReasonTriggerThrottled = "TriggerThrottled"
	// ReasonFallbackActive: a trigger failed more than its fallback's
	// failureThreshold allows and stands for the fallback count (the
	// Fallback condition's reason, and the Warning on entering it).
	ReasonFallbackActive = "FallbackActive"
	// ReasonFallbackEnded: every trigger in fallback succeeded again (the
	// Normal event on leaving it).
	ReasonFallbackEnded           = "FallbackEnded"
	ReasonWriteFailed             = "WriteFailed"
	ReasonCertificateRotated      = "CertificateRotated"
	ReasonWebhookConfigurationSet = "WebhookConfigurationUpdated"

	// ConditionActive is the ScaleProfile condition that says whether
	// scaleplane runs the profile; its reason says why not.
	ConditionActive = "Active"
)

// Reasons of a ScaleProfile's Active condition.
const (
	ProfileReasonActive         = "Active"
	ProfileReasonCRDNotServed   = "CRDNotServed"
	ProfileReasonSchemaMismatch = "SchemaMismatch"
	ProfileReasonRBACMissing    = "RBACMissing"
	ProfileReasonInvalid        = "Invalid"
	ProfileReasonConflict       = "Conflict"
	// ProfileReasonWebhooksNotInstalled: in GitOps mode, the kind runs but
	// the webhook configurations (the user's repository's) lack its
	// entries, so its objects are not judged at admission.
	ProfileReasonWebhooksNotInstalled = "WebhooksNotInstalled"
)
