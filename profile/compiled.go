package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

// Compiled is a profile made ready to use: it reads one workload kind's
// objects into [scaling.Workload] values and writes decisions back, as its
// spec says. Build it with Compile, which defaults and validates the spec
// once; a Compiled is immutable and safe for concurrent use.
type Compiled struct {
	spec   v1alpha1.ScaleProfileSpec
	layout scaling.Layout

	replicas []string
	// config is C's spec path; nil when C lives in the annotation.
	config     []string
	annotation string
	// annotationSegs is metadata.annotations.<annotation> as path segments.
	annotationSegs []string
	// slimFaas: C is translated from the SlimFaas/* annotations
	// (scaleConfig.format SlimFaas), read only.
	slimFaas bool
	// builtIn: a Kubernetes kind, which gets no admission webhook.
	builtIn bool

	// groups is nil for kinds without member groups.
	groups                  []string
	nameField, membersField string

	// groupStatus is nil when the profile names no member group status.
	groupStatus                                       []string
	statusStyle                                       v1alpha1.MemberGroupStatusStyle
	statusName, statusReady, statusObservedGeneration string

	statusReplicas, selector []string
}

// Compile defaults and validates a copy of spec (paths, target, status
// style) and prepares its paths. The error names each field to change.
func Compile(spec v1alpha1.ScaleProfileSpec) (*Compiled, error) {
	spec = clone(&spec)
	Default(&spec)
	if errs := validate(&spec, nil); len(errs) > 0 {
		return nil, fmt.Errorf("profile %s: %w", kindName(&spec), errs.ToAggregate())
	}
	return compile(spec), nil
}

// compile builds a defaulted, valid spec.
func compile(spec v1alpha1.ScaleProfileSpec) *Compiled {
	must := func(s string) []string {
		if s == "" {
			return nil
		}
		segs, err := parsePath(s, "")
		if err != nil {
			panic(fmt.Sprintf("profile validated but path %q does not parse: %v", s, err))
		}
		return segs
	}
	p := &Compiled{
		spec:           spec,
		replicas:       must(spec.ReplicasPath),
		config:         must(spec.ScaleConfig.Path),
		annotation:     spec.ScaleConfig.Annotation,
		annotationSegs: []string{"metadata", "annotations", spec.ScaleConfig.Annotation},
		slimFaas:       spec.ScaleConfig.Format == v1alpha1.ScaleConfigFormatSlimFaas,
		statusReplicas: must(spec.Status.ReplicasPath),
		selector:       must(spec.Status.SelectorPath),
	}
	p.layout = scaling.Layout{
		ReplicasPath:       fieldPath(p.replicas),
		ConfigInAnnotation: p.config == nil,
		TargetSelf:         spec.HPATarget.Self(),
		MaxReplicas:        spec.MaxReplicas,
		HasDefaultMetrics:  len(spec.DefaultMetrics) > 0,
		// The /scale selector (PodSelector) and the pods' own labels hold
		// member group names as label values.
		GroupNamesInSelector: spec.Pods.MemberGroupLabel != "" || slices.ContainsFunc(slices.Collect(maps.Values(spec.Pods.Labels)), func(v string) bool {
			return strings.Contains(v, v1alpha1.MemberGroupPlaceholder)
		}),
	}
	p.builtIn = BuiltIn(p.gv().Group)
	if p.config != nil {
		p.layout.ConfigPath = fieldPath(p.config)
	} else if p.slimFaas {
		// The rules judge the config the SlimFaas/* annotations make
		// together, not the one annotation that opts a workload in.
		p.layout.ConfigPath = field.NewPath("metadata", "annotations").Key(scaling.SlimFaasPrefix + "*")
	} else {
		p.layout.ConfigPath = field.NewPath("metadata", "annotations").Key(p.annotation)
	}
	if g := spec.MemberGroups; g != nil {
		p.groups = must(g.Path)
		p.nameField, p.membersField = g.NameField, g.MembersField
		p.layout.GroupsPath = fieldPath(p.groups)
		p.layout.GroupNameField, p.layout.GroupMembersField = g.NameField, g.MembersField
		if s := g.Status; s != nil {
			p.groupStatus = must(s.Path)
			p.statusStyle = s.Style
			p.statusName, p.statusReady, p.statusObservedGeneration = s.NameField, s.ReadyMembersField, s.ObservedGenerationField
		}
	}
	return p
}

// Spec returns the (defaulted) spec behind p. It is a copy: changing it
// does not change p.
func (p *Compiled) Spec() v1alpha1.ScaleProfileSpec { return clone(&p.spec) }

