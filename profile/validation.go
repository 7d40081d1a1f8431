package profile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

// Profile defaults, also named in docs/profiles.md.
const (
	DefaultReplicasPath            = ".spec.replicas"
	DefaultMemberGroupNameField    = "name"
	DefaultMemberGroupMembersField = "members"
	DefaultReadyMembersField       = "readyMembers"
	DefaultHPATargetName           = v1alpha1.NamePlaceholder
	DefaultMaxReplicas             = int32(1000)
)

// Default fills the fields a profile may leave out. It only fills what is
// absent, so defaulting twice changes nothing.
func Default(p *v1alpha1.ScaleProfileSpec) {
	if p.ReplicasPath == "" {
		p.ReplicasPath = DefaultReplicasPath
	}
	if g := p.MemberGroups; g != nil {
		if g.NameField == "" {
			g.NameField = DefaultMemberGroupNameField
		}
		if g.MembersField == "" {
			g.MembersField = DefaultMemberGroupMembersField
		}
		if s := g.Status; s != nil {
			if s.Style == "" {
				s.Style = v1alpha1.MemberGroupStatusList
			}
			if s.NameField == "" && s.Style == v1alpha1.MemberGroupStatusList {
				s.NameField = DefaultMemberGroupNameField
			}
			if s.ReadyMembersField == "" {
				s.ReadyMembersField = DefaultReadyMembersField
			}
		}
	}
	if p.HPATarget.Name == "" {
		p.HPATarget.Name = DefaultHPATargetName
	}
	if p.MaxReplicas == 0 {
		p.MaxReplicas = DefaultMaxReplicas
	}
}

// clone returns a copy of p that shares nothing mutable with it, so that
// defaulting a compiled profile's spec never changes the caller's.
func clone(p *v1alpha1.ScaleProfileSpec) v1alpha1.ScaleProfileSpec {
	return *p.DeepCopy()
}

// kindName names the profile's kind in error messages, as kubectl does:
// "RackedCluster.samples.scaleplane.io/v1alpha1".
func kindName(p *v1alpha1.ScaleProfileSpec) string {
	gv, err := schema.ParseGroupVersion(p.Target.APIVersion)
	if err != nil {
		return fmt.Sprintf("%s (apiVersion %q)", p.Target.Kind, p.Target.APIVersion)
	}
	return schema.GroupKind{Group: gv.Group, Kind: p.Target.Kind}.String() + "/" + gv.Version
}

// pathRule says where a profile path must point and gives an example.
type pathRule struct {
	root    string // "spec" or "status"
	example string
}

var (
	replicasRule       = pathRule{"spec", ".spec.replicas"}
	scaleConfigRule    = pathRule{"spec", ".spec.scaleConfig"}
	memberGroupsRule   = pathRule{"spec", ".spec.racks"}
	groupStatusRule    = pathRule{"status", ".status.racks"}
	statusReplicasRule = pathRule{"status", ".status.replicas"}
	selectorRule       = pathRule{"status", ".status.selector"}
)

// checkPath parses s and reports at fp what to change. Spec and status
// paths follow the rules the API server applies to a CRD's /scale paths:
// desired state under .spec, observed state under .status, which is also
// the only status scaleplane may write.
func checkPath(s string, rule pathRule, fp *field.Path) ([]string, *field.Error) {
	segs, err := parsePath(s, rule.example)
	if err != nil {
		return nil, field.Invalid(fp, s, err.Error())
	}
	if len(segs) < 2 || segs[0] != rule.root {
		return nil, field.Invalid(fp, s, fmt.Sprintf("must name a field under .%s, like %q", rule.root, rule.example))
	}
	return segs, nil
}

// Validate checks a profile with the defaults applied to a copy of it (p
// is not changed). fp is the profile's own path: profiles[i] in a
// configuration, spec in a ScaleProfile, nil for a lone spec. Every problem
// is reported, each at the path of the field to change.
func Validate(p *v1alpha1.ScaleProfileSpec, fp *field.Path) field.ErrorList {
	c := clone(p)
	Default(&c)
	return validate(&c, fp)
}

