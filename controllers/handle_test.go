package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

func scyllaHandle(replicas, statusReplicas *int32, selector string) *v1alpha1.ScaleHandle {
	return &v1alpha1.ScaleHandle{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec: v1alpha1.ScaleHandleSpec{
			TargetRef: v1alpha1.ScaleHandleTarget{APIVersion: "scylla.scylladb.com/v1", Kind: "ScyllaCluster", Name: "db"},
			Replicas:  replicas,
			MemberGroups: v1alpha1.MemberGroups{
				Path:   ".spec.datacenter.racks",
				Status: &v1alpha1.MemberGroupStatus{Path: ".status.racks", Style: v1alpha1.MemberGroupStatusMap},
			},
			Pods: v1alpha1.Pods{Labels: map[string]string{"scylla/cluster": "${name}"}, MemberGroupLabel: "scylla/rack"},
		},
		Status: v1alpha1.ScaleHandleStatus{Replicas: statusReplicas, Selector: selector},
	}
}

// scyllaTarget is a ScyllaCluster with racks a, b, c of members and the
// given ready counts (negative: not reported).
func scyllaTarget(members int64, ready ...int64) *unstructured.Unstructured {
	racks := []interface{}{}
	status := map[string]interface{}{}
	for i, name := range []string{"a", "b", "c"} {
		racks = append(racks, map[string]interface{}{"name": name, "members": members})
		if ready[i] >= 0 {
			status[name] = map[string]interface{}{"readyMembers": ready[i]}
		}
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "scylla.scylladb.com/v1", "kind": "ScyllaCluster",
		"metadata": map[string]interface{}{"name": "db", "namespace": "ns", "generation": int64(2)},
		"spec":     map[string]interface{}{"datacenter": map[string]interface{}{"racks": racks}},
		"status":   map[string]interface{}{"racks": status},
	}}
}

func i32(n int32) *int32 { return &n }

// C2 and C3 on a handle: status.replicas only when every rack of the
// target reports the same ready count, kept while they disagree; the
// selector picks rack a's pods.
func TestHandleStatusFromTargetRacks(t *testing.T) {
	const sel = "scylla/cluster=db,scylla/rack=a"
	cases := []struct {
		name        string
		handle      *v1alpha1.ScaleHandle
		target      *unstructured.Unstructured
		wantStatus  map[string]interface{}
		wantChanged bool
	}{
		{"racks agree", scyllaHandle(i32(3), nil, ""), scyllaTarget(3, 3, 3, 3),
			map[string]interface{}{"replicas": int64(3), "selector": sel}, true},
		{"racks disagree, none before", scyllaHandle(i32(3), nil, sel), scyllaTarget(3, 3, 2, 3),
			map[string]interface{}{"selector": sel}, false},
		{"racks disagree, kept", scyllaHandle(i32(3), i32(2), sel), scyllaTarget(3, 3, 2, 3),
			map[string]interface{}{"replicas": int64(2), "selector": sel}, false},
		{"a rack not reporting", scyllaHandle(i32(3), i32(2), sel), scyllaTarget(3, 3, -1, 3),
			map[string]interface{}{"replicas": int64(2), "selector": sel}, false},
		{"unchanged", scyllaHandle(i32(3), i32(3), sel), scyllaTarget(3, 3, 3, 3),
			map[string]interface{}{"replicas": int64(3), "selector": sel}, false},
		{"no R: status still reported", scyllaHandle(nil, nil, sel), scyllaTarget(1, 1, 1, 1),
			map[string]interface{}{"replicas": int64(1), "selector": sel}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			view, errs := profile.HandleTarget(tc.handle.Spec)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			tw, errs := view.Read(tc.target)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			plan, err := planHandleStatus(tc.handle, view, tc.target, tw)
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedMap(plan.apply.Object, "status")
			if diff := cmp.Diff(tc.wantStatus, got); diff != "" {
				t.Errorf("status apply (-want +got):\n%s", diff)
			}
			if plan.changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", plan.changed, tc.wantChanged)
			}
			if plan.apply.GetKind() != v1alpha1.ScaleHandleKind || plan.apply.GetName() != "db" {
				t.Errorf("apply names %s %s, want the ScaleHandle db", plan.apply.GetKind(), plan.apply.GetName())
			}
		})
	}
}

// C1 on a handle: the handle's R against the target's racks; a rack set
// by hand to another count is a change to put back, and no R is none.
func TestHandleFanOutPutsBackARackSetByHand(t *testing.T) {
	view, errs := profile.HandleTarget(scyllaHandle(nil, nil, "").Spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	target := scyllaTarget(3, -1, -1, -1)
	racks, _, _ := unstructured.NestedSlice(target.Object, "spec", "datacenter", "racks")
	racks[1].(map[string]interface{})["members"] = int64(7)
	_ = unstructured.SetNestedSlice(target.Object, racks, "spec", "datacenter", "racks")
	tw, _ := view.Read(target)

	want, changed := scaling.FanOut(handleWorkload(scyllaHandle(i32(3), nil, ""), tw))
	if !changed {
		t.Fatal("a rack at 7 under R 3 is not put back")
	}
	var got []int32
	for _, g := range want.Groups {
		got = append(got, *g.Members)
	}
	if diff := cmp.Diff([]int32{3, 3, 3}, got); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	if _, changed := scaling.FanOut(handleWorkload(scyllaHandle(nil, nil, ""), tw)); changed {
		t.Error("a handle without R sizes the racks; they are the target's own")
	}
}

// Of several handles on one target, every reconcile agrees on the oldest
// (then the first by name); one being deleted does not hold it.
func TestOldestHandleHoldsTheTarget(t *testing.T) {
	at := func(name string, sec int64, deleting bool) v1alpha1.ScaleHandle {
		h := v1alpha1.ScaleHandle{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0)}}
		if deleting {
			now := metav1.Unix(sec+100, 0)
			h.DeletionTimestamp = &now
		}
		return h
	}
	cases := []struct {
		name    string
		handles []v1alpha1.ScaleHandle
		want    string
	}{
		{"one", []v1alpha1.ScaleHandle{at("a", 5, false)}, "a"},
		{"oldest", []v1alpha1.ScaleHandle{at("b", 5, false), at("a", 9, false)}, "b"},
		{"same time: by name", []v1alpha1.ScaleHandle{at("b", 5, false), at("a", 5, false)}, "a"},
		{"oldest is going", []v1alpha1.ScaleHandle{at("b", 5, true), at("a", 9, false)}, "a"},
		{"the same handle twice", []v1alpha1.ScaleHandle{at("a", 5, false), at("a", 5, false)}, "a"},
	}
	for _, tc := range cases {
		if got := oldestHandle(tc.handles); got != tc.want {
			t.Errorf("%s: oldestHandle = %q, want %q", tc.name, got, tc.want)
		}
	}
}
