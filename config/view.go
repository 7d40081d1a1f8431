package config

import (
	"errors"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

// errNotImplemented marks the skeleton; replaced by the real view.
var errNotImplemented = errors.New("not implemented")

// View reads and writes one workload kind's fields as its profile says.
// Build it with NewView, which validates the profile once.
type View struct {
	profile Profile
}

// NewView validates p (paths, kind, status style) and prepares its paths.
func NewView(p Profile) (*View, error) { return &View{profile: p}, errNotImplemented }

// Profile returns the (defaulted) profile behind the view.
func (v *View) Profile() Profile { return v.profile }

// GVK is the workload's GroupVersionKind.
func (v *View) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: v.profile.Group, Version: v.profile.Version, Kind: v.profile.Kind}
}

// GVR is the workload's GroupVersionResource.
func (v *View) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: v.profile.Group, Version: v.profile.Version, Resource: v.profile.Resource}
}

// Layout tells package scaling where the values live.
func (v *View) Layout() scaling.Layout { return scaling.Layout{} }

// Read returns the profile's view of u. A field of the wrong type, or a
// scale config annotation that is not strict JSON of the Config schema
// (V9), is reported at its exact path.
func (v *View) Read(u *unstructured.Unstructured) (scaling.Workload, field.ErrorList) {
	return scaling.Workload{}, nil
}

// WriteSpec writes the values scaleplane may own in the spec: R, C's
// minReplicas and maxReplicas (creating C at a spec path when w.Config is set
// and C is absent), and every group's members. Everything else in u, known
// or not, is left as it was.
func (v *View) WriteSpec(u *unstructured.Unstructured, w scaling.Workload) error {
	return errNotImplemented
}

// StatusReplicasPath and SelectorPath are the status fields written by C2
// and C3, as path segments; nil when the profile names none.
func (v *View) StatusReplicasPath() []string { return nil }
func (v *View) SelectorPath() []string       { return nil }

// PodSelector is the /scale selector for u (C3): the workload's pod labels
// plus, for grouped kinds, the group label with the first group's name, so it
// matches one pod per unit of status.replicas.
func (v *View) PodSelector(u *unstructured.Unstructured) (string, error) { return "", errNotImplemented }

// HPATargetRef is what a built-in HPA for u scales.
func (v *View) HPATargetRef(u *unstructured.Unstructured) autoscalingv2.CrossVersionObjectReference {
	return autoscalingv2.CrossVersionObjectReference{}
}