// validate checks a defaulted profile.
func validate(p *v1alpha1.ScaleProfileSpec, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateTarget(p.Target, fp.Child("target"))...)

	// spec paths that scaleplane writes must not overlap, or a write of one
	// would clobber another.
	type owned struct {
		segs []string
		fp   *field.Path
	}
	var specPaths []owned
	if segs, err := checkPath(p.ReplicasPath, replicasRule, fp.Child("replicasPath")); err != nil {
		errs = append(errs, err)
	} else {
		specPaths = append(specPaths, owned{segs, fp.Child("replicasPath")})
	}

	sc := p.ScaleConfig
	scPath := fp.Child("scaleConfig")
	switch {
	case sc.Path == "" && sc.Annotation == "":
		errs = append(errs, field.Required(scPath, `set path (e.g. ".spec.scaleConfig") or, for a CRD whose schema has no room for it, annotation (e.g. "scaleplane.io/scale-config")`))
	case sc.Path != "" && sc.Annotation != "":
		errs = append(errs, field.Invalid(scPath, fmt.Sprintf("path: %q, annotation: %q", sc.Path, sc.Annotation), "set only one of path and annotation"))
	case sc.Path != "":
		if segs, err := checkPath(sc.Path, scaleConfigRule, scPath.Child("path")); err != nil {
			errs = append(errs, err)
		} else {
			specPaths = append(specPaths, owned{segs, scPath.Child("path")})
		}
	default:
		key := sc.Annotation
		if sc.Format == v1alpha1.ScaleConfigFormatSlimFaas {
			// The API server checks annotation keys lower-cased, which
			// admits SlimFaas's own, such as SlimFaas/Function.
			key = strings.ToLower(key)
		}
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(scPath.Child("annotation"), sc.Annotation, msg+`, e.g. "scaleplane.io/scale-config"`))
		}
	}
	errs = append(errs, validateFormat(sc, scPath)...)
	errs = append(errs, validateBuiltIn(p, fp)...)

	var statusPaths []owned
	if g := p.MemberGroups; g != nil {
		gp := fp.Child("memberGroups")
		if segs, err := checkPath(g.Path, memberGroupsRule, gp.Child("path")); err != nil {
			errs = append(errs, err)
		} else {
			specPaths = append(specPaths, owned{segs, gp.Child("path")})
		}
		errs = append(errs, checkFieldName(g.NameField, gp.Child("nameField"), "name")...)
		errs = append(errs, checkFieldName(g.MembersField, gp.Child("membersField"), "members")...)
		if g.NameField == g.MembersField {
			errs = append(errs, field.Invalid(gp.Child("membersField"), g.MembersField, "must differ from nameField"))
		}
		if s := g.Status; s != nil {
			sp := gp.Child("status")
			if segs, err := checkPath(s.Path, groupStatusRule, sp.Child("path")); err != nil {
				errs = append(errs, err)
			} else {
				statusPaths = append(statusPaths, owned{segs, sp.Child("path")})
			}
			switch s.Style {
			case v1alpha1.MemberGroupStatusList:
				errs = append(errs, checkFieldName(s.NameField, sp.Child("nameField"), "name")...)
			case v1alpha1.MemberGroupStatusMap:
				if s.NameField != "" {
					errs = append(errs, field.Invalid(sp.Child("nameField"), s.NameField, "must be empty for style Map: the map's keys are the member group names"))
				}
			default:
				errs = append(errs, field.NotSupported(sp.Child("style"), s.Style, []string{string(v1alpha1.MemberGroupStatusList), string(v1alpha1.MemberGroupStatusMap)}))
			}
			errs = append(errs, checkFieldName(s.ReadyMembersField, sp.Child("readyMembersField"), "readyMembers")...)
			if s.ObservedGenerationField != "" {
				errs = append(errs, checkFieldName(s.ObservedGenerationField, sp.Child("observedGenerationField"), "observedGeneration")...)
			}
		}
	}

	stp := fp.Child("status")
	if p.Status.ReplicasPath != "" {
		if segs, err := checkPath(p.Status.ReplicasPath, statusReplicasRule, stp.Child("replicasPath")); err != nil {
			errs = append(errs, err)
		} else {
			statusPaths = append(statusPaths, owned{segs, stp.Child("replicasPath")})
		}
	}
	if p.Status.SelectorPath != "" {
		if segs, err := checkPath(p.Status.SelectorPath, selectorRule, stp.Child("selectorPath")); err != nil {
			errs = append(errs, err)
		} else {
			statusPaths = append(statusPaths, owned{segs, stp.Child("selectorPath")})
		}
	}
	for _, set := range [][]owned{specPaths, statusPaths} {
		for i := range set {
			for j := range i {
				if overlaps(set[i].segs, set[j].segs) {
					errs = append(errs, field.Invalid(set[i].fp, "."+strings.Join(set[i].segs, "."), fmt.Sprintf("overlaps %s; each field scaleplane reads or writes needs a path of its own", set[j].fp)))
				}
			}
		}
	}

	errs = append(errs, validatePods(p, fp.Child("pods"))...)
	errs = append(errs, validateHPATarget(p.HPATarget, fp.Child("hpaTarget"))...)
	if p.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(fp.Child("maxReplicas"), p.MaxReplicas, "must be at least 1 (or left out for the default, 1000)"))
	}
	errs = append(errs, validateMetrics(p.DefaultMetrics, fp.Child("defaultMetrics"))...)
	return errs
}