// GVK is the workload's GroupVersionKind.
func (p *Compiled) GVK() schema.GroupVersionKind {
	return p.gv().WithKind(p.spec.Target.Kind)
}

// GVR is the workload's GroupVersionResource.
func (p *Compiled) GVR() schema.GroupVersionResource {
	return p.gv().WithResource(p.spec.Target.Resource)
}

// gv is the target's group and version, which Compile validated.
func (p *Compiled) gv() schema.GroupVersion {
	gv, _ := schema.ParseGroupVersion(p.spec.Target.APIVersion)
	return gv
}

// Admission reports whether the kind gets scaleplane's admission webhooks:
// every kind but Kubernetes' own (BuiltIn), whose scale config lives in an
// annotation the trigger autoscaler checks itself.
func (p *Compiled) Admission() bool { return !p.builtIn }

// SlimFaas reports whether C is translated from SlimFaas's annotations
// (scaleConfig.format SlimFaas); such a C is never written back.
func (p *Compiled) SlimFaas() bool { return p.slimFaas }

// Layout tells package scaling where the values live. Its paths are shared
// by every caller and must not be changed.
func (p *Compiled) Layout() scaling.Layout { return p.layout }

// Read returns what the profile says of u. A field of the wrong type, or a
// scale config annotation that is not strict JSON of the Config schema
// (V9), is reported at its exact path; the value it would have filled stays
// nil and everything else is still read, so that all problems of one object
// are reported together. Groups keep their object positions even when one
// of them is malformed.
//
// A map-style group status is returned in the order of the spec's groups,
// then any other names sorted, so that the result never depends on map
// iteration.
func (p *Compiled) Read(u *unstructured.Unstructured) (scaling.Workload, field.ErrorList) {
	return p.read(u, false)
}

// ReadPartly is Read for validation: a scale config some of whose fields
// have errors is returned too, with those fields unset and everything else
// read, so that the rules of the rest can be checked and every problem of
// the config reported at once. Only a config whose text is not a JSON
// object (or whose spec value is not an object) stays nil. Callers that act
// on the config (defaulting, controllers) use Read.
func (p *Compiled) ReadPartly(u *unstructured.Unstructured) (scaling.Workload, field.ErrorList) {
	return p.read(u, true)
}

func (p *Compiled) read(u *unstructured.Unstructured, partial bool) (scaling.Workload, field.ErrorList) {
	r := reader{obj: u.Object, partial: partial}
	w := scaling.Workload{Name: u.GetName(), Generation: u.GetGeneration()}
	w.Replicas = r.int32At(p.replicas)
	switch {
	case p.config != nil:
		w.Config = p.readSpecConfig(&r)
	case p.slimFaas:
		w.Config = p.readSlimFaasConfig(&r)
	default:
		w.Config = p.readAnnotationConfig(&r)
	}
	if p.groups != nil {
		w.Groups = p.readGroups(&r)
		if p.groupStatus != nil {
			if p.statusStyle == v1alpha1.MemberGroupStatusMap {
				w.GroupStatus = p.readGroupStatusMap(&r, w.Groups)
			} else {
				w.GroupStatus = p.readGroupStatusList(&r)
			}
		}
	}
	if p.statusReplicas != nil {
		w.StatusReplicas = r.int32At(p.statusReplicas)
	}
	return w, r.errs
}

// reader collects the errors of one Read.
type reader struct {
	obj  map[string]interface{}
	errs field.ErrorList
	ints int32Pool
	// partial keeps a config with field errors (ReadPartly).
	partial bool
}

// add records err unless the same field was already reported: when .spec
// itself has the wrong type, R, C and G would all report it.
func (r *reader) add(err *field.Error) {
	for _, e := range r.errs {
		if e.Field == err.Field {
			return
		}
	}
	r.errs = append(r.errs, err)
}

// at returns the value at segs, reporting a non-object on the way.
func (r *reader) at(segs []string) (interface{}, bool) {
	v, found, bad := lookup(r.obj, segs)
	if bad > 0 {
		r.add(badParent(segs, bad, v))
		return nil, false
	}
	return v, found
}

func (r *reader) int32At(segs []string) *int32 {
	v, ok := r.at(segs)
	if !ok {
		return nil
	}
	n, err := readInt32(v, func() *field.Path { return fieldPath(segs) })
	if err != nil {
		r.add(err)
		return nil
	}
	return r.ints.new(n)
}

