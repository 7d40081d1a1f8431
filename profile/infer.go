package profile

import (
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

// Inference is a profile inferred from a CRD (`scaleplane profile init`),
// with what was inferred and why, and what could not be.
type Inference struct {
	// Spec is the inferred profile; it compiles and matches the CRD
	// (CheckCRD finds nothing).
	Spec v1alpha1.ScaleProfileSpec
	// Scope is the kind's scope.
	Scope v1alpha1.Scope
	// Inferred says, one sentence each, what was inferred and why.
	Inferred []string
	// Missing says, one sentence each, what could not be inferred and what
	// to add by hand.
	Missing []string
}

// maxInferDepth bounds how deep under .spec inference looks for a scale
// config or member groups; real kinds keep them within a few levels.
const maxInferDepth = 4

// Infer reads a profile from crd: for version, or (empty) the storage
// version when it has a /scale subresource, else the first served version
// that has one. It fails only when no served version has /scale, or the
// result does not compile: every other gap is reported in Missing and left
// to a default.
func Infer(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Inference, error) {
	ver, err := inferVersion(crd, version)
	if err != nil {
		return nil, err
	}
	sc := ver.Subresources.Scale
	in := &Inference{Scope: v1alpha1.ScopeNamespaced}
	if crd.Spec.Scope == apiextensionsv1.ClusterScoped {
		in.Scope = v1alpha1.ScopeCluster
	}
	s := &in.Spec
	s.Target = v1alpha1.TargetKind{APIVersion: crd.Spec.Group + "/" + ver.Name, Kind: crd.Spec.Names.Kind, Resource: crd.Spec.Names.Plural}
	in.note("target %s %s (resource %s, %s scope), version %s: %s", s.Target.APIVersion, s.Target.Kind, s.Target.Resource, strings.ToLower(string(in.Scope)), ver.Name, whyVersion(crd, ver, version))
	s.ReplicasPath = sc.SpecReplicasPath
	s.Status.ReplicasPath = sc.StatusReplicasPath
	in.note("replicasPath %s and status.replicasPath %s: the CRD's /scale specReplicasPath and statusReplicasPath", sc.SpecReplicasPath, sc.StatusReplicasPath)
	if sc.LabelSelectorPath != nil && *sc.LabelSelectorPath != "" {
		// scaleplane writes the selector (C3) only from pods.labels, which
		// no schema says; a kind with a labelSelectorPath usually has an
		// operator that writes it already.
		in.missing("status.selectorPath: the CRD's /scale labelSelectorPath is %s; left to the kind's operator, which usually writes it. If it does not, set status.selectorPath: %s and pods.labels (the labels every pod of a workload carries; ${name} is the workload's name)", *sc.LabelSelectorPath, *sc.LabelSelectorPath)
	} else {
		in.note("no status.selectorPath: the CRD's /scale has no labelSelectorPath, so an HPA cannot count pods (metrics of type Resource need one)")
	}

	var root *apiextensionsv1.JSONSchemaProps
	if ver.Schema != nil {
		root = ver.Schema.OpenAPIV3Schema
	}
	spec := prop(root, "spec")
	if cfg := findConfig(spec, ".spec", 0); len(cfg) > 0 {
		s.ScaleConfig.Path = cfg[0]
		in.note("scaleConfig.path %s: an object in the spec with integer minReplicas and maxReplicas", cfg[0])
		if len(cfg) > 1 {
			in.note("other candidates for scaleConfig.path: %s", strings.Join(cfg[1:], ", "))
		}
	} else {
		s.ScaleConfig.Annotation = v1alpha1.AnnotationScaleConfig
		in.note("scaleConfig.annotation %s: the spec has no object with integer minReplicas and maxReplicas (a scale config in the spec needs both)", v1alpha1.AnnotationScaleConfig)
	}

	if g := findGroups(spec, ".spec", 0); g != nil {
		s.MemberGroups = g.groups
		in.note("memberGroups.path %s: a list of objects with a string %s and an integer %s", g.groups.Path, g.groups.NameField, g.groups.MembersField)
		if st := findGroupStatus(prop(root, "status"), g.groups.Path); st != nil {
			g.groups.Status = st
			what := "a list of objects with a name and an integer " + st.ReadyMembersField
			if st.Style == v1alpha1.MemberGroupStatusMap {
				what = "a map of objects with an integer " + st.ReadyMembersField
			}
			in.note("memberGroups.status.path %s (%s): %s", st.Path, st.Style, what)
		} else {
			in.missing("memberGroups.status: the status has no list or map of member groups with a ready count, so status.replicas is left to the kind's operator (C2)")
		}
		in.missing("pods.memberGroupLabel: the label holding a pod's member group is not in the schema; without it the /scale selector counts every member group's pods")
		if m := findSpecMap(spec, ".spec", 0); m != "" {
			in.note("%s is a map of member groups; profiles read member groups from a list, so it is not used", m)
		}
	} else if m := findSpecMap(spec, ".spec", 0); m != "" {
		in.missing("memberGroups: %s looks like member groups kept in a map; profiles read member groups from a list in the spec, so it is left out", m)
	} else {
		in.note("no memberGroups: the spec has no list of objects with a name and an integer count")
	}
	in.note("hpaTarget: the workload itself, through /scale (set hpaTarget.kind for a child such as a Deployment)")

	spec2 := clone(s)
	Default(&spec2)
	if errs := validate(&spec2, nil); len(errs) > 0 {
		return nil, fmt.Errorf("the profile inferred from CRD %s is not valid: %w", crd.Name, errs.ToAggregate())
	}
	lim, errs := CheckCRD(*s, crd, nil)
	if len(errs) > 0 {
		return nil, fmt.Errorf("the profile inferred from CRD %s does not match it: %w", crd.Name, errs.ToAggregate())
	}
	// A config object that prunes fields is something to fix in the CRD,
	// not a fact inferred from it.
	dropped := lim.DroppedConfig
	lim.DroppedConfig = nil
	in.schemaNotes(lim, s)
	if len(dropped) > 0 {
		in.missing("%s", DroppedConfigNote(s.ScaleConfig.Path, dropped))
	}
	return in, nil
}

// schemaNotes says what the schema's limits mean for scaling (M7, S2).
func (in *Inference) schemaNotes(lim scaling.Schema, s *v1alpha1.ScaleProfileSpec) {
	in.Inferred = append(in.Inferred, SchemaNotes(lim, *s)...)
}

// SchemaNotes says, one sentence each, what the limits of a kind's schema
// mean for scaling it with spec (M7, S2): values scaleplane will not write,
// /scale writes it will refuse, and a defaulted replicas field.
func SchemaNotes(lim scaling.Schema, spec v1alpha1.ScaleProfileSpec) []string {
	var out []string
	if d := lim.Replicas.Default; d != nil {
		out = append(out, fmt.Sprintf("%s defaults to %d in the CRD's schema: the API server fills it before scaleplane sees an object, so it is always set; with a child HPA target and a range, %d counts as unset (docs/contract.md, M7)", spec.ReplicasPath, *d, *d))
	}
	if why := lim.MinReplicas.Refuses(0); why != "" && spec.ScaleConfig.Path != "" {
		out = append(out, fmt.Sprintf("%s.minReplicas: %s; replicas 0 is stored without a pinned scale config, and kubectl scale to 0 of a pinned object is refused (M7, S2)", spec.ScaleConfig.Path, why))
	}
	// A count the kind can never hold: every range, wherever its config
	// lives, must then stay above it (M7), and /scale to it is refused.
	if why := lim.Replicas.Refuses(0); why != "" {
		lo, _ := lim.Replicas.Accepted()
		out = append(out, fmt.Sprintf("%s cannot reach 0: %s; the kind cannot be scaled to zero, so scale configs need minReplicas %d or more (a range from 0, with idle settings or triggers, is refused) and kubectl scale to 0 is refused (M7, S2)", spec.ReplicasPath, why, max(lo, 1)))
	} else if why := lim.Members.Refuses(0); why != "" && spec.MemberGroups != nil {
		lo, _ := lim.Members.Accepted()
		out = append(out, fmt.Sprintf("%s[*].%s cannot reach 0: %s; replicas are copied to every group, so the kind cannot be scaled to zero: scale configs need minReplicas %d or more and kubectl scale to 0 is refused (M7, S2)", spec.MemberGroups.Path, spec.MemberGroups.MembersField, why, max(lo, 1)))
	}
	if d := lim.DroppedConfig; len(d) > 0 && spec.ScaleConfig.Path != "" {
		out = append(out, DroppedConfigNote(spec.ScaleConfig.Path, d))
	}
	if m := lim.Members.Maximum; m != nil && spec.MemberGroups != nil {
		out = append(out, fmt.Sprintf("%s[*].%s: the CRD's schema allows at most %v; a scale beyond it is refused (S2)", spec.MemberGroups.Path, spec.MemberGroups.MembersField, *m))
	}
	return out
}

// DroppedConfigNote says which scale config fields at path the CRD's
// schema would prune, and what to do about it.
func DroppedConfigNote(path string, dropped []string) string {
	return fmt.Sprintf("the CRD's schema declares no %s.{%s}: the API server drops these fields from objects before scaleplane sees them, without an error; add them to the schema at %s (or mark it x-kubernetes-preserve-unknown-fields), or keep the scale config in the annotation, to use them", path, strings.Join(dropped, ","), path)
}

func (in *Inference) note(format string, args ...any) {
	in.Inferred = append(in.Inferred, fmt.Sprintf(format, args...))
}

func (in *Inference) missing(format string, args ...any) {
	in.Missing = append(in.Missing, fmt.Sprintf(format, args...))
}

func inferVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) (*apiextensionsv1.CustomResourceDefinitionVersion, error) {
	hasScale := func(v *apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Served && v.Subresources != nil && v.Subresources.Scale != nil
	}
	var served []string
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Served {
			served = append(served, v.Name)
		}
		if version != "" && v.Name == version {
			if !hasScale(v) {
				return nil, fmt.Errorf("CRD %s version %s is not served with a /scale subresource; scaleplane scales kinds through /scale: add subresources.scale to it", crd.Name, version)
			}
			return v, nil
		}
	}
	if version != "" {
		return nil, fmt.Errorf("CRD %s has no version %s (served: %s)", crd.Name, version, strings.Join(served, ", "))
	}
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; v.Storage && hasScale(v) {
			return v, nil
		}
	}
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; hasScale(v) {
			return v, nil
		}
	}
	return nil, fmt.Errorf("CRD %s has no served version with a /scale subresource (served: %s); scaleplane scales kinds through /scale: add subresources.scale (specReplicasPath, statusReplicasPath) to the CRD", crd.Name, strings.Join(served, ", "))
}

