package controllers

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// fakeReconciler is a Reconciler over a fake client holding objs; the
// fake client serves cache, API reads and writes alike.
func fakeReconciler(t *testing.T, kind string, funcs interceptor.Funcs, objs ...client.Object) (*Reconciler, client.Client, *record.FakeRecorder) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&autoscalingv2.HorizontalPodAutoscaler{}, hpaTargetIndex, IndexHPATarget).
		WithInterceptorFuncs(funcs).Build()
	events := record.NewFakeRecorder(100)
	v := sampleView(t, kind)
	return &Reconciler{
		view: v, kind: kind, cache: c, api: c, writer: c, events: events,
		keda: newKEDAWatch(nil, -1), conflictRetries: 5, hpaIndex: hpaTargetIndex, owner: "scaleplane",
	}, c, events
}

func drain(events *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// C1's write path: a conflict (someone scaled in between) makes the
// fan-out read again and carry the newer replicas, never the stale one.
func TestFanOutRetriesOnConflictWithTheNewerReplicas(t *testing.T) {
	obj := rc("demo").replicas(5).rack("a", 3).rack("b", 3).obj()
	obj.SetResourceVersion("")
	var patches atomic.Int32
	funcs := interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patches.Add(1) == 1 {
				// kubectl scale lands between our read and our write.
				cur := rc("").obj()
				if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
					return err
				}
				_ = unstructured.SetNestedField(cur.Object, int64(7), "spec", "replicas")
				if err := c.Update(ctx, cur); err != nil {
					return err
				}
			}
			return c.Patch(ctx, o, patch, opts...)
		},
	}
	r, c, events := fakeReconciler(t, "RackedCluster", funcs, obj)
	u := rc("").obj()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), u); err != nil {
		t.Fatal(err)
	}
	if err := r.fanOut(context.Background(), u); err != nil {
		t.Fatalf("fanOut: %v", err)
	}
	got := rc("").obj()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]interface{}{
		map[string]interface{}{"name": "a", "members": int64(7)},
		map[string]interface{}{"name": "b", "members": int64(7)},
	}, got.Object["spec"].(map[string]interface{})["racks"]); diff != "" {
		t.Errorf("racks (-want +got):\n%s", diff)
	}
	if n := patches.Load(); n != 2 {
		t.Errorf("%d patches, want 2 (one conflict, one retry)", n)
	}
	if diff := cmp.Diff([]string{"Normal ScaledGroups spec.racks[*].members a=3, b=3 -> 7 (spec.replicas 7)"}, drain(events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// C5 with a fake client: a user's HPA on the workload means no HPA of
// ours (an existing one is deleted) and one Warning naming theirs, not one
// per reconcile.
func TestReconcileHPAYieldsToForeignHPA(t *testing.T) {
	obj := rc("auto").replicas(2).rack("a", 2).config(bounds(2, 6, cpu(50))).obj()
	obj.SetResourceVersion("")
	theirs := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "ns"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "samples.scaleplane.io/v1alpha1", Kind: "RackedCluster", Name: "auto"},
			MaxReplicas:    3,
		},
	}
	v := sampleView(t, "RackedCluster")
	w, _ := v.Read(obj)
	ours, err := desiredHPA(v, "scaleplane", obj, decideWith(t, v, w))
	if err != nil {
		t.Fatal(err)
	}
	ours.TypeMeta = metav1.TypeMeta{}
	r, c, events := fakeReconciler(t, "RackedCluster", interceptor.Funcs{}, obj, theirs, ours)
	before := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(theirs), before); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.reconcileHPA(context.Background(), obj); err != nil {
			t.Fatalf("reconcileHPA: %v", err)
		}
	}
	err = c.Get(context.Background(), client.ObjectKeyFromObject(ours), &autoscalingv2.HorizontalPodAutoscaler{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("our HPA: %v, want it deleted", err)
	}
	got := drain(events)
	want := []string{
		"Normal HPADeleted deleted HorizontalPodAutoscaler auto-rackedcluster.samples.scaleplane.io: foreign autoscaler HorizontalPodAutoscaler/ns/theirs targets this workload",
		"Warning ForeignAutoscaler foreign autoscaler HorizontalPodAutoscaler/ns/theirs targets this workload: scaleplane creates no HPA of its own and leaves it alone; remove it to let scaleplane manage one",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	after := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(theirs), after); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(theirs.Spec, after.Spec); diff != "" {
		t.Errorf("their HPA changed (-want +got):\n%s", diff)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("their HPA was written: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
	}
}

// A write the API server refuses (here: forbidden) is reported once as a
// WriteFailed Warning with the server's message, not once per retry, and
// retried after a backoff (C6).
func TestReconcileReportsAFailedWriteOnce(t *testing.T) {
	obj := rc("demo").replicas(5).rack("a", 3).obj()
	obj.SetResourceVersion("")
	funcs := interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: "samples.scaleplane.io", Resource: "rackedclusters"}, "demo", errors.New("RBAC"))
		},
	}
	r, _, events := fakeReconciler(t, "RackedCluster", funcs, obj)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}
	for range 2 {
		if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter <= 0 {
			t.Fatalf("Reconcile = %+v, %v; want a retry after a backoff", res, err)
		}
	}
	want := []string{`Warning WriteFailed the API server refused the fan-out: rackedclusters.samples.scaleplane.io "demo" is forbidden: RBAC`}
	if diff := cmp.Diff(want, drain(events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestV11SelectorNeverSilentlyDropped: a group name that cannot be a label
// value (admitted before V11, or stored before the webhook existed) leaves
// the /scale selector as it was, and the workload says why with a Warning,
// once, instead of the selector silently going missing.
func TestV11SelectorNeverSilentlyDropped(t *testing.T) {
	obj := rc("demo").replicas(3).rack("rack/a", 3).obj()
	obj.SetResourceVersion("")
	var applied []string
	funcs := interceptor.Funcs{
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, o client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
			sel, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "status", "selector")
			applied = append(applied, sel)
			return nil
		},
	}
	r, _, events := fakeReconciler(t, "RackedCluster", funcs, obj)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}
	for range 2 {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	want := []string{`Warning InvalidSelector no /scale selector for RackedCluster ns/demo: pod selector of RackedCluster demo: values[0][samples.scaleplane.io/rack]: Invalid value: "rack/a": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'); rename the group, or fix the profile's pods labels`}
	if diff := cmp.Diff(want, drain(events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, sel := range applied {
		if sel != "" {
			t.Errorf("a selector was written: %q", sel)
		}
	}
}

// The fan-out's event reads right for every kind. A kind
// with member groups gets ScaledGroups with the groups' sizes; a kind
// without them (a Function) whose pinned config follows R gets Scaled,
// never a reason that speaks of groups it lacks.
func TestFanOutEventReasons(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		obj        *unstructured.Unstructured
		want       []string
	}{
		{"member groups", "RackedCluster", rc("demo").replicas(4).rack("a", 2).rack("b", 2).obj(),
			[]string{"Normal ScaledGroups spec.racks[*].members a=2, b=2 -> 4 (spec.replicas 4)"}},
		{"member groups and a pin", "RackedCluster", rc("demo").replicas(4).rack("a", 2).config(bounds(2, 2)).obj(),
			[]string{"Normal ScaledGroups spec.racks[*].members a=2 -> 4 (spec.replicas 4); spec.scaleConfig pinned 2 -> 4"}},
		{"no member groups: a re-pin", "Function", fn("hello").replicas(3).config(bounds(1, 1)).obj(),
			[]string{"Normal Scaled spec.scaleConfig pinned 1 -> 3"}},
		{"no member groups, nothing to follow", "Function", fn("hello").replicas(3).config(bounds(3, 3)).obj(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj
			obj.SetResourceVersion("")
			r, c, events := fakeReconciler(t, tc.kind, interceptor.Funcs{}, obj)
			u := workload(tc.kind, "").obj()
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), u); err != nil {
				t.Fatal(err)
			}
			if err := r.fanOut(context.Background(), u); err != nil {
				t.Fatalf("fanOut: %v", err)
			}
			if diff := cmp.Diff(tc.want, drain(events)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
