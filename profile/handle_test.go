package profile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

func scyllaHandleSpec() v1alpha1.ScaleHandleSpec {
	return v1alpha1.ScaleHandleSpec{
		TargetRef: v1alpha1.ScaleHandleTarget{APIVersion: "scylla.scylladb.com/v1", Kind: "ScyllaCluster", Name: "db"},
		MemberGroups: v1alpha1.MemberGroups{
			Path:   ".spec.datacenter.racks",
			Status: &v1alpha1.MemberGroupStatus{Path: ".status.racks", Style: v1alpha1.MemberGroupStatusMap},
		},
		Pods: v1alpha1.Pods{Labels: map[string]string{"scylla/cluster": "${name}"}, MemberGroupLabel: "scylla/rack"},
	}
}

// The handle's view of a ScyllaCluster reads its racks, their ready
// members from the status map, and builds the selector of one rack's pods
// (C3); writing groups touches only the members.
func TestHandleTargetReadsTheTargetsRacks(t *testing.T) {
	v, errs := HandleTarget(scyllaHandleSpec())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	u := makeObj("ScyllaCluster", "db").
		set(".spec.datacenter.racks", list{obj{"name": "a", "members": 1}, obj{"name": "b", "members": 2}}).
		set(".status.racks", obj{"b": obj{"readyMembers": 2}, "a": obj{"readyMembers": 1}}).obj()
	w, errs := v.Read(u)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	one, two := int32(1), int32(2)
	wantGroups := []scaling.Group{{Name: "a", Members: &one}, {Name: "b", Members: &two}}
	if diff := cmp.Diff(wantGroups, w.Groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	wantStatus := []scaling.GroupStatus{{Name: "a", ReadyMembers: &one}, {Name: "b", ReadyMembers: &two}}
	if diff := cmp.Diff(wantStatus, w.GroupStatus); diff != "" {
		t.Errorf("group status (-want +got):\n%s", diff)
	}
	sel, err := v.PodSelector(u)
	if err != nil {
		t.Fatal(err)
	}
	if want := "scylla/cluster=db,scylla/rack=a"; sel != want {
		t.Errorf("selector = %q, want %q", sel, want)
	}
	out := u.DeepCopy()
	five := int32(5)
	if err := v.WriteSpec(out, scaling.Workload{Groups: []scaling.Group{{Name: "a", Members: &five}, {Name: "b", Members: &five}}}); err != nil {
		t.Fatal(err)
	}
	want := makeObj("ScyllaCluster", "db").
		set(".spec.datacenter.racks", list{obj{"name": "a", "members": 5}, obj{"name": "b", "members": 5}}).
		set(".status.racks", obj{"b": obj{"readyMembers": 2}, "a": obj{"readyMembers": 1}}).obj()
	if diff := cmp.Diff(want.Object, out.Object); diff != "" {
		t.Errorf("written object (-want +got):\n%s", diff)
	}
}

// A handle's mistakes are reported at the handle's own field paths, all
// together.
func TestHandleTargetErrorsAtHandlePaths(t *testing.T) {
	spec := scyllaHandleSpec()
	spec.TargetRef.APIVersion = "scylla/v1/extra"
	spec.MemberGroups.Path = ".status.racks"
	spec.Pods.MemberGroupLabel = ""
	_, errs := HandleTarget(spec)
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{"spec.targetRef.apiVersion", "spec.memberGroups.path", "spec.pods.memberGroupLabel"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error paths (-want +got):\n%s\nerrors: %v", diff, errs)
	}
}

// The ScaleHandle profile matches the generated CRD: a ScaleProfile of it
// activates as any kind's (its /scale paths, its scale config's bounds).
func TestScaleHandleProfileMatchesItsCRD(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "scaleplane.io_scalehandles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(ScaleHandleProfile()); err != nil {
		t.Fatal(err)
	}
	if _, errs := CheckCRD(ScaleHandleProfile(), crd, nil); len(errs) > 0 {
		t.Errorf("CheckCRD: %v", errs)
	}
}
