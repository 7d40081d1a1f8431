package config

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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/scaling"
)

// View reads and writes one workload kind's fields as its profile says.
// Build it with NewView, which validates the profile once; a View is
// immutable and safe for concurrent use.
type View struct {
	profile Profile
	layout  scaling.Layout

	replicas []string
	// config is C's spec path; nil when C lives in the annotation.
	config     []string
	annotation string
	// annotationSegs is metadata.annotations.<annotation> as path segments.
	annotationSegs []string

	// groups is nil for kinds without groups.
	groups                  []string
	nameField, membersField string

	// groupStatus is nil when the profile names no group status.
	groupStatus                                       []string
	statusStyle                                       GroupStatusStyle
	statusName, statusReady, statusObservedGeneration string

	statusReplicas, selector []string
}

// NewView defaults and validates p (paths, kind, status style) and prepares
// its paths. The error names each profile field to change.
func NewView(p Profile) (*View, error) {
	p = p.clone()
	p.Default()
	if errs := validateProfile(&p, nil); len(errs) > 0 {
		return nil, fmt.Errorf("profile %s: %w", kindName(&p), errs.ToAggregate())
	}
	return newView(p), nil
}

// newView builds the view of a defaulted, valid profile.
func newView(p Profile) *View {
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
	v := &View{
		profile:        p,
		replicas:       must(p.Replicas),
		config:         must(p.ScaleConfig.Path),
		annotation:     p.ScaleConfig.Annotation,
		annotationSegs: []string{"metadata", "annotations", p.ScaleConfig.Annotation},
		statusReplicas: must(p.Status.Replicas),
		selector:       must(p.Status.Selector),
	}
	v.layout = scaling.Layout{
		ReplicasPath:       fieldPath(v.replicas),
		ConfigInAnnotation: v.config == nil,
		TargetSelf:         p.HPATarget.Self(),
		MaxReplicas:        p.MaxReplicas,
		HasDefaultMetrics:  len(p.DefaultMetrics) > 0,
		// The /scale selector (PodSelector) and the pods' own labels hold
		// group names as label values.
		GroupNamesInSelector: p.Pods.GroupLabel != "" || slices.ContainsFunc(slices.Collect(maps.Values(p.Pods.Labels)), func(v string) bool {
			return strings.Contains(v, GroupPlaceholder)
		}),
	}
	if v.config != nil {
		v.layout.ConfigPath = fieldPath(v.config)
	} else {
		v.layout.ConfigPath = field.NewPath("metadata", "annotations").Key(v.annotation)
	}
	if g := p.Groups; g != nil {
		v.groups = must(g.Path)
		v.nameField, v.membersField = g.NameField, g.MembersField
		v.layout.GroupsPath = fieldPath(v.groups)
		v.layout.GroupNameField, v.layout.GroupMembersField = g.NameField, g.MembersField
		if s := g.Status; s != nil {
			v.groupStatus = must(s.Path)
			v.statusStyle = s.Style
			v.statusName, v.statusReady, v.statusObservedGeneration = s.NameField, s.ReadyMembersField, s.ObservedGenerationField
		}
	}
	return v
}

// Profile returns the (defaulted) profile behind the view. It is a copy:
// changing it does not change the view.
func (v *View) Profile() Profile { return v.profile.clone() }

// GVK is the workload's GroupVersionKind.
func (v *View) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: v.profile.Group, Version: v.profile.Version, Kind: v.profile.Kind}
}

// GVR is the workload's GroupVersionResource.
func (v *View) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: v.profile.Group, Version: v.profile.Version, Resource: v.profile.Resource}
}

// Layout tells package scaling where the values live. Its paths are shared
// by every caller and must not be changed.
func (v *View) Layout() scaling.Layout { return v.layout }

