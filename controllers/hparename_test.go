package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/scaleplane/scaleplane/profile"
)

// viewInGroup is the sample profile of kind with its kind moved to group,
// as a second operator's kind of the same name.
func viewInGroup(t *testing.T, kind, group string) *profile.Compiled {
	t.Helper()
	for _, p := range profile.Samples() {
		if p.Target.Kind == kind {
			p.Target.APIVersion = group + "/v1"
			v, err := profile.Compile(p)
			if err != nil {
				t.Fatalf("view of %s.%s: %v", kind, group, err)
			}
			return v
		}
	}
	t.Fatalf("no sample profile %s", kind)
	return nil
}

// hpaOf reads the HPA ns/name, nil when there is none.
func hpaOf(t *testing.T, c client.Client, name string) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, h); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return h
}

// C4: two kinds named RackedCluster in two API groups, each with a
// workload "db" in one namespace, get one built-in HPA each: the HPA's
// name carries the group, so neither finds its name taken by the other's.
func TestHPAsOfOneKindNameInTwoGroupsDoNotCollide(t *testing.T) {
	ours := rc("db").replicas(2).rack("a", 2).config(bounds(2, 6, cpu(50))).obj()
	ours.SetResourceVersion("")
	other := ours.DeepCopy()
	other.SetAPIVersion("db.example.com/v1")
	other.SetUID("uid-db-example")
	r, c, events := fakeReconciler(t, "RackedCluster", interceptor.Funcs{}, ours, other)
	r2 := &Reconciler{
		view: viewInGroup(t, "RackedCluster", "db.example.com"), kind: "RackedCluster", cache: c, api: c, writer: c, events: events,
		keda: newKEDAWatch(nil, -1), conflictRetries: 5, hpaIndex: hpaTargetIndex, owner: "scaleplane",
	}
	for range 2 {
		if err := r.reconcileHPA(context.Background(), ours); err != nil {
			t.Fatalf("reconcileHPA of samples.scaleplane.io: %v", err)
		}
		if err := r2.reconcileHPA(context.Background(), other); err != nil {
			t.Fatalf("reconcileHPA of db.example.com: %v", err)
		}
	}
	for _, w := range []struct {
		name string
		uid  types.UID
		ref  string
	}{
		{"db-rackedcluster.samples.scaleplane.io", "uid-db", "samples.scaleplane.io/v1alpha1"},
		{"db-rackedcluster.db.example.com", "uid-db-example", "db.example.com/v1"},
	} {
		h := hpaOf(t, c, w.name)
		if h == nil {
			t.Errorf("no HPA %s", w.name)
			continue
		}
		if owner := metav1.GetControllerOf(h); owner == nil || owner.UID != w.uid {
			t.Errorf("HPA %s controlled by %v, want uid %s", w.name, owner, w.uid)
		}
		if got := h.Spec.ScaleTargetRef.APIVersion; got != w.ref {
			t.Errorf("HPA %s targets %s, want %s", w.name, got, w.ref)
		}
	}
	want := []string{
		"Normal HPAApplied created HorizontalPodAutoscaler db-rackedcluster.samples.scaleplane.io: replicas 2..6 on 1 metric(s), target RackedCluster db",
		"Normal HPAApplied created HorizontalPodAutoscaler db-rackedcluster.db.example.com: replicas 2..6 on 1 metric(s), target RackedCluster db",
	}
	if diff := cmp.Diff(want, drain(events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// legacyHPAOf is the HPA an older release made for u: desiredHPA's, under
// LegacyHPAName and without the group label that release did not write.
func legacyHPAOf(t *testing.T, u *unstructured.Unstructured) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	v := sampleView(t, u.GetKind())
	w, _ := v.Read(u)
	h, err := desiredHPA(v, "scaleplane", u, decideWith(t, v, w))
	if err != nil {
		t.Fatal(err)
	}
	h.TypeMeta = metav1.TypeMeta{}
	h.Name = LegacyHPAName(u.GetName(), u.GetKind())
	delete(h.Labels, "scaleplane.io/workload-group")
	return h
}

// writeLog records the HPA writes a reconcile makes, in order, and, at
// each delete, whether the HPA under newName existed: the workload must
// never be left without an HPA of ours.
type writeLog struct {
	newName string
	writes  []string
}

func (l *writeLog) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			name := "?"
			if u, ok := obj.(interface{ GetName() string }); ok {
				name = u.GetName()
			}
			l.writes = append(l.writes, "apply "+name)
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: l.newName}, &autoscalingv2.HorizontalPodAutoscaler{})
			l.writes = append(l.writes, fmt.Sprintf("delete %s (new one there: %t)", obj.GetName(), err == nil))
			return c.Delete(ctx, obj, opts...)
		},
	}
}

