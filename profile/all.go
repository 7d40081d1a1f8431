package profile

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// ValidateAll checks a list of profiles, such as a configuration's
// (fp "profiles"): each one as Validate does, at fp[i], and that no two
// profile one kind or use one resource. It reports every problem at once.
func ValidateAll(specs []v1alpha1.ScaleProfileSpec, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	// One kind once, whatever its versions: two profiles at two versions
	// would get two webhooks per request (matchPolicy Equivalent sends
	// each version's requests to both) and two controllers writing one
	// object, and ScaleProfiles make the second a Conflict.
	gks := map[schema.GroupKind]int{}
	gvrs := map[schema.GroupVersionResource]int{}
	for i := range specs {
		p := clone(&specs[i])
		Default(&p)
		ip := fp.Index(i)
		errs = append(errs, validate(&p, ip)...)
		gv, err := schema.ParseGroupVersion(p.Target.APIVersion)
		if err != nil {
			continue // reported by validate
		}
		gvk := gv.WithKind(p.Target.Kind)
		if j, dup := gks[gvk.GroupKind()]; dup {
			errs = append(errs, field.Duplicate(ip.Child("target", "kind"), fmt.Sprintf("%s %s", gvk.GroupVersion(), gvk.Kind)+
				fmt.Sprintf(" (already profiled by %s; one profile per kind, whatever the version: merge the two or remove one)", fp.Index(j))))
		} else {
			gks[gvk.GroupKind()] = i
		}
		gvr := gv.WithResource(p.Target.Resource)
		if j, dup := gvrs[gvr]; dup && p.Target.Resource != "" {
			errs = append(errs, field.Duplicate(ip.Child("target", "resource"), fmt.Sprintf("%s (already used by %s for another kind)", gvr.GroupResource(), fp.Index(j))))
		} else {
			gvrs[gvr] = i
		}
	}
	return errs
}

// CompileAll compiles every profile of a configuration, in order. An
// invalid profile is reported with its index, all of them at once, and so
// are two profiles of one kind or resource.
func CompileAll(specs []v1alpha1.ScaleProfileSpec) ([]*Compiled, error) {
	compiled := make([]*Compiled, 0, len(specs))
	var errs []error
	for i, spec := range specs {
		c, err := Compile(spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("profiles[%d]: %w", i, err))
			continue
		}
		compiled = append(compiled, c)
	}
	if len(errs) == 0 {
		// Only the duplicates are left to find: every profile is valid.
		if dups := ValidateAll(specs, field.NewPath("profiles")); len(dups) > 0 {
			errs = append(errs, dups.ToAggregate())
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return compiled, nil
}
