package profile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

func deploymentProfile() v1alpha1.ScaleProfileSpec {
	return v1alpha1.ScaleProfileSpec{
		Target:      v1alpha1.TargetKind{APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments"},
		ScaleConfig: v1alpha1.ScaleConfigLocation{Annotation: "scaleplane.io/scale-config"},
	}
}

func TestBuiltInGroups(t *testing.T) {
	got := map[string]bool{}
	for _, g := range []string{"", "apps", "batch", "policy", "networking.k8s.io", "k8s.io", "samples.scaleplane.io", "keda.sh", "ray.io"} {
		got[g] = BuiltIn(g)
	}
	want := map[string]bool{"": true, "apps": true, "batch": true, "policy": true, "networking.k8s.io": true, "k8s.io": true,
		"samples.scaleplane.io": false, "keda.sh": false, "ray.io": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BuiltIn (-want +got):\n%s", diff)
	}
}

// TestBuiltInKindRefusesWhatNeedsAWebhook: a profile of a built-in kind
// keeps C in an annotation and owns no other field; config check (and a
// ScaleProfile) refuse the rest with the field to change.
func TestBuiltInKindRefusesWhatNeedsAWebhook(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1alpha1.ScaleProfileSpec)
		want   []string
	}{
		{name: "annotation config", mutate: func(*v1alpha1.ScaleProfileSpec) {}},
		{name: "StatefulSet", mutate: func(p *v1alpha1.ScaleProfileSpec) {
			p.Target = v1alpha1.TargetKind{APIVersion: "apps/v1", Kind: "StatefulSet", Resource: "statefulsets"}
		}},
		{name: "config at a spec path", mutate: func(p *v1alpha1.ScaleProfileSpec) {
			p.ScaleConfig = v1alpha1.ScaleConfigLocation{Path: ".spec.scaleConfig"}
		}, want: []string{"FieldValueInvalid scaleConfig.path"}},
		{name: "member groups, status and a child HPA target", mutate: func(p *v1alpha1.ScaleProfileSpec) {
			p.MemberGroups = &v1alpha1.MemberGroups{Path: ".spec.racks"}
			p.Status.ReplicasPath = ".status.readyReplicas"
			p.HPATarget = v1alpha1.HPATarget{APIVersion: "apps/v1", Kind: "ReplicaSet"}
		}, want: []string{"FieldValueForbidden memberGroups", "FieldValueForbidden status", "FieldValueForbidden hpaTarget"}},
		{name: "replicas elsewhere", mutate: func(p *v1alpha1.ScaleProfileSpec) { p.ReplicasPath = ".spec.template.replicas" },
			want: []string{"FieldValueInvalid replicasPath"}},
		{name: "SlimFaas on its key", mutate: func(p *v1alpha1.ScaleProfileSpec) {
			p.ScaleConfig = v1alpha1.ScaleConfigLocation{Annotation: scaling.SlimFaasFunction, Format: v1alpha1.ScaleConfigFormatSlimFaas}
		}},
		{name: "SlimFaas on another key", mutate: func(p *v1alpha1.ScaleProfileSpec) {
			p.ScaleConfig = v1alpha1.ScaleConfigLocation{Annotation: "SlimFaas/Scale", Format: v1alpha1.ScaleConfigFormatSlimFaas}
		}, want: []string{"FieldValueInvalid scaleConfig.annotation"}},
		{name: "unknown format", mutate: func(p *v1alpha1.ScaleProfileSpec) { p.ScaleConfig.Format = "YAML" },
			want: []string{"FieldValueNotSupported scaleConfig.format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := deploymentProfile()
			tt.mutate(&p)
			got := errorStrings(Validate(&p, nil))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if len(tt.want) == 0 {
				c, err := Compile(p)
				if err != nil {
					t.Fatal(err)
				}
				if c.Admission() {
					t.Errorf("a built-in kind's profile asks for admission webhooks")
				}
			}
		})
	}
	c, err := Compile(v1alpha1.ScaleProfileSpec{
		Target:      v1alpha1.TargetKind{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: "Function", Resource: "functions"},
		ScaleConfig: v1alpha1.ScaleConfigLocation{Path: ".spec.scaleConfig"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Admission() {
		t.Errorf("a CRD's profile gets no admission webhooks")
	}
	crdSlimFaas := c.Spec()
	crdSlimFaas.ScaleConfig = v1alpha1.ScaleConfigLocation{Annotation: scaling.SlimFaasFunction, Format: v1alpha1.ScaleConfigFormatSlimFaas}
	if diff := cmp.Diff([]string{"FieldValueInvalid scaleConfig.format"}, errorStrings(Validate(&crdSlimFaas, nil))); diff != "" {
		t.Errorf("SlimFaas format on a CRD (-want +got):\n%s", diff)
	}
}

// TestReadSlimFaasNeverWritesBack: a SlimFaas profile reads C from the
// SlimFaas annotations, reports their errors at the annotation's key, and
// WriteSpec leaves them alone (a derived config is read only).
func TestReadSlimFaasNeverWritesBack(t *testing.T) {
	p := deploymentProfile()
	p.ScaleConfig = v1alpha1.ScaleConfigLocation{Annotation: scaling.SlimFaasFunction, Format: v1alpha1.ScaleConfigFormatSlimFaas}
	c, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Layout().ConfigPath.String(); got != "metadata.annotations[SlimFaas/*]" {
		t.Errorf("rules report the config at %q, want metadata.annotations[SlimFaas/*]", got)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetName("fn")
	u.SetAnnotations(map[string]string{scaling.SlimFaasFunction: "true", scaling.SlimFaasReplicasAtStart: "2"})
	_ = unstructured.SetNestedField(u.Object, int64(0), "spec", "replicas")
	w, errs := c.Read(u)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := &scaling.Config{MinReplicas: ptr(int32(0)), MaxReplicas: ptr(int32(2)),
		Idle: &scaling.Idle{ReplicasAtStart: ptr(int32(2)), TimeoutSeconds: ptr(int32(300))}}
	if diff := cmp.Diff(want, w.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	before := u.DeepCopy()
	w.Config.MinReplicas, w.Config.MaxReplicas = ptr(int32(3)), ptr(int32(3))
	if err := c.WriteSpec(u, w); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.Object, u.Object); diff != "" {
		t.Errorf("WriteSpec changed a SlimFaas workload (-before +after):\n%s", diff)
	}
	changed := u.DeepCopy()
	changed.SetAnnotations(map[string]string{scaling.SlimFaasFunction: "true", scaling.SlimFaasReplicasAtStart: "3"})
	if c.SameScalingFields(u, changed) {
		t.Errorf("a changed SlimFaas annotation counts as the same scaling fields")
	}

	u.SetAnnotations(map[string]string{scaling.SlimFaasFunction: "true", scaling.SlimFaasScale: `{"ReplicaMax": "ten"}`})
	w, errs = c.Read(u)
	if diff := cmp.Diff([]string{"FieldValueInvalid metadata.annotations[SlimFaas/Scale]"}, errorStrings(errs)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if w.Config != nil {
		t.Errorf("a SlimFaas config with errors was read as %+v", w.Config)
	}
}
