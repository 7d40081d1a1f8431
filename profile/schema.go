package profile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

// WithCRD returns a copy of p whose Layout carries the limits crd's served
// schema sets on every field scaleplane writes (contract M7, S2, C6). It is
// called when a kind is activated and again whenever its CRD changes; p is
// not changed. An error means the profile and the CRD disagree (the
// version is not served, a path is not in the schema or has the wrong
// type, the /scale subresource points elsewhere): it names every problem
// with the profile's field path.
func (p *Compiled) WithCRD(crd *apiextensionsv1.CustomResourceDefinition) (*Compiled, error) {
	s, errs := CheckCRD(p.spec, crd, nil)
	if len(errs) > 0 {
		return nil, fmt.Errorf("profile %s does not match CRD %s: %w", kindName(&p.spec), crd.Name, errs.ToAggregate())
	}
	q := *p
	q.layout.Schema = s
	return &q, nil
}

// CheckCRD reads the limits of every field spec writes from crd's schema for
// spec's version and reports where spec and crd disagree, at spec's field
// paths under fp (nil for the bare spec). A field the schema leaves open
// (x-kubernetes-preserve-unknown-fields) has no limits and no problems.
// spec is defaulted first, as Compile does.
func CheckCRD(spec v1alpha1.ScaleProfileSpec, crd *apiextensionsv1.CustomResourceDefinition, fp *field.Path) (scaling.Schema, field.ErrorList) {
	spec = clone(&spec)
	Default(&spec)
	var s scaling.Schema
	var errs field.ErrorList
	gv, err := schema.ParseGroupVersion(spec.Target.APIVersion)
	if err != nil {
		return s, field.ErrorList{field.Invalid(fp.Child("target", "apiVersion"), spec.Target.APIVersion, err.Error())}
	}
	if crd.Spec.Group != gv.Group || crd.Spec.Names.Kind != spec.Target.Kind {
		return s, field.ErrorList{field.Invalid(fp.Child("target"), spec.Target.APIVersion+" "+spec.Target.Kind,
			fmt.Sprintf("CRD %s serves %s/%s", crd.Name, crd.Spec.Group, crd.Spec.Names.Kind))}
	}
	if spec.Target.Resource != "" && spec.Target.Resource != crd.Spec.Names.Plural {
		errs = append(errs, field.Invalid(fp.Child("target", "resource"), spec.Target.Resource,
			fmt.Sprintf("CRD %s serves the resource %s", crd.Name, crd.Spec.Names.Plural)))
	}
	var ver *apiextensionsv1.CustomResourceDefinitionVersion
	var served []string
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Served {
			served = append(served, v.Name)
			if v.Name == gv.Version {
				ver = v
			}
		}
	}
	if ver == nil {
		return s, append(errs, field.Invalid(fp.Child("target", "apiVersion"), spec.Target.APIVersion,
			fmt.Sprintf("CRD %s does not serve version %s (served: %s)", crd.Name, gv.Version, strings.Join(served, ", "))))
	}
	var root *apiextensionsv1.JSONSchemaProps
	if ver.Schema != nil {
		root = ver.Schema.OpenAPIV3Schema
	}
	// The /scale subresource is what kubectl scale, HPA and KEDA write
	// through; paths that disagree with it would scale one field and pin
	// another.
	if sc := scaleOf(ver); sc == nil {
		errs = append(errs, field.Required(fp.Child("target"), fmt.Sprintf("CRD %s version %s has no /scale subresource; add subresources.scale (specReplicasPath, statusReplicasPath) to it", crd.Name, ver.Name)))
	} else {
		if sc.SpecReplicasPath != spec.ReplicasPath {
			errs = append(errs, field.Invalid(fp.Child("replicasPath"), spec.ReplicasPath,
				fmt.Sprintf("the CRD's /scale specReplicasPath is %s", sc.SpecReplicasPath)))
		}
		if spec.Status.ReplicasPath != "" && sc.StatusReplicasPath != spec.Status.ReplicasPath {
			errs = append(errs, field.Invalid(fp.Child("status", "replicasPath"), spec.Status.ReplicasPath,
				fmt.Sprintf("the CRD's /scale statusReplicasPath is %s", sc.StatusReplicasPath)))
		}
		if sel := spec.Status.SelectorPath; sel != "" && (sc.LabelSelectorPath == nil || *sc.LabelSelectorPath != sel) {
			want := "not set"
			if sc.LabelSelectorPath != nil {
				want = *sc.LabelSelectorPath
			}
			errs = append(errs, field.Invalid(fp.Child("status", "selectorPath"), sel,
				fmt.Sprintf("the CRD's /scale labelSelectorPath is %s", want)))
		}
	}

	w := schemaWalker{root: root}
	var e *field.Error
	if s.Replicas, e = w.integer(spec.ReplicasPath, fp.Child("replicasPath")); e != nil {
		errs = append(errs, e)
	}
	if cp := spec.ScaleConfig.Path; cp != "" {
		cfg, open, e := w.object(cp, fp.Child("scaleConfig", "path"))
		if e != nil {
			errs = append(errs, e)
		} else if !open {
			s.MinReplicas = limitsOf(cfg.Properties["minReplicas"])
			s.MaxReplicas = limitsOf(cfg.Properties["maxReplicas"])
			s.DroppedConfig = droppedConfigFields(cfg)
			for _, b := range []string{"minReplicas", "maxReplicas"} {
				if _, ok := cfg.Properties[b]; !ok {
					errs = append(errs, field.Invalid(fp.Child("scaleConfig", "path"), cp,
						fmt.Sprintf("the CRD's schema has no %s.%s; point the path at an object with minReplicas and maxReplicas, or use an annotation", cp, b)))
				} else if t := cfg.Properties[b].Type; t != "integer" && t != "number" {
					errs = append(errs, field.Invalid(fp.Child("scaleConfig", "path"), cp,
						fmt.Sprintf("the CRD's schema types %s.%s %q, not integer", cp, b, t)))
				}
			}
		}
	}
	if g := spec.MemberGroups; g != nil {
		item, open, e := w.listItems(g.Path, fp.Child("memberGroups", "path"))
		switch {
		case e != nil:
			errs = append(errs, e)
		case !open:
			if f, ok := item.Properties[g.NameField]; !ok || f.Type != "string" {
				errs = append(errs, field.Invalid(fp.Child("memberGroups", "nameField"), g.NameField,
					fmt.Sprintf("the items of %s have no string field %s in the CRD's schema", g.Path, g.NameField)))
			}
			if f, ok := item.Properties[g.MembersField]; !ok || (f.Type != "integer" && f.Type != "number") {
				errs = append(errs, field.Invalid(fp.Child("memberGroups", "membersField"), g.MembersField,
					fmt.Sprintf("the items of %s have no integer field %s in the CRD's schema", g.Path, g.MembersField)))
			} else {
				s.Members = limitsOf(item.Properties[g.MembersField])
			}
		}
		if st := g.Status; st != nil {
			errs = append(errs, w.groupStatus(st, fp.Child("memberGroups", "status"))...)
		}
	}
	if p := spec.Status.ReplicasPath; p != "" {
		if _, e := w.integer(p, fp.Child("status", "replicasPath")); e != nil {
			errs = append(errs, e)
		}
	}
	if p := spec.Status.SelectorPath; p != "" {
		if e := w.typed(p, "string", fp.Child("status", "selectorPath")); e != nil {
			errs = append(errs, e)
		}
	}
	return s, errs
}