// Read returns the profile's view of u. A field of the wrong type, or a
// scale config annotation that is not strict JSON of the Config schema
// (V9), is reported at its exact path; the value it would have filled stays
// nil and everything else is still read, so that all problems of one object
// are reported together. Groups keep their object positions even when one
// of them is malformed.
//
// A map-style group status is returned in the order of the spec's groups,
// then any other names sorted, so that the result never depends on map
// iteration.
func (v *View) Read(u *unstructured.Unstructured) (scaling.Workload, field.ErrorList) {
	r := reader{obj: u.Object}
	w := scaling.Workload{Name: u.GetName(), Generation: u.GetGeneration()}
	w.Replicas = r.int32At(v.replicas)
	if v.config != nil {
		w.Config = v.readSpecConfig(&r)
	} else {
		w.Config = v.readAnnotationConfig(&r)
	}
	if v.groups != nil {
		w.Groups = v.readGroups(&r)
		if v.groupStatus != nil {
			if v.statusStyle == GroupStatusMap {
				w.GroupStatus = v.readGroupStatusMap(&r, w.Groups)
			} else {
				w.GroupStatus = v.readGroupStatusList(&r)
			}
		}
	}
	if v.statusReplicas != nil {
		w.StatusReplicas = r.int32At(v.statusReplicas)
	}
	return w, r.errs
}

