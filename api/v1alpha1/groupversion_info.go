// Package v1alpha1 holds scaleplane's API types, group scaleplane.io,
// version v1alpha1: ScaleProfile, the cluster-scoped object that tells
// scaleplane where one workload kind keeps its replicas, scale config and
// member groups; Autoscaling and TriggerAutoscaling, the scale config as a
// type an operator embeds in its own API; and the names (labels,
// annotations, field managers, event reasons) every package shares.
//
// Its ScaleProfileSpec is also what the component configuration
// (package api/config/v1alpha2) lists as profiles and what package profile
// compiles. The package holds types and constants only: defaults,
// validation and everything that reads or writes a workload belong to
// package profile. deepcopy and the CRD (config/crd/bases) are generated
// from it by controller-gen (`make generate`).
//
// +kubebuilder:object:generate=true
// +groupName=scaleplane.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of this package's types.
	GroupVersion = schema.GroupVersion{Group: "scaleplane.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a scheme. It is
	// apimachinery's builder, not controller-runtime's, so that API
	// consumers link no controller code.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this group and version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ScaleProfile{}, &ScaleProfileList{}, &Scaling{}, &ScalingList{}, &ScaleHandle{}, &ScaleHandleList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