func scaleOf(v *apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceSubresourceScale {
	if v.Subresources == nil {
		return nil
	}
	return v.Subresources.Scale
}

// limitsOf reads what scaling needs of one field's schema.
func limitsOf(p apiextensionsv1.JSONSchemaProps) scaling.Limits {
	l := scaling.Limits{
		Known:            true,
		Type:             p.Type,
		Minimum:          p.Minimum,
		Maximum:          p.Maximum,
		ExclusiveMinimum: p.ExclusiveMinimum,
		ExclusiveMaximum: p.ExclusiveMaximum,
		Nullable:         p.Nullable,
	}
	if p.Default != nil {
		var n int64
		if json.Unmarshal(p.Default.Raw, &n) == nil {
			l.Default = &n
		}
	}
	return l
}

// schemaWalker finds a profile path in a structural schema.
type schemaWalker struct {
	root *apiextensionsv1.JSONSchemaProps
}

// at returns the schema at path. open is true when a schema on the way
// leaves its fields unspecified (x-kubernetes-preserve-unknown-fields, or no
// schema at all): nothing can be said of the path then.
func (w schemaWalker) at(path string, fp *field.Path) (p *apiextensionsv1.JSONSchemaProps, open bool, _ *field.Error) {
	segs, err := parsePath(path, "")
	if err != nil {
		return nil, false, field.Invalid(fp, path, err.Error())
	}
	cur := w.root
	if cur == nil {
		return nil, true, nil
	}
	for i, seg := range segs {
		next, ok := cur.Properties[seg]
		if !ok {
			if preserves(cur) {
				return nil, true, nil
			}
			where := "." + strings.Join(segs[:i], ".")
			if i == 0 {
				where = "the object's root"
			}
			return nil, false, field.Invalid(fp, path, fmt.Sprintf("the CRD's schema has no field %q under %s", seg, where))
		}
		cur = &next
	}
	return cur, false, nil
}

func preserves(p *apiextensionsv1.JSONSchemaProps) bool {
	return p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields
}

func (w schemaWalker) typed(path, want string, fp *field.Path) *field.Error {
	p, open, e := w.at(path, fp)
	if e != nil || open {
		return e
	}
	if p.Type != want && !(want == "integer" && p.Type == "number") {
		return field.Invalid(fp, path, fmt.Sprintf("the CRD's schema types it %q, not %s", p.Type, want))
	}
	return nil
}

func (w schemaWalker) integer(path string, fp *field.Path) (scaling.Limits, *field.Error) {
	p, open, e := w.at(path, fp)
	if e != nil || open {
		return scaling.Limits{}, e
	}
	if p.Type != "integer" && p.Type != "number" {
		return scaling.Limits{}, field.Invalid(fp, path, fmt.Sprintf("the CRD's schema types it %q, not integer", p.Type))
	}
	return limitsOf(*p), nil
}

func (w schemaWalker) object(path string, fp *field.Path) (*apiextensionsv1.JSONSchemaProps, bool, *field.Error) {
	p, open, e := w.at(path, fp)
	if e != nil || open {
		return nil, open, e
	}
	if p.Type != "object" {
		return nil, false, field.Invalid(fp, path, fmt.Sprintf("the CRD's schema types it %q; a scale config needs an object (or use an annotation)", p.Type))
	}
	if len(p.Properties) == 0 && preserves(p) {
		return nil, true, nil
	}
	return p, false, nil
}

// listItems returns the item schema of the list at path.
func (w schemaWalker) listItems(path string, fp *field.Path) (*apiextensionsv1.JSONSchemaProps, bool, *field.Error) {
	p, open, e := w.at(path, fp)
	if e != nil || open {
		return nil, open, e
	}
	if p.Type != "array" || p.Items == nil || p.Items.Schema == nil {
		return nil, false, field.Invalid(fp, path, fmt.Sprintf("the CRD's schema types it %q; member groups in the spec are a list of objects", p.Type))
	}
	it := p.Items.Schema
	if it.Type != "object" {
		return nil, false, field.Invalid(fp, path, fmt.Sprintf("the items of the list are %q in the CRD's schema, not objects", it.Type))
	}
	return it, preserves(it) && len(it.Properties) == 0, nil
}

func (w schemaWalker) groupStatus(st *v1alpha1.MemberGroupStatus, fp *field.Path) field.ErrorList {
	p, open, e := w.at(st.Path, fp.Child("path"))
	if e != nil {
		return field.ErrorList{e}
	}
	if open {
		return nil
	}
	var item *apiextensionsv1.JSONSchemaProps
	switch {
	case st.Style == v1alpha1.MemberGroupStatusMap && p.Type == "object" && p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
		item = p.AdditionalProperties.Schema
	case st.Style != v1alpha1.MemberGroupStatusMap && p.Type == "array" && p.Items != nil && p.Items.Schema != nil:
		item = p.Items.Schema
	case st.Style == v1alpha1.MemberGroupStatusMap:
		return field.ErrorList{field.Invalid(fp.Child("style"), st.Style, fmt.Sprintf("the CRD's schema has no map of objects (additionalProperties) at %s", st.Path))}
	default:
		return field.ErrorList{field.Invalid(fp.Child("style"), st.Style, fmt.Sprintf("the CRD's schema has no list of objects at %s", st.Path))}
	}
	if preserves(item) && len(item.Properties) == 0 {
		return nil
	}
	var errs field.ErrorList
	need := func(name, typ string, child string) {
		if name == "" {
			return
		}
		f, ok := item.Properties[name]
		if !ok || (f.Type != typ && !(typ == "integer" && f.Type == "number")) {
			errs = append(errs, field.Invalid(fp.Child(child), name, fmt.Sprintf("the items at %s have no %s field %s in the CRD's schema", st.Path, typ, name)))
		}
	}
	if st.Style != v1alpha1.MemberGroupStatusMap {
		need(st.NameField, "string", "nameField")
	}
	need(st.ReadyMembersField, "integer", "readyMembersField")
	need(st.ObservedGenerationField, "integer", "observedGenerationField")
	return errs
}

// droppedConfigFields lists the config fields cfg, a closed object schema,
// does not declare: structural pruning removes them from stored objects.
// A cfg that preserves unknown fields, properties declared or not, keeps
// them all. Declared fields are followed down the API type: a nested
// object that does not declare a field loses it too (named with its path,
// a list's items as [*]), and a map whose schema declares neither
// additionalProperties nor unknown fields loses every key.
func droppedConfigFields(cfg *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	prunedFields(reflect.TypeFor[v1alpha1.TriggerAutoscaling](), cfg, "", &out)
	slices.Sort(out)
	return out
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// prunedFields appends to out the fields of a value of type t that schema
// p prunes, each named after prefix.
func prunedFields(t reflect.Type, p *apiextensionsv1.JSONSchemaProps, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// A type with its own JSON form (quantities, times, raw JSON) is a
	// leaf, as are int-or-string and embedded objects.
	if p.XIntOrString || p.XEmbeddedResource || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return
	}
	name := strings.TrimSuffix(prefix, ".")
	switch t.Kind() {
	case reflect.Struct:
		if p.Type != "object" && p.Type != "" {
			return
		}
		var walk func(t reflect.Type)
		walk = func(t reflect.Type) {
			for i := range t.NumField() {
				f := t.Field(i)
				n, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				switch {
				case n == "-":
				case n == "" && f.Anonymous && strings.Contains(opts, "inline"):
					walk(f.Type)
				case n != "":
					if sub, ok := p.Properties[n]; ok {
						prunedFields(f.Type, &sub, prefix+n+".", out)
					} else if !preserves(p) {
						*out = append(*out, prefix+n)
					}
				}
			}
		}
		walk(t)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() != reflect.Uint8 && p.Items != nil && p.Items.Schema != nil {
			prunedFields(t.Elem(), p.Items.Schema, name+"[*].", out)
		}
	case reflect.Map:
		switch {
		case p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
			prunedFields(t.Elem(), p.AdditionalProperties.Schema, name+".*.", out)
		case p.AdditionalProperties == nil && !preserves(p) && len(p.Properties) == 0 && (p.Type == "object" || p.Type == ""):
			*out = append(*out, name)
		}
	}
}
