package convert

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// Render writes res onto a partial object of its target, for server-side
// apply: the config in the place v, the target kind's profile, keeps it
// (the annotation scaleplane.io/scale-config when v is nil), and the pause
// annotations. It then reads the object back as the validating webhook
// does (v.Read, or the strict JSON decode of an annotation) and checks it
// with scaling.Validate and sources, the trigger sources of the autoscaler
// that will read it: no error means the object is admitted as rendered.
func Render(res Result, v *profile.Compiled, sources *scaling.Sources) (*unstructured.Unstructured, field.ErrorList) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetAPIVersion(res.APIVersion)
	u.SetKind(res.Kind)
	u.SetName(res.Name)
	if res.Namespace != "" {
		u.SetNamespace(res.Namespace)
	}
	if len(res.Annotations) > 0 {
		u.SetAnnotations(res.Annotations)
	}
	text, err := sortedJSON(res.Config)
	if err != nil {
		return u, field.ErrorList{field.InternalError(nil, err)}
	}
	if v != nil && v.ConfigAnnotation() == "" {
		var m map[string]interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(text), &m); err != nil {
			return u, field.ErrorList{field.InternalError(v.Layout().ConfigPath, err)}
		}
		if err := unstructured.SetNestedMap(u.Object, m, v.ConfigPathSegments()...); err != nil {
			return u, field.ErrorList{field.InternalError(v.Layout().ConfigPath, err)}
		}
	} else {
		key := v1alpha1.AnnotationScaleConfig
		if v != nil {
			key = v.ConfigAnnotation()
		}
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[key] = text
		u.SetAnnotations(ann)
	}
	if v != nil {
		read, errs := v.Read(u)
		read.Name = res.Name
		verrs, _ := scaling.Validate(read, v.Layout(), sources)
		return u, append(errs, verrs...)
	}
	l := scaling.Layout{ConfigPath: field.NewPath("metadata", "annotations").Key(v1alpha1.AnnotationScaleConfig), ConfigInAnnotation: true, TargetSelf: true}
	c, errs := profile.DecodeConfigJSON([]byte(text), l.ConfigPath)
	verrs, _ := scaling.Validate(scaling.Workload{Name: res.Name, Config: c}, l, sources)
	return u, append(errs, verrs...)
}

// sortedJSON is c as compact JSON with sorted keys, as profiles write an
// annotation.
func sortedJSON(c *scaling.Config) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	var m map[string]interface{}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	b, err = json.Marshal(m)
	return string(b), err
}