// C4 across an upgrade: the HPA an older release made under
// "<name>-<kind>" is replaced by one under HPAName, created first and the
// old one deleted after, so the workload is never without an HPA; a second
// reconcile writes nothing.
func TestReconcileHPARenamesItsLegacyHPAWithoutAGap(t *testing.T) {
	obj := rc("auto").replicas(2).rack("a", 2).config(bounds(2, 6, cpu(50))).obj()
	obj.SetResourceVersion("")
	legacy := legacyHPAOf(t, obj)
	const newName = "auto-rackedcluster.samples.scaleplane.io"
	log := &writeLog{newName: newName}
	r, c, events := fakeReconciler(t, "RackedCluster", log.funcs(), obj, legacy)
	for range 2 {
		if err := r.reconcileHPA(context.Background(), obj); err != nil {
			t.Fatalf("reconcileHPA: %v", err)
		}
	}
	wantWrites := []string{
		"apply " + newName,
		"delete auto-rackedcluster (new one there: true)",
	}
	if diff := cmp.Diff(wantWrites, log.writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if h := hpaOf(t, c, "auto-rackedcluster"); h != nil {
		t.Errorf("legacy HPA still there: %v", h.ObjectMeta)
	}
	h := hpaOf(t, c, newName)
	if h == nil {
		t.Fatalf("no HPA %s", newName)
	}
	if diff := cmp.Diff(legacy.Spec, h.Spec); diff != "" {
		t.Errorf("renamed HPA's spec (-want +got):\n%s", diff)
	}
	wantEvents := []string{
		"Normal HPAApplied created HorizontalPodAutoscaler " + newName + ": replicas 2..6 on 1 metric(s), target RackedCluster auto",
		"Normal HPADeleted deleted HorizontalPodAutoscaler auto-rackedcluster: renamed to " + newName,
	}
	if diff := cmp.Diff(wantEvents, drain(events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// C4 and C5 across an upgrade: an HPA under the legacy name that
// scaleplane did not make for this workload is never deleted nor written,
// whether or not the workload wants an HPA; only scaleplane's own, when
// the workload wants none, goes.
func TestReconcileHPALeavesHPAsItDidNotMakeUnderTheLegacyName(t *testing.T) {
	ranged := rc("auto").replicas(2).rack("a", 2).config(bounds(2, 6, cpu(50))).obj()
	pinned := rc("auto").replicas(2).rack("a", 2).obj()
	yes := true
	otherTarget := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "unrelated"}
	tests := []struct {
		name     string
		workload *unstructured.Unstructured
		hpa      func(h *autoscalingv2.HorizontalPodAutoscaler)
		kept     bool
	}{{
		name: "a user's HPA of that name", workload: ranged, kept: true,
		hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.OwnerReferences, h.Labels = nil, nil
			h.Spec.ScaleTargetRef = otherTarget
		},
	}, {
		name: "the workload's operator's HPA, not labelled as scaleplane's", workload: ranged, kept: true,
		hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Labels = map[string]string{"app.kubernetes.io/managed-by": "db-operator"}
			h.Spec.ScaleTargetRef = otherTarget
		},
	}, {
		name: "another owner's HPA", workload: ranged, kept: true,
		hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Labels["scaleplane.io/owner"] = "embedding-operator"
			h.Spec.ScaleTargetRef = otherTarget
		},
	}, {
		name: "scaleplane's HPA of a same-named workload of another group", workload: ranged, kept: true,
		hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.OwnerReferences = []metav1.OwnerReference{{APIVersion: "db.example.com/v1", Kind: "RackedCluster", Name: "auto", UID: "uid-other", Controller: &yes}}
			h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "db.example.com/v1", Kind: "RackedCluster", Name: "auto"}
		},
	}, {
		name: "a user's HPA of that name, workload without a range", workload: pinned, kept: true,
		hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.OwnerReferences, h.Labels = nil, nil
			h.Spec.ScaleTargetRef = otherTarget
		},
	}, {
		name: "scaleplane's own, workload without a range", workload: pinned, kept: false,
		hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {},
	}, {
		name: "scaleplane's own from before owner labels, workload without a range", workload: pinned, kept: false,
		hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) { delete(h.Labels, "scaleplane.io/owner") },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.workload.DeepCopy()
			obj.SetResourceVersion("")
			h := legacyHPAOf(t, ranged)
			tt.hpa(h)
			r, c, _ := fakeReconciler(t, "RackedCluster", interceptor.Funcs{}, obj, h)
			before := hpaOf(t, c, h.Name)
			for range 2 {
				if err := r.reconcileHPA(context.Background(), obj); err != nil {
					t.Fatalf("reconcileHPA: %v", err)
				}
			}
			after := hpaOf(t, c, h.Name)
			switch {
			case !tt.kept && after != nil:
				t.Errorf("scaleplane's legacy HPA kept, want it deleted")
			case tt.kept && after == nil:
				t.Errorf("HPA %s deleted, want it left alone", h.Name)
			case tt.kept && after.ResourceVersion != before.ResourceVersion:
				t.Errorf("HPA %s written: resourceVersion %s -> %s", h.Name, before.ResourceVersion, after.ResourceVersion)
			}
		})
	}
}

