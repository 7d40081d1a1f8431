package profile_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/config"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
	"github.com/scaleplane/scaleplane/scaling"
)

func scaledAppCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "crd", "apps.example.org_scaledapps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// M7, S2, C6 start here: the limits of every field scaleplane writes,
// read from the served schema.
func TestWithCRDReadsTheLimitsOfEveryWrittenField(t *testing.T) {
	v, err := profile.Compile(profiletest.ScaledApp())
	if err != nil {
		t.Fatal(err)
	}
	v, err = v.WithCRD(scaledAppCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	want := scaling.Schema{
		Replicas:    scaling.Limits{Known: true, Type: "integer", Minimum: f64(0), Default: i64(1)},
		MinReplicas: scaling.Limits{Known: true, Type: "integer", Minimum: f64(1)},
		MaxReplicas: scaling.Limits{Known: true, Type: "integer", Minimum: f64(1)},
		Members:     scaling.Limits{Known: true, Type: "integer", Minimum: f64(0), Maximum: f64(10)},
		// This test CRD's config object declares only the range, and
		// preserves unknown fields: nothing of it is pruned.
	}
	if diff := cmp.Diff(want, v.Layout().Schema); diff != "" {
		t.Errorf("Layout().Schema (-want +got):\n%s", diff)
	}
}

// A scale config object whose schema lacks a config field loses that
// field to the API server's pruning before admission: the profile's
// notes name every such field, and a schema that declares them all, or
// preserves unknown fields, has none.
func TestSchemaNotesNameConfigFieldsTheSchemaPrunes(t *testing.T) {
	spec := profiletest.ScaledApp()
	profile.Default(&spec)
	crd := scaledAppCRD(t)
	// The config object declares only the range, and without
	// x-kubernetes-preserve-unknown-fields prunes the rest.
	editSchemaAt(t, crd, spec.ScaleConfig.Path, func(cfg *apiextensionsv1.JSONSchemaProps) {
		cfg.XPreserveUnknownFields = nil
	})
	lim, errs := profile.CheckCRD(spec, crd, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var note string
	for _, n := range profile.SchemaNotes(lim, spec) {
		if strings.Contains(n, "drops these fields") {
			note = n
		}
	}
	if !strings.Contains(note, spec.ScaleConfig.Path+".{behavior,dependsOn,fallback,idle,metrics,pollingIntervalSeconds,scalingModifiers,schedule,triggers}") {
		t.Errorf("SchemaNotes gives no note naming the pruned config fields; got %q", note)
	}

	editSchemaAt(t, crd, spec.ScaleConfig.Path, func(cfg *apiextensionsv1.JSONSchemaProps) {
		for _, f := range []string{"behavior", "dependsOn", "fallback", "idle", "metrics", "pollingIntervalSeconds", "scalingModifiers", "schedule", "triggers"} {
			cfg.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
		}
	})
	if lim, _ := profile.CheckCRD(spec, crd, nil); lim.DroppedConfig != nil {
		t.Errorf("a schema declaring every config field drops %v", lim.DroppedConfig)
	}
	editSchemaAt(t, crd, spec.ScaleConfig.Path, func(cfg *apiextensionsv1.JSONSchemaProps) {
		*cfg = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	})
	if lim, _ := profile.CheckCRD(spec, crd, nil); lim.DroppedConfig != nil {
		t.Errorf("a config object preserving unknown fields drops %v", lim.DroppedConfig)
	}
}

// A config object that declares the range and also preserves unknown
// fields keeps every other config field: the API server prunes nothing
// under it, so the profile names none as dropped.
func TestSchemaNotesNameNoFieldsAConfigPreservingUnknownFieldsKeeps(t *testing.T) {
	spec := profiletest.ScaledApp()
	profile.Default(&spec)
	crd := scaledAppCRD(t)
	editSchemaAt(t, crd, spec.ScaleConfig.Path, func(cfg *apiextensionsv1.JSONSchemaProps) {
		cfg.XPreserveUnknownFields = ptr.To(true)
	})
	lim, errs := profile.CheckCRD(spec, crd, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if lim.DroppedConfig != nil {
		t.Errorf("a config object with properties and x-kubernetes-preserve-unknown-fields drops %v, want none", lim.DroppedConfig)
	}
	if !lim.MinReplicas.Known || !lim.MaxReplicas.Known {
		t.Errorf("the declared range's limits are lost: %+v %+v", lim.MinReplicas, lim.MaxReplicas)
	}
}

// Pruning is not only of the config object's own fields: a declared
// field whose schema is a closed object loses the fields it does not
// declare, however deep. A triggers list whose items declare no
// threshold or metadata loses them from every trigger.
func TestSchemaNotesNameNestedConfigFieldsTheSchemaPrunes(t *testing.T) {
	spec := profiletest.ScaledApp()
	profile.Default(&spec)
	crd := scaledAppCRD(t)
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	editSchemaAt(t, crd, spec.ScaleConfig.Path, func(cfg *apiextensionsv1.JSONSchemaProps) {
		cfg.XPreserveUnknownFields = nil
		for _, f := range []string{"behavior", "dependsOn", "fallback", "idle", "metrics", "pollingIntervalSeconds", "scalingModifiers", "schedule"} {
			cfg.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
		}
		cfg.Properties["triggers"] = apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"name": str, "type": str, "source": str, "query": str, "activationThreshold": {XIntOrString: true},
				"metadata": {Type: "object"},
			},
		}}}
	})
	lim, errs := profile.CheckCRD(spec, crd, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if want := []string{"triggers[*].metadata", "triggers[*].threshold"}; !slices.Equal(lim.DroppedConfig, want) {
		t.Errorf("dropped %v, want %v", lim.DroppedConfig, want)
	}
}