// reader collects the errors of one Read.
type reader struct {
	obj  map[string]interface{}
	errs field.ErrorList
	ints int32Pool
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

func (v *View) readSpecConfig(r *reader) *scaling.Config {
	raw, ok := r.at(v.config)
	if !ok {
		return nil
	}
	m, ok := raw.(map[string]interface{})
	if !ok {
		r.add(field.Invalid(v.layout.ConfigPath, raw, fmt.Sprintf("must be an object, not %s", typeName(raw))))
		return nil
	}
	cfg, errs := decodeConfig(m, v.layout.ConfigPath, false, &r.ints)
	for _, err := range errs {
		r.add(err)
	}
	return cfg
}

func (v *View) readAnnotationConfig(r *reader) *scaling.Config {
	raw, ok := r.at(v.annotationSegs)
	if !ok {
		return nil
	}
	s, ok := raw.(string)
	if !ok {
		r.add(field.Invalid(v.layout.ConfigPath, raw, fmt.Sprintf("must be a string holding a JSON scale config, not %s", typeName(raw))))
		return nil
	}
	// V9: strict, by the decoder writeAnnotationConfig parses it with too.
	// An emptied annotation (kubectl annotate key=) means no config, as if
	// the user had removed it.
	cfg, errs := decodeConfigJSON([]byte(s), v.layout.ConfigPath, &r.ints)
	for _, err := range errs {
		r.add(err)
	}
	return cfg
}

func (v *View) readGroups(r *reader) []scaling.Group {
	raw, ok := r.at(v.groups)
	if !ok {
		return nil
	}
	list, ok := raw.([]interface{})
	if !ok {
		r.add(field.Invalid(v.layout.GroupsPath, raw, fmt.Sprintf("must be a list, not %s", typeName(raw))))
		return nil
	}
	groups := make([]scaling.Group, len(list))
	for i, item := range list {
		ip := func() *field.Path { return v.layout.GroupsPath.Index(i) }
		m, ok := item.(map[string]interface{})
		if !ok {
			r.add(field.Invalid(ip(), item, fmt.Sprintf("must be an object, not %s", typeName(item))))
			continue
		}
		groups[i].Name = readString(r, m, v.nameField, ip)
		groups[i].Members = r.int32Field(m, v.membersField, ip)
	}
	return groups
}

func (v *View) readGroupStatusList(r *reader) []scaling.GroupStatus {
	raw, ok := r.at(v.groupStatus)
	if !ok {
		return nil
	}
	list, ok := raw.([]interface{})
	if !ok {
		r.add(field.Invalid(fieldPath(v.groupStatus), raw, fmt.Sprintf("must be a list, not %s", typeName(raw))))
		return nil
	}
	out := make([]scaling.GroupStatus, len(list))
	for i, item := range list {
		ip := func() *field.Path { return fieldPath(v.groupStatus).Index(i) }
		m, ok := item.(map[string]interface{})
		if !ok {
			r.add(field.Invalid(ip(), item, fmt.Sprintf("must be an object, not %s", typeName(item))))
			continue
		}
		out[i].Name = readString(r, m, v.statusName, ip)
		v.readGroupState(r, m, &out[i], ip)
	}
	return out
}

func (v *View) readGroupStatusMap(r *reader, groups []scaling.Group) []scaling.GroupStatus {
	raw, ok := r.at(v.groupStatus)
	if !ok {
		return nil
	}
	m, ok := raw.(map[string]interface{})
	if !ok {
		r.add(field.Invalid(fieldPath(v.groupStatus), raw, fmt.Sprintf("must be an object keyed by group name, not %s", typeName(raw))))
		return nil
	}
	out := make([]scaling.GroupStatus, 0, len(m))
	seen := make(map[string]bool, len(groups))
	read := func(name string) {
		ip := func() *field.Path { return fieldPath(v.groupStatus).Key(name) }
		item, ok := m[name].(map[string]interface{})
		if !ok {
			r.add(field.Invalid(ip(), m[name], fmt.Sprintf("must be an object, not %s", typeName(m[name]))))
			return
		}
		gs := scaling.GroupStatus{Name: name}
		v.readGroupState(r, item, &gs, ip)
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

func (v *View) readGroupState(r *reader, m map[string]interface{}, gs *scaling.GroupStatus, ip func() *field.Path) {
	gs.ReadyMembers = r.int32Field(m, v.statusReady, ip)
	if v.statusObservedGeneration == "" {
		return
	}
	if raw, ok := m[v.statusObservedGeneration]; ok && raw != nil {
		n, err := readInt64(raw, func() *field.Path { return ip().Child(v.statusObservedGeneration) })
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
func (v *View) WriteSpec(u *unstructured.Unstructured, w scaling.Workload) error {
	if u.Object == nil {
		u.Object = map[string]interface{}{}
	}
	if w.Replicas != nil {
		if err := setInt(u.Object, v.replicas, *w.Replicas); err != nil {
			return fmt.Errorf("write replicas: %w", err)
		}
	}
	if w.Config != nil {
		var err error
		if v.config != nil {
			err = v.writeSpecConfig(u.Object, w.Config)
		} else {
			err = v.writeAnnotationConfig(u.Object, w.Config)
		}
		if err != nil {
			return fmt.Errorf("write scale config: %w", err)
		}
	}
	if len(w.Groups) > 0 {
		if err := v.writeGroups(u.Object, w.Groups); err != nil {
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

func (v *View) writeSpecConfig(obj map[string]interface{}, c *scaling.Config) error {
	raw, found, bad := lookup(obj, v.config)
	if bad > 0 {
		return fmt.Errorf("%s is %s, not an object", fieldPath(v.config[:bad]), typeName(raw))
	}
	if !found {
		m := map[string]interface{}{}
		setBounds(m, c)
		return setNested(obj, v.config, m)
	}
	m, ok := raw.(map[string]interface{})
	if !ok {
		return fmt.Errorf("%s is %s, not an object", v.layout.ConfigPath, typeName(raw))
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

func (v *View) writeAnnotationConfig(obj map[string]interface{}, c *scaling.Config) error {
	annPath := v.annotationSegs
	raw, found, bad := lookup(obj, annPath)
	if bad > 0 {
		return fmt.Errorf("%s is %s, not an object", fieldPath(annPath[:bad]), typeName(raw))
	}
	m := map[string]interface{}{}
	if found {
		s, ok := raw.(string)
		if !ok {
			return fmt.Errorf("%s is %s, not a string", v.layout.ConfigPath, typeName(raw))
		}
		// The representation Read decoded, by the same decoder: what could
		// be read can be written back, so defaulting never fails on what
		// validation accepted (issue 10 item 5).
		parsed, ferr := parseConfigJSON([]byte(s), v.layout.ConfigPath)
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
		return fmt.Errorf("encode %s: %w", v.layout.ConfigPath, err)
	}
	return setNested(obj, annPath, strings.TrimSuffix(buf.String(), "\n"))
}

func (v *View) writeGroups(obj map[string]interface{}, groups []scaling.Group) error {
	raw, found, bad := lookup(obj, v.groups)
	if bad > 0 {
		return fmt.Errorf("%s is %s, not an object", fieldPath(v.groups[:bad]), typeName(raw))
	}
	if !found {
		return fmt.Errorf("%s is absent but %d groups were given", v.layout.GroupsPath, len(groups))
	}
	list, ok := raw.([]interface{})
	if !ok {
		return fmt.Errorf("%s is %s, not a list", v.layout.GroupsPath, typeName(raw))
	}
	if len(groups) > len(list) {
		return fmt.Errorf("%s has %d groups but %d were given", v.layout.GroupsPath, len(list), len(groups))
	}
	for i, g := range groups {
		item, ok := list[i].(map[string]interface{})
		if !ok {
			return fmt.Errorf("%s is %s, not an object", v.layout.GroupsPath.Index(i), typeName(list[i]))
		}
		// Matching by name as well as position refuses to write one
		// group's count into another if the list changed since Read.
		if name, _ := item[v.nameField].(string); name != g.Name {
			return fmt.Errorf("%s is named %q, not %q: the groups changed since they were read", v.layout.GroupsPath.Index(i), name, g.Name)
		}
		if g.Members != nil {
			if err := setInt(item, []string{v.membersField}, *g.Members); err != nil {
				return err
			}
		}
	}
	return nil
}

// StatusReplicasPath and SelectorPath are the status fields written by C2
// and C3, as path segments; nil when the profile names none.
func (v *View) StatusReplicasPath() []string { return slices.Clone(v.statusReplicas) }
func (v *View) SelectorPath() []string       { return slices.Clone(v.selector) }

// PodSelector is the /scale selector for u (C3): the workload's pod labels
// plus, for grouped kinds, the group label with the first group's name, so it
// matches one pod per unit of status.replicas. It is deterministic (keys
// sorted), so writing it only when it changed avoids needless status writes.
func (v *View) PodSelector(u *unstructured.Unstructured) (string, error) {
	pods := v.profile.Pods
	if len(pods.Labels) == 0 {
		return "", fmt.Errorf("profile %s names no pod labels (pods.labels), so no selector can be built", kindName(&v.profile))
	}
	group := ""
	if v.groups != nil {
		raw, found, bad := lookup(u.Object, v.groups)
		if bad > 0 {
			return "", fmt.Errorf("%s is %s, not an object", fieldPath(v.groups[:bad]), typeName(raw))
		}
		if found {
			list, ok := raw.([]interface{})
			if !ok {
				return "", fmt.Errorf("%s is %s, not a list", v.layout.GroupsPath, typeName(raw))
			}
			if len(list) > 0 {
				item, _ := list[0].(map[string]interface{})
				group, _ = item[v.nameField].(string)
				if group == "" {
					return "", fmt.Errorf("%s has no name; the selector needs the first group's name", v.layout.GroupsPath.Index(0))
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
	if pods.GroupLabel != "" && group != "" {
		set[pods.GroupLabel] = group
	}
	sel, err := labels.ValidatedSelectorFromSet(set)
	if err != nil {
		return "", fmt.Errorf("pod selector of %s %s: %w", v.profile.Kind, u.GetName(), err)
	}
	return sel.String(), nil
}

// HPATargetRef is what a built-in HPA for u scales: u itself through /scale,
// or the profile's child object with ${name} replaced by u's name.
func (v *View) HPATargetRef(u *unstructured.Unstructured) autoscalingv2.CrossVersionObjectReference {
	t := v.profile.HPATarget
	if t.Self() {
		apiVersion, kind := u.GetAPIVersion(), u.GetKind()
		if apiVersion == "" || kind == "" {
			gvk := v.GVK()
			apiVersion, kind = gvk.GroupVersion().String(), gvk.Kind
		}
		return autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: u.GetName()}
	}
	return autoscalingv2.CrossVersionObjectReference{
		APIVersion: t.APIVersion,
		Kind:       t.Kind,
		Name:       strings.ReplaceAll(t.Name, NamePlaceholder, u.GetName()),
	}
}