// C4 and C5 across a kind's move to another owner: an HPA another owner's
// scaleplane made for this very workload under the legacy name scales it;
// this owner neither deletes it (another owner's objects are never
// touched) nor creates its own beside it (two HPAs on one target make
// kube-controller-manager stop both, AmbiguousSelector). It is reported
// as the foreign autoscaler it is to this owner.
func TestReconcileHPAStandsDownBesideAnotherOwnersLegacyHPAOfTheWorkload(t *testing.T) {
	obj := rc("auto").replicas(2).rack("a", 2).config(bounds(2, 6, cpu(50))).obj()
	obj.SetResourceVersion("")
	legacy := legacyHPAOf(t, obj)
	legacy.Labels["scaleplane.io/owner"] = "embedding-operator"
	const newName = "auto-rackedcluster.samples.scaleplane.io"
	r, c, events := fakeReconciler(t, "RackedCluster", interceptor.Funcs{}, obj, legacy)
	before := hpaOf(t, c, legacy.Name)
	for range 2 {
		if err := r.reconcileHPA(context.Background(), obj); err != nil {
			t.Fatalf("reconcileHPA: %v", err)
		}
	}
	if after := hpaOf(t, c, legacy.Name); after == nil || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("another owner's HPA %s deleted or written: %v", legacy.Name, after)
	}
	if h := hpaOf(t, c, newName); h != nil {
		t.Errorf("HPA %s created beside another owner's HPA of the workload", newName)
	}
	got := drain(events)
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning ForeignAutoscaler ") || !strings.Contains(got[0], "HorizontalPodAutoscaler/ns/"+legacy.Name) {
		t.Errorf("events %q, want one ForeignAutoscaler Warning naming %s", got, legacy.Name)
	}
}

// C5 across owners, under any name: an HPA another owner's scaleplane made
// for this very workload under the name this owner would give its own is
// that owner's, not ours to update or delete, and a foreign autoscaler to
// this owner, as under the legacy name.
func TestReconcileHPAStandsDownBesideAnotherOwnersHPAOfTheWorkloadUnderTheNewName(t *testing.T) {
	obj := rc("auto").replicas(2).rack("a", 2).config(bounds(2, 6, cpu(50))).obj()
	obj.SetResourceVersion("")
	other := legacyHPAOf(t, obj)
	other.Name = "auto-rackedcluster.samples.scaleplane.io"
	other.Labels["scaleplane.io/owner"] = "embedding-operator"
	r, c, events := fakeReconciler(t, "RackedCluster", interceptor.Funcs{}, obj, other)
	before := hpaOf(t, c, other.Name)
	for range 2 {
		if err := r.reconcileHPA(context.Background(), obj); err != nil {
			t.Fatalf("reconcileHPA: %v", err)
		}
	}
	if after := hpaOf(t, c, other.Name); after == nil || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("another owner's HPA %s deleted or written: %v", other.Name, after)
	}
	if h := hpaOf(t, c, LegacyHPAName(obj.GetName(), obj.GetKind())); h != nil {
		t.Errorf("HPA %s created beside another owner's HPA of the workload", h.Name)
	}
	got := drain(events)
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning ForeignAutoscaler ") || !strings.Contains(got[0], "HorizontalPodAutoscaler/ns/"+other.Name) {
		t.Errorf("events %q, want one ForeignAutoscaler Warning naming %s", got, other.Name)
	}
}
