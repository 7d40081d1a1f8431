package profile

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// ScaleHandleProfile is the profile of scaleplane's own ScaleHandle kind:
// R at .spec.replicas, C at .spec.scaleConfig, the HPA on the handle
// itself through its /scale. With it a handle is a profiled kind like any
// other: admission (M1–M7, V1–V11, S1), the pin following R (C1), the
// built-in HPA (C4, C5), the trigger autoscaler, Scaling objects and
// explain all work on it unchanged.
//
// It names no status paths and no member groups: the handle's groups live
// in its target, and the handle reconciler (package controllers, run by
// the kind's controller) writes the handle's status.replicas and
// status.selector from the target (C2, C3) under the same field manager,
// so no second writer may own those fields.
func ScaleHandleProfile() v1alpha1.ScaleProfileSpec {
	return v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.ScaleHandleKind, Resource: v1alpha1.ScaleHandleResource},
		ReplicasPath: ".spec.replicas",
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Path: ".spec.scaleConfig"},
	}
}

// HandleTarget compiles the view of a ScaleHandle's target: its member
// groups and pod labels as the handle's spec names them. Only Read's
// groups, group status and generation, WriteSpec's group members and
// PodSelector are meaningful on it; the target has no R and no C of its
// own (they are the handle's). Problems are reported at the handle's own
// paths (spec.memberGroups..., spec.pods...).
func HandleTarget(spec v1alpha1.ScaleHandleSpec) (*Compiled, field.ErrorList) {
	// Defaulting below must not reach the caller's spec.
	spec = *spec.DeepCopy()
	groups := spec.MemberGroups
	p := v1alpha1.ScaleProfileSpec{
		// The resource is never used: the target is read and written by
		// kind. A valid guess keeps validate's target rules quiet.
		Target: v1alpha1.TargetKind{APIVersion: spec.TargetRef.APIVersion, Kind: spec.TargetRef.Kind, Resource: plural(spec.TargetRef.Kind)},
		// R and C stay on the handle; these paths are never read into a
		// decision nor written (callers leave Replicas and Config nil).
		ReplicasPath: DefaultReplicasPath,
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Annotation: v1alpha1.AnnotationScaleConfig},
		MemberGroups: &groups,
		Pods:         spec.Pods,
	}
	Default(&p)
	var errs field.ErrorList
	sp := field.NewPath("spec")
	for _, e := range validate(&p, nil) {
		// validate's paths are the profile's; the handle holds the same
		// fields under spec (target under spec.targetRef).
		f := *e
		switch {
		case hasPrefix(f.Field, "target"):
			f.Field = sp.Child("targetRef").String() + f.Field[len("target"):]
		default:
			f.Field = sp.String() + "." + f.Field
		}
		errs = append(errs, &f)
	}
	// The handle's /scale selector is built from pods.labels; with member
	// groups it must pick one group's pods, or an HPA overshoots by the
	// number of groups (C3).
	if len(p.Pods.Labels) > 0 && p.Pods.MemberGroupLabel == "" {
		errs = append(errs, field.Required(sp.Child("pods", "memberGroupLabel"), "pods.labels is set, so name the label holding a pod's member group: the handle's /scale selector must match the pods of one member group, or an HPA overshoots by the number of member groups (C3)"))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return compile(p), nil
}

func hasPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && s[:len(prefix)] == prefix && (len(s) == len(prefix) || s[len(prefix)] == '.' || s[len(prefix)] == '[')
}
