package scaling

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate applies the validating admission rules V1–V8, V10 and V11 to w
// (the object after mutation) and returns every problem at its exact field
// path, plus the W1–W2 warnings as sentences for the admission response.
// sources are the trigger sources the autoscaler can build: a trigger is
// checked against the one it names (V11), which checks what only it reads
// (V10 for queries); nil or empty sources refuse every trigger. No rule depends
// on the stored object: ratcheting (letting an UPDATE keep problems the
// stored object already had) is the validating webhook's policy, which
// compares the scaling fields of old and new as a whole.
//
// A config whose bounds are missing (one stored before the webhook existed,
// or an annotation the profile does not rewrite) is judged with the M2
// defaults, so that Validate and the controllers agree on what it means.
// V9 (strict JSON for an annotation) happens when the profile decodes the
// annotation, with profile.DecodeConfigJSON (package profile, which reads every scale config).
func Validate(w Workload, l Layout, sources *Sources) (field.ErrorList, []string) {
	var errs field.ErrorList
	errs = append(errs, validateReplicas(w.Replicas, l)...)
	// The rules and the warnings read the same effective config.
	eff := effectiveConfig(w)
	if w.Config != nil {
		errs = append(errs, validateConfig(w.Config, eff, w.Replicas, l, w.Name, sources)...)
	}
	errs = append(errs, validateGroups(w.Groups, l)...)
	return errs, warnings(w.Replicas, eff, l)
}

func replicasPath(l Layout) *field.Path {
	if l.ReplicasPath != nil {
		return l.ReplicasPath
	}
	return field.NewPath("spec", "replicas")
}

func configPath(l Layout) *field.Path {
	if l.ConfigPath != nil {
		return l.ConfigPath
	}
	return field.NewPath("spec", "scaleConfig")
}

// groupPath is the path of group i; kinds without a groups path never have
// groups, but a path is still needed to report one a caller passed anyway.
func groupPath(l Layout, i int) *field.Path {
	if l.GroupsPath != nil {
		return l.GroupsPath.Index(i)
	}
	return field.NewPath("spec", "groups").Index(i)
}

// validateReplicas is V1.
func validateReplicas(r *int32, l Layout) field.ErrorList {
	if r == nil {
		return nil
	}
	p := replicasPath(l)
	switch {
	case *r < 0:
		return field.ErrorList{field.Invalid(p, *r, "must be greater than or equal to 0")}
	case l.MaxReplicas > 0 && *r > l.MaxReplicas:
		return field.ErrorList{field.Invalid(p, *r, fmt.Sprintf(
			"must be less than or equal to %d, the upper bound this kind's profile allows; lower it or raise the profile's maxReplicas", l.MaxReplicas))}
	}
	return nil
}

// validateConfig is V2–V7 for a present config c; eff is c with M2 applied.
func validateConfig(c, eff *Config, r *int32, l Layout, name string, sources *Sources) field.ErrorList {
	p := configPath(l)
	var errs field.ErrorList
	errs = append(errs, validateBounds(c, eff, r, l, p)...)
	for i := range c.Metrics {
		errs = append(errs, validateMetric(c.Metrics[i], func() *field.Path { return p.Child("metrics").Index(i) })...)
	}
	errs = append(errs, validateBehavior(c.Behavior, func() *field.Path { return p.Child("behavior") })...)
	errs = append(errs, validateTriggers(c.Triggers, func() *field.Path { return p.Child("triggers") }, sources)...)
	if len(c.Metrics) > 0 && len(c.Triggers) > 0 {
		errs = append(errs, field.Forbidden(p.Child("triggers"),
			"may not be set together with metrics: an HPA and scaleplane's autoscaler would fight over replicas; keep either metrics or triggers"))
	}
	if c.PollingIntervalSeconds != nil && *c.PollingIntervalSeconds < 1 {
		errs = append(errs, field.Invalid(p.Child("pollingIntervalSeconds"), *c.PollingIntervalSeconds,
			"must be greater than 0; remove it to use the autoscaler's interval"))
	}
	errs = append(errs, validateIdle(c.Idle, *eff.MaxReplicas, func() *field.Path { return p.Child("idle") })...)
	errs = append(errs, validateSchedule(c.Schedule, func() *field.Path { return p.Child("schedule") })...)
	errs = append(errs, validateFallback(c.Fallback, eff, len(c.Triggers), func() *field.Path { return p.Child("fallback") })...)
	errs = append(errs, validateScalingModifiers(c.ScalingModifiers, c.Triggers, func() *field.Path { return p.Child("scalingModifiers") }, func() *field.Path { return p.Child("triggers") })...)
	errs = append(errs, validateDependsOn(c.DependsOn, name, func() *field.Path { return p.Child("dependsOn") })...)
	return errs
}