func (p *Compiled) readSpecConfig(r *reader) *scaling.Config {
	raw, ok := r.at(p.config)
	if !ok {
		return nil
	}
	m, ok := raw.(map[string]interface{})
	if !ok {
		r.add(field.Invalid(p.layout.ConfigPath, raw, fmt.Sprintf("must be an object, not %s", typeName(raw))))
		return nil
	}
	decode := decodeConfig
	if r.partial {
		decode = decodePartialConfig
	}
	cfg, errs := decode(m, p.layout.ConfigPath, false, &r.ints)
	for _, err := range errs {
		r.add(err)
	}
	return cfg
}

// readSlimFaasConfig translates the SlimFaas/* annotations
// (scaling.FromSlimFaas); errors are reported at the annotation's key.
func (p *Compiled) readSlimFaasConfig(r *reader) *scaling.Config {
	raw, ok := r.at([]string{"metadata", "annotations"})
	if !ok {
		return nil
	}
	m, ok := raw.(map[string]interface{})
	if !ok {
		return nil
	}
	ann := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok && strings.HasPrefix(k, scaling.SlimFaasPrefix) {
			ann[k] = s
		}
	}
	cfg, errs := scaling.FromSlimFaas(ann, field.NewPath("metadata", "annotations"))
	for _, err := range errs {
		r.add(err)
	}
	if len(errs) > 0 && !r.partial {
		return nil
	}
	return cfg
}

func (p *Compiled) readAnnotationConfig(r *reader) *scaling.Config {
	raw, ok := r.at(p.annotationSegs)
	if !ok {
		return nil
	}
	s, ok := raw.(string)
	if !ok {
		r.add(field.Invalid(p.layout.ConfigPath, raw, fmt.Sprintf("must be a string holding a JSON scale config, not %s", typeName(raw))))
		return nil
	}
	// V9: strict, by the decoder writeAnnotationConfig parses it with too.
	// An emptied annotation (kubectl annotate key=) means no config, as if
	// the user had removed it.
	cfg, errs := decodeConfigJSONPartly([]byte(s), p.layout.ConfigPath, &r.ints, r.partial)
	for _, err := range errs {
		r.add(err)
	}
	return cfg
}

func (p *Compiled) readGroups(r *reader) []scaling.Group {
	raw, ok := r.at(p.groups)
	if !ok {
		return nil
	}
	list, ok := raw.([]interface{})
	if !ok {
		r.add(field.Invalid(p.layout.GroupsPath, raw, fmt.Sprintf("must be a list, not %s", typeName(raw))))
		return nil
	}
	groups := make([]scaling.Group, len(list))
	for i, item := range list {
		ip := func() *field.Path { return p.layout.GroupsPath.Index(i) }
		m, ok := item.(map[string]interface{})
		if !ok {
			r.add(field.Invalid(ip(), item, fmt.Sprintf("must be an object, not %s", typeName(item))))
			continue
		}
		groups[i].Name = readString(r, m, p.nameField, ip)
		groups[i].Members = r.int32Field(m, p.membersField, ip)
	}
	return groups
}

func (p *Compiled) readGroupStatusList(r *reader) []scaling.GroupStatus {
	raw, ok := r.at(p.groupStatus)
	if !ok {
		return nil
	}
	list, ok := raw.([]interface{})
	if !ok {
		r.add(field.Invalid(fieldPath(p.groupStatus), raw, fmt.Sprintf("must be a list, not %s", typeName(raw))))
		return nil
	}
	out := make([]scaling.GroupStatus, len(list))
	for i, item := range list {
		ip := func() *field.Path { return fieldPath(p.groupStatus).Index(i) }
		m, ok := item.(map[string]interface{})
		if !ok {
			r.add(field.Invalid(ip(), item, fmt.Sprintf("must be an object, not %s", typeName(item))))
			continue
		}
		out[i].Name = readString(r, m, p.statusName, ip)
		p.readGroupState(r, m, &out[i], ip)
	}
	return out
}