// validateTarget checks the target's apiVersion, kind and resource with the
// rules the API server applies to a CRD's names, so a profile can only name
// a kind that can exist. fp is the target's path.
func validateTarget(t v1alpha1.TargetKind, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	const gvExample = `, e.g. "samples.scaleplane.io/v1alpha1"`
	ap := fp.Child("apiVersion")
	if t.APIVersion == "" {
		errs = append(errs, field.Required(ap, "set the kind's group/version"+gvExample))
	} else if gv, err := schema.ParseGroupVersion(t.APIVersion); err != nil || gv.Version == "" || gv.String() != t.APIVersion {
		errs = append(errs, field.Invalid(ap, t.APIVersion, "must be group/version, or only the version for the core group"+gvExample))
	} else {
		if gv.Group != "" {
			for _, msg := range validation.IsDNS1123Subdomain(gv.Group) {
				errs = append(errs, field.Invalid(ap, t.APIVersion, "group "+msg+gvExample))
			}
		}
		for _, msg := range validation.IsDNS1035Label(gv.Version) {
			errs = append(errs, field.Invalid(ap, t.APIVersion, "version "+msg+gvExample))
		}
	}
	if t.Kind == "" {
		errs = append(errs, field.Required(fp.Child("kind"), `set the kind, e.g. "RackedCluster"`))
	} else if msgs := validation.IsDNS1035Label(strings.ToLower(t.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fp.Child("kind"), t.Kind, `must be a kind name such as "RackedCluster": letters and digits, starting with a letter`))
	}
	rp := fp.Child("resource")
	switch {
	case t.Resource == "":
		errs = append(errs, field.Required(rp, fmt.Sprintf("set the plural resource name, e.g. %q", plural(t.Kind))))
	case t.Resource != strings.ToLower(t.Resource):
		errs = append(errs, field.Invalid(rp, t.Resource, fmt.Sprintf("must be lowercase, e.g. %q", strings.ToLower(t.Resource))))
	case len(validation.IsDNS1035Label(t.Resource)) > 0:
		errs = append(errs, field.Invalid(rp, t.Resource, fmt.Sprintf("must be a plural resource name of lowercase letters, digits and \"-\", e.g. %q", plural(t.Kind))))
	case t.Resource == strings.ToLower(t.Kind) && !strings.HasSuffix(t.Resource, "s"):
		// The singular is the most common slip; other irregular plurals
		// cannot be told apart from real ones without the CRD.
		errs = append(errs, field.Invalid(rp, t.Resource, fmt.Sprintf("must be the plural resource name, e.g. %q, not the singular", plural(t.Kind))))
	}
	return errs
}

// plural guesses an example plural for error messages only.
func plural(kind string) string {
	if kind == "" {
		return "rackedclusters"
	}
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsAny(k[len(k)-2:len(k)-1], "aeiou"):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}

func checkFieldName(name string, fp *field.Path, example string) field.ErrorList {
	if validSegment(name) {
		return nil
	}
	return field.ErrorList{field.Invalid(fp, name, fmt.Sprintf("must be one field name such as %q: a letter or \"_\" followed by letters, digits, \"_\" or \"-\"", example))}
}

func overlaps(a, b []string) bool {
	n := min(len(a), len(b))
	return slices.Equal(a[:n], b[:n])
}