// validateDependsOn is V11 for dependencies: each names another workload of
// the kind, which the autoscaler looks up by name, so it must be an object
// name (a DNS-1123 subdomain), once, and not the workload itself.
func validateDependsOn(deps []string, self string, p lazyPath) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(deps))
	for i, d := range deps {
		dp := func() *field.Path { return p().Index(i) }
		switch {
		case d == "":
			errs = append(errs, field.Required(dp(), "must name a workload of the same kind in the same namespace; remove the empty entry"))
		case seen[d]:
			errs = append(errs, field.Duplicate(dp(), d))
		case self != "" && d == self:
			errs = append(errs, field.Invalid(dp(), d, "a workload cannot depend on itself: it would wait for itself to be awake before waking; remove it"))
		default:
			for _, msg := range validation.IsDNS1123Subdomain(d) {
				errs = append(errs, field.Invalid(dp(), d, "must be the name of a workload of the same kind in the same namespace: "+msg))
			}
		}
		seen[d] = true
	}
	return errs
}

// validateBounds is V2, plus the profile's bound on maxReplicas: a range
// reaching past it would let an autoscaler write a count V1 rejects.
func validateBounds(c, eff *Config, r *int32, l Layout, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	minP, maxP := p.Child("minReplicas"), p.Child("maxReplicas")
	if c.MinReplicas != nil && *c.MinReplicas < 0 {
		errs = append(errs, field.Invalid(minP, *c.MinReplicas, "must be greater than or equal to 0"))
	}
	if c.MaxReplicas != nil && *c.MaxReplicas < 0 {
		errs = append(errs, field.Invalid(maxP, *c.MaxReplicas, "must be greater than or equal to 0"))
	}
	// A pin at R follows R (M1, C1): R's own error (V1) says what to lower.
	pinnedAtR := r != nil && eff.Pinned() && *eff.MaxReplicas == *r
	if c.MaxReplicas != nil && l.MaxReplicas > 0 && *c.MaxReplicas > l.MaxReplicas && !pinnedAtR {
		errs = append(errs, field.Invalid(maxP, *c.MaxReplicas, fmt.Sprintf(
			"must be less than or equal to %d, the upper bound this kind's profile allows; lower maxReplicas", l.MaxReplicas)))
	}
	lo, hi := *eff.MinReplicas, *eff.MaxReplicas
	if lo >= 0 && hi >= 0 && lo > hi {
		errs = append(errs, field.Invalid(minP, lo, fmt.Sprintf(
			"must be less than or equal to maxReplicas (%d); raise maxReplicas or lower minReplicas", hi)))
	}
	// A range is held to the schema of the fields its counts are written
	// to; a range from zero that the schema refuses is reported there, with
	// advice that the schema allows.
	schemaErrs := validateRangeSchema(lo, hi, l, minP, maxP)
	errs = append(errs, schemaErrs...)
	// A pinned zero is "scaled to zero by hand" and always valid; only a
	// range that starts at zero needs something able to wake the workload.
	if lo == 0 && hi > 0 && len(c.Triggers) == 0 && c.Idle == nil && CanReachZero(l) {
		errs = append(errs, field.Invalid(minP, lo, fmt.Sprintf(
			"may be 0 below maxReplicas (%d) only with triggers or idle settings, because an HPA cannot scale to zero; set minReplicas to 1 or more, add triggers or idle, or set maxReplicas to 0 to stay at zero", hi)))
	}
	return errs
}

