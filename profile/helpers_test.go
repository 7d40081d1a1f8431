package profile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// objBuilder builds unstructured test objects: makeObj("RackedCluster",
// "db").set(".spec.replicas", 3).obj().
type objBuilder struct{ u *unstructured.Unstructured }

func makeObj(kind, name string) *objBuilder {
	return &objBuilder{u: &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": SampleGroup + "/" + SampleVersion,
		"kind":       kind,
		"metadata":   map[string]interface{}{"name": name, "namespace": "default", "generation": int64(4)},
	}}}
}

// set puts v at a profile-style path; plain ints become int64 as the API
// machinery's decoder would produce them.
func (b *objBuilder) set(path string, v interface{}) *objBuilder {
	segs, err := parsePath(path, "")
	if err != nil {
		panic(err)
	}
	if err := setNested(b.u.Object, segs, normalize(v)); err != nil {
		panic(err)
	}
	return b
}

func (b *objBuilder) annotate(k, v string) *objBuilder {
	return b.set(".metadata.annotations", func() map[string]interface{} {
		a, _, _ := unstructured.NestedMap(b.u.Object, "metadata", "annotations")
		if a == nil {
			a = map[string]interface{}{}
		}
		a[k] = v
		return a
	}())
}

func (b *objBuilder) obj() *unstructured.Unstructured { return b.u.DeepCopy() }

// normalize turns test literals into unstructured values.
func normalize(v interface{}) interface{} {
	switch t := v.(type) {
	case int:
		return int64(t)
	case obj:
		m := make(map[string]interface{}, len(t))
		for k, e := range t {
			m[k] = normalize(e)
		}
		return m
	case map[string]interface{}:
		return normalize(obj(t))
	case list:
		l := make([]interface{}, len(t))
		for i, e := range t {
			l[i] = normalize(e)
		}
		return l
	case []interface{}:
		return normalize(list(t))
	}
	return v
}

type (
	obj  map[string]interface{}
	list []interface{}
)

func rack(name string, members int) obj { return obj{"name": name, "members": members} }

func ptr[T any](v T) *T { return &v }

// errorStrings renders field errors compactly for comparison: type, path
// and bad value, the parts a user acts on.
func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

var cmpOpts = []cmp.Option{
	// Quantities compare by value and format, which is what a round trip
	// through JSON preserves.
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.Format == b.Format }),
	cmp.Comparer(func(a, b *field.Path) bool { return a.String() == b.String() }),
}

func mustCompile(t testing.TB, p v1alpha1.ScaleProfileSpec) *Compiled {
	t.Helper()
	c, err := Compile(p)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return c
}

func sample(kind string) v1alpha1.ScaleProfileSpec {
	for _, p := range Samples() {
		if p.Target.Kind == kind {
			return p
		}
	}
	panic("no sample " + kind)
}

// foreignProfile is a CRD scaleplane does not own: its member groups are
// "zones" with "size", their readiness is a map in status, and the scale
// config is JSON in an annotation because the schema has no room for it.
func foreignProfile() v1alpha1.ScaleProfileSpec {
	return v1alpha1.ScaleProfileSpec{
		Target:       v1alpha1.TargetKind{APIVersion: "db.example.com/v2", Kind: "Store", Resource: "stores"},
		ReplicasPath: ".spec.size.perZone",
		ScaleConfig:  v1alpha1.ScaleConfigLocation{Annotation: "scaleplane.io/scale-config"},
		MemberGroups: &v1alpha1.MemberGroups{
			Path:         ".spec.zones",
			NameField:    "zone",
			MembersField: "size",
			Status: &v1alpha1.MemberGroupStatus{
				Path:                    ".status.zones",
				Style:                   v1alpha1.MemberGroupStatusMap,
				ReadyMembersField:       "ready",
				ObservedGenerationField: "observedGeneration",
			},
		},
		Status:    v1alpha1.StatusPaths{ReplicasPath: ".status.readyPerZone", SelectorPath: ".status.scaleSelector"},
		Pods:      v1alpha1.Pods{Labels: map[string]string{"app.kubernetes.io/instance": "${name}"}, MemberGroupLabel: "db.example.com/zone"},
		HPATarget: v1alpha1.HPATarget{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "${name}-store"},
	}
}
