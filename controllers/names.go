package controllers

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Names owned by this package. The shared ones (field manager, labels,
// event reasons) live in package api/v1alpha1.
const (
	// ControllerPrefix starts every controller name:
	// scaleplane-<kind>.<group> (ControllerName).
	ControllerPrefix = "scaleplane-"
	// EventRecorderName is the source component of every event the
	// controllers and the autoscaler record (EventRecorder).
	EventRecorderName = "scaleplane-controller"

	// hpaTargetIndex indexes HPAs by their scaleTargetRef as
	// "<group>/<Kind>/<name>", so finding the autoscalers of one workload
	// does not scan every HPA of its namespace.
	hpaTargetIndex = "scaleplane.io/hpa-scale-target"

	// ReasonHPANameTaken is the Warning reason when an object we do not own
	// already holds the built-in HPA's name.
	ReasonHPANameTaken = "HPANameTaken"
	// ReasonHPANotPossible is the Warning reason when a config asks for an
	// HPA that cannot exist (a cluster-scoped workload).
	ReasonHPANotPossible = "HPANotPossible"
	// ReasonInvalidWorkload is the Warning reason when a workload's fields
	// cannot be read as its profile says.
	ReasonInvalidWorkload = "InvalidWorkload"
	// ReasonInvalidSelector is the Warning reason when the /scale selector
	// cannot be built (a group name that is not a label value).
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonTargetNotFound is the Warning reason when a ScaleHandle's
	// target does not exist (yet).
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonTargetNotReadable is the Warning reason when a ScaleHandle's
	// target kind is not served, or scaleplane may not read or patch it.
	ReasonTargetNotReadable = "TargetNotReadable"
	// ReasonHandleConflict is the Warning reason when another, older
	// ScaleHandle already sizes the same target.
	ReasonHandleConflict = "ScaleHandleConflict"
)

// ControllerName is the name of the controller of kind gk under prefix:
// <prefix><kind in lower case>.<group>, so that two kinds of one name in
// two API groups have two controllers (names must be unique in a manager,
// and they label controller-runtime's metrics).
func ControllerName(prefix string, gk schema.GroupKind) string {
	name := prefix + strings.ToLower(gk.Kind)
	if gk.Group != "" {
		name += "." + gk.Group
	}
	return name
}