// validatePods checks the labels the /scale selector is built from. Values
// are checked with placeholders replaced by a sample, since the real values
// are only known per object.
func validatePods(p *v1alpha1.ScaleProfileSpec, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	lp := fp.Child("labels")
	for _, k := range slices.Sorted(maps.Keys(p.Pods.Labels)) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(lp, k, "label key "+msg))
		}
		v := p.Pods.Labels[k]
		sample := substitute(v, "sample", "sample")
		if strings.Contains(sample, "${") {
			errs = append(errs, field.Invalid(lp.Key(k), v, "unknown placeholder; use ${name} (the workload's name) or ${group} (a member group's name)"))
			continue
		}
		for _, msg := range validation.IsValidLabelValue(sample) {
			errs = append(errs, field.Invalid(lp.Key(k), v, msg))
		}
	}
	gl := fp.Child("memberGroupLabel")
	if p.Pods.MemberGroupLabel != "" {
		for _, msg := range validation.IsQualifiedName(p.Pods.MemberGroupLabel) {
			errs = append(errs, field.Invalid(gl, p.Pods.MemberGroupLabel, "label key "+msg))
		}
		if p.MemberGroups == nil {
			errs = append(errs, field.Invalid(gl, p.Pods.MemberGroupLabel, "only applies to kinds with member groups; set memberGroups or remove memberGroupLabel"))
		}
	}
	if p.Status.SelectorPath != "" {
		if len(p.Pods.Labels) == 0 {
			errs = append(errs, field.Required(lp, "status.selectorPath is set, so name the labels every pod of a workload carries, e.g. {\"app.example.com/instance\": \"${name}\"}; without them the /scale selector would match every pod in the namespace"))
		}
		if p.MemberGroups != nil && p.Pods.MemberGroupLabel == "" {
			errs = append(errs, field.Required(gl, "status.selectorPath is set for a kind with member groups, so name the label holding a pod's member group: the /scale selector must match the pods of one member group, or an HPA overshoots by the number of member groups (C3)"))
		}
	}
	return errs
}

func validateHPATarget(t v1alpha1.HPATarget, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case t.Kind == "" && t.APIVersion != "":
		errs = append(errs, field.Required(fp.Child("kind"), "set kind too to target a child object, or remove apiVersion to target the workload itself through /scale"))
	case t.Kind != "" && t.APIVersion == "":
		errs = append(errs, field.Required(fp.Child("apiVersion"), `set the child's apiVersion, e.g. "apps/v1"`))
	case t.Kind != "":
		if _, err := schema.ParseGroupVersion(t.APIVersion); err != nil {
			errs = append(errs, field.Invalid(fp.Child("apiVersion"), t.APIVersion, `must be group/version or version, e.g. "apps/v1"`))
		}
	}
	name := strings.ReplaceAll(t.Name, v1alpha1.NamePlaceholder, "sample")
	if strings.Contains(name, "${") {
		errs = append(errs, field.Invalid(fp.Child("name"), t.Name, "unknown placeholder; only ${name} (the workload's name) is replaced"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(fp.Child("name"), t.Name, msg+`, e.g. "${name}" or "${name}-runtime"`))
		}
	}
	return errs
}

// validateMetrics applies V3, the autoscaling/v2 rules the API server
// applies to an HPA's metrics, to a profile's default metrics: a bad default
// would otherwise surface only when an HPA is refused. The rules live in
// package scaling, which reports them under a config's metrics; they are
// moved to fp here.
func validateMetrics(metrics []autoscalingv2.MetricSpec, fp *field.Path) field.ErrorList {
	if len(metrics) == 0 {
		return nil
	}
	probe := field.NewPath("defaults")
	lo, hi := int32(1), int32(2)
	w := scaling.Workload{Config: &scaling.Config{MinReplicas: &lo, MaxReplicas: &hi, Metrics: metrics}}
	found, _ := scaling.Validate(w, scaling.Layout{ConfigPath: probe, MaxReplicas: hi, TargetSelf: true}, nil)
	prefix := probe.Child("metrics").String()
	var errs field.ErrorList
	for _, e := range found {
		rest, ok := strings.CutPrefix(e.Field, prefix)
		if !ok {
			continue
		}
		moved := *e
		moved.Field = fp.String() + rest
		errs = append(errs, &moved)
	}
	return errs
}