// validateGroups is V8, and V11 for group names that end up in a label
// selector.
func validateGroups(groups []Group, l Layout) field.ErrorList {
	var errs field.ErrorList
	nameField, membersField := l.GroupNameField, l.GroupMembersField
	if nameField == "" {
		nameField = "name"
	}
	if membersField == "" {
		membersField = "members"
	}
	seen := make(map[string]bool, len(groups))
	for i, g := range groups {
		// Built only for an error: most groups have none.
		gp := func() *field.Path { return groupPath(l, i) }
		switch {
		case g.Name == "":
			errs = append(errs, field.Required(gp().Child(nameField), "every group needs a name; name it, e.g. rack-a"))
		case seen[g.Name]:
			errs = append(errs, field.Duplicate(gp().Child(nameField), g.Name))
		}
		seen[g.Name] = true
		if l.GroupNamesInSelector && g.Name != "" {
			for _, msg := range validation.IsValidLabelValue(g.Name) {
				errs = append(errs, field.Invalid(gp().Child(nameField), g.Name,
					msg+"; group names are label values of the pods' selector (the profile's pods.memberGroupLabel), so rename the group"))
			}
		}
		if g.Members != nil && *g.Members < 0 {
			errs = append(errs, field.Invalid(gp().Child(membersField), *g.Members, "must be greater than or equal to 0"))
		}
	}
	return errs
}

// warnings are W1 and W2: configurations that are legal but will not do what
// their author probably expects right now. replicas is R and eff the
// effective config (M2 applied), nil when absent.
func warnings(replicas *int32, eff *Config, l Layout) []string {
	if eff == nil || replicas == nil {
		return nil
	}
	r := *replicas
	// Formatted with %s only when there is a warning to write.
	rp, cp := replicasPath(l), configPath(l)
	if eff.Pinned() && *eff.MinReplicas != r {
		// M7: a pin the schema refuses is never written (C6), so it does
		// not follow R.
		if !l.ConfigInAnnotation {
			if why := l.Schema.MinReplicas.Refuses(r); why != "" {
				return []string{fmt.Sprintf(
					"%s is pinned at %d while %s is %d, and the pin cannot follow: %s: %s; set %s to a count the schema accepts, or give the config a range",
					cp, *eff.MinReplicas, rp, r, cp.Child("minReplicas"), why, rp)}
			}
		}
		// W1 for pins (our extension): a pin always follows R (C1), so a pin
		// that disagrees with R is about to be overwritten, whatever the
		// target.
		return []string{fmt.Sprintf(
			"%s is pinned at %d while %s is %d: a pinned config follows replicas, so it will become %d; set %s to %d, or give the config a range",
			cp, *eff.MinReplicas, rp, r, r, rp, *eff.MinReplicas)}
	}
	if !l.TargetSelf {
		if l.Schema.Replicas.IsDefault(replicas) && eff.HasRange() {
			// R is the schema's default under a range: built-in mode
			// (ReplicasUnset), not external scaling.
			return nil
		}
		// W2. A config that only pins R (what M1 writes) says nothing that
		// could be ignored, so it does not warn.
		if eff.HasRange() || len(eff.Metrics) > 0 || len(eff.Triggers) > 0 || eff.Behavior != nil ||
			eff.Idle != nil || eff.Schedule != nil {
			return []string{fmt.Sprintf(
				"%s is ignored while %s is set (external scaling mode): no built-in autoscaler will act on it; remove %s to let it scale the workload",
				cp, rp, rp)}
		}
		return nil
	}
	lo, hi := *eff.MinReplicas, *eff.MaxReplicas
	if !eff.HasRange() || (lo <= r && r <= hi) {
		return nil
	}
	// W1 says what will actually happen: who moves R and to what, or why
	// nothing will.
	actor, _, note := RangeActor(replicas, eff, l)
	if actor == "" {
		return []string{fmt.Sprintf(
			"%s (%d) is outside %s [%d, %d] and nothing will move it: %s; set it within the range",
			rp, r, cp, lo, hi, note)}
	}
	to := hi
	if r < lo {
		// Neither the HPA nor the trigger autoscaler keeps a workload at
		// zero below a range that starts at 0 (min is raised to 1).
		to = max(lo, 1)
	}
	return []string{fmt.Sprintf(
		"%s (%d) is outside %s [%d, %d]: %s will move it to %d; set it within the range or widen the range",
		rp, r, cp, lo, hi, actor, to)}
}