func (p *Compiled) readGroupStatusMap(r *reader, groups []scaling.Group) []scaling.GroupStatus {
	raw, ok := r.at(p.groupStatus)
	if !ok {
		return nil
	}
	m, ok := raw.(map[string]interface{})
	if !ok {
		r.add(field.Invalid(fieldPath(p.groupStatus), raw, fmt.Sprintf("must be an object keyed by group name, not %s", typeName(raw))))
		return nil
	}
	out := make([]scaling.GroupStatus, 0, len(m))
	seen := make(map[string]bool, len(groups))
	read := func(name string) {
		ip := func() *field.Path { return fieldPath(p.groupStatus).Key(name) }
		item, ok := m[name].(map[string]interface{})
		if !ok {
			r.add(field.Invalid(ip(), m[name], fmt.Sprintf("must be an object, not %s", typeName(m[name]))))
			return
		}
		gs := scaling.GroupStatus{Name: name}
		p.readGroupState(r, item, &gs, ip)
		out = append(out, gs)
	}
	for _, g := range groups {
		if _, ok := m[g.Name]; ok && !seen[g.Name] {
			seen[g.Name] = true
			read(g.Name)
		}
	}
	if len(seen) < len(m) {
		var extra []string
		for name := range m {
			if !seen[name] {
				extra = append(extra, name)
			}
		}
		sort.Strings(extra)
		for _, name := range extra {
			read(name)
		}
	}
	return out
}

func (p *Compiled) readGroupState(r *reader, m map[string]interface{}, gs *scaling.GroupStatus, ip func() *field.Path) {
	gs.ReadyMembers = r.int32Field(m, p.statusReady, ip)
	if p.statusObservedGeneration == "" {
		return
	}
	if raw, ok := m[p.statusObservedGeneration]; ok && raw != nil {
		n, err := readInt64(raw, func() *field.Path { return ip().Child(p.statusObservedGeneration) })
		if err != nil {
			r.add(err)
			return
		}
		gs.ObservedGeneration = &n
	}
}

func readString(r *reader, m map[string]interface{}, name string, parent func() *field.Path) string {
	raw, ok := m[name]
	if !ok || raw == nil {
		return ""
	}
	s, ok := raw.(string)
	if !ok {
		r.add(field.Invalid(parent().Child(name), raw, fmt.Sprintf("must be a string, not %s", typeName(raw))))
	}
	return s
}

func (r *reader) int32Field(m map[string]interface{}, name string, parent func() *field.Path) *int32 {
	raw, ok := m[name]
	if !ok || raw == nil {
		return nil
	}
	n, err := readInt32(raw, func() *field.Path { return parent().Child(name) })
	if err != nil {
		r.add(err)
		return nil
	}
	return r.ints.new(n)
}

// WriteSpec writes the values scaleplane may own in the spec: R, C's
// minReplicas and maxReplicas (creating C at a spec path when w.Config is set
// and C is absent), and every group's members. Everything else in u, known
// or not, is left as it was; so is a value that is nil in w (WriteSpec never
// removes a field) or already equal (so an unchanged object yields no patch,
// M6). Numbers are written as int64, as the API machinery decodes them.
//
// Groups are matched by position and name: w.Groups must be the groups Read
// returned, possibly with new members. A C in an annotation is rewritten as
// compact JSON with sorted keys, keeping its other fields.
func (p *Compiled) WriteSpec(u *unstructured.Unstructured, w scaling.Workload) error {
	if u.Object == nil {
		u.Object = map[string]interface{}{}
	}
	if w.Replicas != nil {
		if err := setInt(u.Object, p.replicas, *w.Replicas); err != nil {
			return fmt.Errorf("write replicas: %w", err)
		}
	}
	if w.Config != nil && !p.slimFaas {
		var err error
		if p.config != nil {
			err = p.writeSpecConfig(u.Object, w.Config)
		} else {
			err = p.writeAnnotationConfig(u.Object, w.Config)
		}
		if err != nil {
			return fmt.Errorf("write scale config: %w", err)
		}
	}
	if len(w.Groups) > 0 {
		if err := p.writeGroups(u.Object, w.Groups); err != nil {
			return fmt.Errorf("write groups: %w", err)
		}
	}
	return nil
}

// setInt sets an integer at segs unless it already holds that number.
func setInt(obj map[string]interface{}, segs []string, n int32) error {
	if cur, found, _ := lookup(obj, segs); found {
		if old, ok := asInt64(cur); ok && old == int64(n) {
			return nil
		}
	}
	return setNested(obj, segs, int64(n))
}

func (p *Compiled) writeSpecConfig(obj map[string]interface{}, c *scaling.Config) error {
	raw, found, bad := lookup(obj, p.config)
	if bad > 0 {
		return fmt.Errorf("%s is %s, not an object", fieldPath(p.config[:bad]), typeName(raw))
	}
	if !found {
		m := map[string]interface{}{}
		setBounds(m, c)
		return setNested(obj, p.config, m)
	}
	m, ok := raw.(map[string]interface{})
	if !ok {
		return fmt.Errorf("%s is %s, not an object", p.layout.ConfigPath, typeName(raw))
	}
	setBounds(m, c)
	return nil
}