// editSchemaAt changes, with edit, the schema of the field at path
// (dotted, from the object's root) in crd's first version.
func editSchemaAt(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, path string, edit func(*apiextensionsv1.JSONSchemaProps)) {
	t.Helper()
	var at func(p *apiextensionsv1.JSONSchemaProps, segs []string)
	at = func(p *apiextensionsv1.JSONSchemaProps, segs []string) {
		if len(segs) == 0 {
			edit(p)
			return
		}
		child, ok := p.Properties[segs[0]]
		if !ok {
			t.Fatalf("CRD %s has no %s in its schema", crd.Name, path)
		}
		at(&child, segs[1:])
		p.Properties[segs[0]] = child
	}
	at(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, strings.Split(strings.TrimPrefix(path, "."), "."))
}

// The sample profiles match the sample CRDs: the binary activates them
// with their schema.
func TestCheckCRDSamples(t *testing.T) {
	crds, err := config.SampleCRDs()
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range crds {
		byKind[c.Spec.Names.Kind] = c
	}
	for _, p := range profile.Samples() {
		if _, errs := profile.CheckCRD(p, byKind[p.Target.Kind], nil); len(errs) > 0 {
			t.Errorf("%s: %v", p.Target.Kind, errs)
		}
	}
}

// Every disagreement between a profile and the CRD, at the profile's field
// paths, all at once.
func TestCheckCRDMismatches(t *testing.T) {
	crd := scaledAppCRD(t)
	cases := []struct {
		name string
		edit func(p *v1alpha1.ScaleProfileSpec, crd *apiextensionsv1.CustomResourceDefinition)
		want []string
	}{
		{"version not served", func(p *v1alpha1.ScaleProfileSpec, _ *apiextensionsv1.CustomResourceDefinition) {
			p.Target.APIVersion = "apps.example.org/v2"
		}, []string{`target.apiVersion: Invalid value: "apps.example.org/v2": CRD scaledapps.apps.example.org does not serve version v2 (served: v1)`}},
		{"paths not in the schema, wrong types, /scale disagreeing", func(p *v1alpha1.ScaleProfileSpec, _ *apiextensionsv1.CustomResourceDefinition) {
			p.ReplicasPath = ".spec.image"
			p.ScaleConfig.Path = ".spec.autoscaling"
			p.MemberGroups.MembersField = "size"
			p.Status.SelectorPath = ".status.podSelector"
		}, []string{
			`replicasPath: Invalid value: ".spec.image": the CRD's /scale specReplicasPath is .spec.replicas`,
			`status.selectorPath: Invalid value: ".status.podSelector": the CRD's /scale labelSelectorPath is .status.selector`,
			`replicasPath: Invalid value: ".spec.image": the CRD's schema types it "string", not integer`,
			`scaleConfig.path: Invalid value: ".spec.autoscaling": the CRD's schema has no field "autoscaling" under .spec`,
			`memberGroups.membersField: Invalid value: "size": the items of .spec.shards have no integer field size in the CRD's schema`,
			`status.selectorPath: Invalid value: ".status.podSelector": the CRD's schema has no field "podSelector" under .status`,
		}},
		{"no /scale", func(_ *v1alpha1.ScaleProfileSpec, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Subresources.Scale = nil
		}, []string{`target: Required value: CRD scaledapps.apps.example.org version v1 has no /scale subresource; add subresources.scale (specReplicasPath, statusReplicasPath) to it`}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			p := profiletest.ScaledApp()
			c := crd.DeepCopy()
			tt.edit(&p, c)
			_, errs := profile.CheckCRD(p, c, nil)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CheckCRD (-want +got):\n%s", diff)
			}
			v, err := profile.Compile(p)
			if err == nil {
				if _, err := v.WithCRD(c); err == nil || !strings.Contains(err.Error(), "does not match CRD scaledapps.apps.example.org") {
					t.Errorf("WithCRD error = %v", err)
				}
			}
		})
	}
}
