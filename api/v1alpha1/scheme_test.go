package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestAddToScheme: a scheme built with AddToScheme knows ScaleProfile and
// its list under scaleplane.io/v1alpha1, and the generated deep copy shares
// nothing with the original.
func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	for _, obj := range []runtime.Object{&ScaleProfile{}, &ScaleProfileList{}, &Scaling{}, &ScalingList{}} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil {
			t.Fatalf("ObjectKinds(%T): %v", obj, err)
		}
		if len(gvks) != 1 || gvks[0].GroupVersion() != GroupVersion {
			t.Errorf("%T is %v, want one kind in %v", obj, gvks, GroupVersion)
		}
	}
	in := &ScaleProfile{Spec: ScaleProfileSpec{
		Target:       TargetKind{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: "RackedCluster", Resource: "rackedclusters"},
		MemberGroups: &MemberGroups{Path: ".spec.racks", Status: &MemberGroupStatus{Path: ".status.racks"}},
		Pods:         Pods{Labels: map[string]string{"app": NamePlaceholder}},
	}}
	out := in.DeepCopy()
	out.Spec.MemberGroups.Status.Path = ".status.other"
	out.Spec.Pods.Labels["app"] = "other"
	if diff := cmp.Diff(".status.racks", in.Spec.MemberGroups.Status.Path); diff != "" {
		t.Errorf("DeepCopy shares member groups (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(NamePlaceholder, in.Spec.Pods.Labels["app"]); diff != "" {
		t.Errorf("DeepCopy shares pod labels (-want +got):\n%s", diff)
	}
}