// setBounds writes C's min and max into m, reporting whether m changed.
func setBounds(m map[string]interface{}, c *scaling.Config) bool {
	changed := false
	for _, b := range []struct {
		key string
		val *int32
	}{{"minReplicas", c.MinReplicas}, {"maxReplicas", c.MaxReplicas}} {
		if b.val == nil {
			continue
		}
		if old, ok := asInt64(m[b.key]); ok && old == int64(*b.val) {
			continue
		}
		m[b.key] = int64(*b.val)
		changed = true
	}
	return changed
}

func (p *Compiled) writeAnnotationConfig(obj map[string]interface{}, c *scaling.Config) error {
	annPath := p.annotationSegs
	raw, found, bad := lookup(obj, annPath)
	if bad > 0 {
		return fmt.Errorf("%s is %s, not an object", fieldPath(annPath[:bad]), typeName(raw))
	}
	m := map[string]interface{}{}
	if found {
		s, ok := raw.(string)
		if !ok {
			return fmt.Errorf("%s is %s, not a string", p.layout.ConfigPath, typeName(raw))
		}
		// The representation Read decoded, by the same decoder: what could
		// be read can be written back, so defaulting never fails on what
		// validation accepted.
		parsed, ferr := parseConfigJSON([]byte(s), p.layout.ConfigPath)
		if ferr != nil {
			return errors.New(ferr.Error())
		}
		if parsed != nil {
			m = parsed
		}
	}
	if !setBounds(m, c) && found {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Queries in other fields may hold <, > and &; keep them readable.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("encode %s: %w", p.layout.ConfigPath, err)
	}
	return setNested(obj, annPath, strings.TrimSuffix(buf.String(), "\n"))
}

func (p *Compiled) writeGroups(obj map[string]interface{}, groups []scaling.Group) error {
	raw, found, bad := lookup(obj, p.groups)
	if bad > 0 {
		return fmt.Errorf("%s is %s, not an object", fieldPath(p.groups[:bad]), typeName(raw))
	}
	if !found {
		return fmt.Errorf("%s is absent but %d groups were given", p.layout.GroupsPath, len(groups))
	}
	list, ok := raw.([]interface{})
	if !ok {
		return fmt.Errorf("%s is %s, not a list", p.layout.GroupsPath, typeName(raw))
	}
	if len(groups) > len(list) {
		return fmt.Errorf("%s has %d groups but %d were given", p.layout.GroupsPath, len(list), len(groups))
	}
	for i, g := range groups {
		item, ok := list[i].(map[string]interface{})
		if !ok {
			return fmt.Errorf("%s is %s, not an object", p.layout.GroupsPath.Index(i), typeName(list[i]))
		}
		// Matching by name as well as position refuses to write one
		// group's count into another if the list changed since Read.
		if name, _ := item[p.nameField].(string); name != g.Name {
			return fmt.Errorf("%s is named %q, not %q: the groups changed since they were read", p.layout.GroupsPath.Index(i), name, g.Name)
		}
		if g.Members != nil {
			if err := setInt(item, []string{p.membersField}, *g.Members); err != nil {
				return err
			}
		}
	}
	return nil
}

// StatusReplicasPath and SelectorPath are the status fields written by C2
// and C3, as path segments; nil when the profile names none.
func (p *Compiled) StatusReplicasPath() []string { return slices.Clone(p.statusReplicas) }
func (p *Compiled) SelectorPath() []string       { return slices.Clone(p.selector) }

// ConfigPathSegments are the segments of the scale config's spec path, nil
// when the config is in an annotation (ConfigAnnotation).
func (p *Compiled) ConfigPathSegments() []string { return slices.Clone(p.config) }

// ConfigAnnotation is the annotation holding the scale config as JSON, ""
// when the config is at a spec path.
func (p *Compiled) ConfigAnnotation() string {
	if p.config != nil {
		return ""
	}
	return p.annotation
}

