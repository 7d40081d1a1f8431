package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// TestFanOutLeavesSlimFaasPinAlone: a SlimFaas function pinned by its
// annotations (ReplicasMin 1, nothing above) scaled by hand to 3 is no
// fan-out: its config is read only, so nothing is written and no Scaled
// event claims a re-pin that never happened.
func TestFanOutLeavesSlimFaasPinAlone(t *testing.T) {
	v, err := profile.Compile(v1alpha1.ScaleProfileSpec{
		Target:      v1alpha1.TargetKind{APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments"},
		ScaleConfig: v1alpha1.ScaleConfigLocation{Annotation: scaling.SlimFaasFunction, Format: v1alpha1.ScaleConfigFormatSlimFaas},
	})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetName("fn")
	u.SetAnnotations(map[string]string{scaling.SlimFaasFunction: "true", scaling.SlimFaasReplicasMin: "1"})
	if err := unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	w, errs := v.Read(u)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, changed, err := fanOutObject(v, u, w); err != nil || changed {
		t.Errorf("fanOutObject changed %v, err %v: want nothing to write", changed, err)
	}
}