func whyVersion(crd *apiextensionsv1.CustomResourceDefinition, ver *apiextensionsv1.CustomResourceDefinitionVersion, asked string) string {
	switch {
	case asked != "":
		return "asked for"
	case ver.Storage:
		return "the storage version, served with /scale"
	}
	return "the first served version with /scale (the storage version has none)"
}

func prop(p *apiextensionsv1.JSONSchemaProps, name string) *apiextensionsv1.JSONSchemaProps {
	if p == nil {
		return nil
	}
	c, ok := p.Properties[name]
	if !ok {
		return nil
	}
	return &c
}

func isInt(p *apiextensionsv1.JSONSchemaProps) bool {
	return p != nil && p.Type == "integer"
}

// sortedProps returns p's property names in order, so inference never
// depends on map iteration.
func sortedProps(p *apiextensionsv1.JSONSchemaProps) []string {
	if p == nil {
		return nil
	}
	names := make([]string, 0, len(p.Properties))
	for n := range p.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// findConfig returns the paths of objects under p (at path) with integer
// minReplicas and maxReplicas, shallowest first.
func findConfig(p *apiextensionsv1.JSONSchemaProps, path string, depth int) []string {
	if p == nil || depth >= maxInferDepth {
		return nil
	}
	var here, deeper []string
	for _, n := range sortedProps(p) {
		c := prop(p, n)
		if c.Type != "object" || !validSegment(n) {
			continue
		}
		if isInt(prop(c, "minReplicas")) && isInt(prop(c, "maxReplicas")) {
			here = append(here, path+"."+n)
			continue
		}
		deeper = append(deeper, findConfig(c, path+"."+n, depth+1)...)
	}
	return append(here, deeper...)
}

// Field names that usually hold a member group's count, best first.
var countNames = []string{"members", "replicas", "size", "count", "nodes", "instances"}

type groupsFound struct{ groups *v1alpha1.MemberGroups }

// findGroups returns the first list under p (shallowest, then by name)
// whose items are objects with a string name and an integer count.
func findGroups(p *apiextensionsv1.JSONSchemaProps, path string, depth int) *groupsFound {
	if p == nil || depth >= maxInferDepth {
		return nil
	}
	var objects []string
	for _, n := range sortedProps(p) {
		c := prop(p, n)
		if !validSegment(n) {
			continue
		}
		if c.Type == "array" && c.Items != nil && c.Items.Schema != nil && c.Items.Schema.Type == "object" {
			it := c.Items.Schema
			name := nameField(it)
			count := countField(it)
			if name != "" && count != "" {
				return &groupsFound{&v1alpha1.MemberGroups{Path: path + "." + n, NameField: name, MembersField: count}}
			}
		}
		if c.Type == "object" {
			objects = append(objects, n)
		}
	}
	for _, n := range objects {
		if g := findGroups(prop(p, n), path+"."+n, depth+1); g != nil {
			return g
		}
	}
	return nil
}

// findSpecMap returns the path of a map of objects with a count under p,
// which profiles cannot use as member groups.
func findSpecMap(p *apiextensionsv1.JSONSchemaProps, path string, depth int) string {
	if p == nil || depth >= maxInferDepth {
		return ""
	}
	for _, n := range sortedProps(p) {
		c := prop(p, n)
		if c.Type != "object" || !validSegment(n) {
			continue
		}
		if a := c.AdditionalProperties; a != nil && a.Schema != nil && a.Schema.Type == "object" && countField(a.Schema) != "" {
			return path + "." + n
		}
		if m := findSpecMap(c, path+"."+n, depth+1); m != "" {
			return m
		}
	}
	return ""
}

func nameField(it *apiextensionsv1.JSONSchemaProps) string {
	if f := prop(it, "name"); f != nil && f.Type == "string" {
		return "name"
	}
	for _, n := range sortedProps(it) {
		if f := prop(it, n); f.Type == "string" && strings.HasSuffix(strings.ToLower(n), "name") && validSegment(n) {
			return n
		}
	}
	return ""
}

func countField(it *apiextensionsv1.JSONSchemaProps) string {
	for _, want := range countNames {
		if isInt(prop(it, want)) {
			return want
		}
	}
	for _, n := range sortedProps(it) {
		l := strings.ToLower(n)
		for _, want := range countNames {
			if strings.Contains(l, want) && isInt(prop(it, n)) && !strings.Contains(l, "ready") && validSegment(n) {
				return n
			}
		}
	}
	return ""
}

func readyField(it *apiextensionsv1.JSONSchemaProps) string {
	if isInt(prop(it, DefaultReadyMembersField)) {
		return DefaultReadyMembersField
	}
	for _, n := range sortedProps(it) {
		if strings.Contains(strings.ToLower(n), "ready") && isInt(prop(it, n)) && validSegment(n) {
			return n
		}
	}
	return ""
}

// findGroupStatus looks in status for the member groups' ready counts: a
// list of objects with a name and a ready count, or a map of objects with a
// ready count, preferring the spec list's own name.
func findGroupStatus(status *apiextensionsv1.JSONSchemaProps, specPath string) *v1alpha1.MemberGroupStatus {
	if status == nil {
		return nil
	}
	last := specPath[strings.LastIndexByte(specPath, '.')+1:]
	names := sortedProps(status)
	sort.SliceStable(names, func(i, j int) bool { return names[i] == last && names[j] != last })
	for _, n := range names {
		c := prop(status, n)
		if !validSegment(n) {
			continue
		}
		switch {
		case c.Type == "array" && c.Items != nil && c.Items.Schema != nil:
			it := c.Items.Schema
			if name, ready := nameField(it), readyField(it); name != "" && ready != "" {
				st := &v1alpha1.MemberGroupStatus{Path: ".status." + n, Style: v1alpha1.MemberGroupStatusList, NameField: name, ReadyMembersField: ready}
				if isInt(prop(it, "observedGeneration")) {
					st.ObservedGenerationField = "observedGeneration"
				}
				return st
			}
		case c.Type == "object" && c.AdditionalProperties != nil && c.AdditionalProperties.Schema != nil:
			it := c.AdditionalProperties.Schema
			if ready := readyField(it); ready != "" {
				st := &v1alpha1.MemberGroupStatus{Path: ".status." + n, Style: v1alpha1.MemberGroupStatusMap, ReadyMembersField: ready}
				if isInt(prop(it, "observedGeneration")) {
					st.ObservedGenerationField = "observedGeneration"
				}
				return st
			}
		}
	}
	return nil
}