// PodSelector is the /scale selector for u (C3): the workload's pod labels
// plus, for grouped kinds, the group label with the first group's name, so it
// matches one pod per unit of status.replicas. It is deterministic (keys
// sorted), so writing it only when it changed avoids needless status writes.
func (p *Compiled) PodSelector(u *unstructured.Unstructured) (string, error) {
	pods := p.spec.Pods
	if len(pods.Labels) == 0 {
		return "", fmt.Errorf("profile %s names no pod labels (pods.labels), so no selector can be built", kindName(&p.spec))
	}
	group := ""
	if p.groups != nil {
		raw, found, bad := lookup(u.Object, p.groups)
		if bad > 0 {
			return "", fmt.Errorf("%s is %s, not an object", fieldPath(p.groups[:bad]), typeName(raw))
		}
		if found {
			list, ok := raw.([]interface{})
			if !ok {
				return "", fmt.Errorf("%s is %s, not a list", p.layout.GroupsPath, typeName(raw))
			}
			if len(list) > 0 {
				item, _ := list[0].(map[string]interface{})
				group, _ = item[p.nameField].(string)
				if group == "" {
					return "", fmt.Errorf("%s has no name; the selector needs the first group's name", p.layout.GroupsPath.Index(0))
				}
			}
		}
	}
	set := make(labels.Set, len(pods.Labels)+1)
	for k, val := range pods.Labels {
		set[k] = substitute(val, u.GetName(), group)
	}
	// Without groups in the object there are no pods yet; the workload's
	// own labels then match nothing extra.
	if pods.MemberGroupLabel != "" && group != "" {
		set[pods.MemberGroupLabel] = group
	}
	sel, err := labels.ValidatedSelectorFromSet(set)
	if err != nil {
		return "", fmt.Errorf("pod selector of %s %s: %w", p.spec.Target.Kind, u.GetName(), err)
	}
	return sel.String(), nil
}

// HPATargetRef is what a built-in HPA for u scales: u itself through /scale,
// or the profile's child object with ${name} replaced by u's name.
func (p *Compiled) HPATargetRef(u *unstructured.Unstructured) autoscalingv2.CrossVersionObjectReference {
	t := p.spec.HPATarget
	if t.Self() {
		apiVersion, kind := u.GetAPIVersion(), u.GetKind()
		if apiVersion == "" || kind == "" {
			gvk := p.GVK()
			apiVersion, kind = gvk.GroupVersion().String(), gvk.Kind
		}
		return autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: u.GetName()}
	}
	return autoscalingv2.CrossVersionObjectReference{
		APIVersion: t.APIVersion,
		Kind:       t.Kind,
		Name:       strings.ReplaceAll(t.Name, v1alpha1.NamePlaceholder, u.GetName()),
	}
}

// SameScalingFields reports whether a and b hold the same values at every
// field Read turns into a scaling.Workload's R, C and groups, as they are
// written in the objects: the replicas path, the scale config (its spec
// path, or the annotation's text) and the member groups. Values that Read
// cannot turn into anything count too, so a config that cannot be read is
// the same only as the same unreadable config. An annotation counts as the
// same when its text is, or when both texts are JSON of equal values (the
// same config re-encoded).
func (p *Compiled) SameScalingFields(a, b *unstructured.Unstructured) bool {
	for _, segs := range [][]string{p.replicas, p.config, p.groups} {
		if segs != nil && !sameAt(a.Object, b.Object, segs) {
			return false
		}
	}
	if p.config != nil {
		return true
	}
	if p.slimFaas {
		return maps.Equal(slimFaasAnnotations(a), slimFaasAnnotations(b))
	}
	va, fa, _ := lookup(a.Object, p.annotationSegs)
	vb, fb, _ := lookup(b.Object, p.annotationSegs)
	if fa != fb {
		return false
	}
	sa, okA := va.(string)
	sb, okB := vb.(string)
	if !okA || !okB {
		return equality.Semantic.DeepEqual(va, vb)
	}
	if sa == sb {
		return true
	}
	var ja, jb interface{}
	if kjson.UnmarshalCaseSensitivePreserveInts([]byte(sa), &ja) != nil || kjson.UnmarshalCaseSensitivePreserveInts([]byte(sb), &jb) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(ja, jb)
}

// sameAt compares the values at segs, or the non-object found on the way.
func sameAt(a, b map[string]interface{}, segs []string) bool {
	va, fa, ba := lookup(a, segs)
	vb, fb, bb := lookup(b, segs)
	return fa == fb && ba == bb && equality.Semantic.DeepEqual(va, vb)
}

// slimFaasAnnotations are u's SlimFaas/* annotations.
func slimFaasAnnotations(u *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for k, v := range u.GetAnnotations() {
		if strings.HasPrefix(k, scaling.SlimFaasPrefix) {
			out[k] = v
		}
	}
	return out
}