// substitute replaces the placeholders of pod label values.
func substitute(s, name, group string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, v1alpha1.NamePlaceholder, name), v1alpha1.MemberGroupPlaceholder, group)
}

// validateFormat checks scaleConfig.format: SlimFaas reads the
// SlimFaas/* annotations, opted in by SlimFaas/Function.
func validateFormat(sc v1alpha1.ScaleConfigLocation, fp *field.Path) field.ErrorList {
	switch sc.Format {
	case "", v1alpha1.ScaleConfigFormatJSON:
		return nil
	case v1alpha1.ScaleConfigFormatSlimFaas:
		if sc.Annotation != scaling.SlimFaasFunction {
			return field.ErrorList{field.Invalid(fp.Child("annotation"), sc.Annotation,
				fmt.Sprintf("format SlimFaas reads the SlimFaas annotations: set annotation to %q, the key that makes a workload a function", scaling.SlimFaasFunction))}
		}
		return nil
	}
	return field.ErrorList{field.NotSupported(fp.Child("format"), sc.Format, []string{string(v1alpha1.ScaleConfigFormatJSON), string(v1alpha1.ScaleConfigFormatSlimFaas)})}
}

// BuiltIn reports whether group is one of Kubernetes' own API groups (the
// core group, a group without a dot such as apps, or one under k8s.io): a
// CRD's group always has a dot, and only Kubernetes serves the others.
// scaleplane never registers admission webhooks on a built-in kind.
func BuiltIn(group string) bool {
	return !strings.Contains(group, ".") || group == "k8s.io" || strings.HasSuffix(group, ".k8s.io")
}

// validateBuiltIn refuses, for a built-in kind such as apps/v1 Deployment,
// what only an admission webhook or a write into a schema scaleplane does
// not own could give: scaleplane registers no webhook on built-in kinds
// (docs/profiles.md), and their schemas have no room for C, member groups
// or scaleplane's status fields. What is left is R at .spec.replicas and C
// in an annotation, which the trigger autoscaler reads and checks itself.
func validateBuiltIn(p *v1alpha1.ScaleProfileSpec, fp *field.Path) field.ErrorList {
	gv, err := schema.ParseGroupVersion(p.Target.APIVersion)
	if err != nil || p.Target.APIVersion == "" || gv.String() != p.Target.APIVersion ||
		(gv.Group != "" && len(validation.IsDNS1123Subdomain(gv.Group)) > 0) {
		// An apiVersion validateTarget refuses says nothing of the kind.
		return nil
	}
	if !BuiltIn(gv.Group) {
		if p.ScaleConfig.Format == v1alpha1.ScaleConfigFormatSlimFaas {
			// SlimFaas functions are Deployments and StatefulSets; a
			// CRD's webhooks would have nothing to default in them.
			return field.ErrorList{field.Invalid(fp.Child("scaleConfig", "format"), p.ScaleConfig.Format,
				fmt.Sprintf("format SlimFaas is for built-in kinds such as apps/v1 Deployment, as SlimFaas runs functions; %s is a CRD: use format JSON", kindName(p)))}
		}
		return nil
	}
	why := fmt.Sprintf("%s is a built-in kind: scaleplane registers no admission webhook on it and owns no field of its schema", kindName(p))
	var errs field.ErrorList
	if p.ScaleConfig.Path != "" {
		errs = append(errs, field.Invalid(fp.Child("scaleConfig", "path"), p.ScaleConfig.Path, why+`; hold the scale config in an annotation instead (annotation: "scaleplane.io/scale-config")`))
	}
	if p.ReplicasPath != DefaultReplicasPath {
		errs = append(errs, field.Invalid(fp.Child("replicasPath"), p.ReplicasPath, why+"; leave replicasPath out (.spec.replicas)"))
	}
	if p.MemberGroups != nil {
		errs = append(errs, field.Forbidden(fp.Child("memberGroups"), why+"; remove memberGroups"))
	}
	if p.Status.ReplicasPath != "" || p.Status.SelectorPath != "" {
		errs = append(errs, field.Forbidden(fp.Child("status"), why+"; its own controller writes its status: remove status"))
	}
	if !p.HPATarget.Self() {
		errs = append(errs, field.Forbidden(fp.Child("hpaTarget"), why+"; the HPA scales it through its own /scale: remove hpaTarget"))
	}
	return errs
}
