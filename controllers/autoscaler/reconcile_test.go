package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/foreign"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/status"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// recorder collects events as "Type Reason: note".
type recorder struct{ got []string }

func (r *recorder) Event(_ runtime.Object, eventtype, reason, note string) {
	r.got = append(r.got, eventtype+" "+reason+": "+note)
}

func (r *recorder) Eventf(_ runtime.Object, eventtype, reason, note string, args ...interface{}) {
	r.got = append(r.got, eventtype+" "+reason+": "+fmt.Sprintf(note, args...))
}

func (r *recorder) AnnotatedEventf(o runtime.Object, _ map[string]string, eventtype, reason, note string, args ...interface{}) {
	r.Eventf(o, eventtype, reason, note, args...)
}

// fixedValue is the value the "fixed" test source reports.
var fixedValue float64

type fixedScaler struct{}

func (fixedScaler) Metric() scaling.ScalerMetric { return scaling.ScalerMetric{} }
func (fixedScaler) Sample(context.Context, time.Time) (scaling.Sample, error) {
	return scaling.Sample{Value: fixedValue, OK: true}, nil
}
func (fixedScaler) Close(context.Context) error { return nil }

// autoscaled is a RackedCluster at replicas whose config has a "fixed"
// trigger at 10 per replica and a behavior (so scale events are stored).
func autoscaled(replicas int64, ann map[string]string) *unstructured.Unstructured {
	u := rackedCluster("shop", "cart", replicas, ann)
	u.SetResourceVersion("7")
	_ = unstructured.SetNestedField(u.Object, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(10),
		"triggers": []any{map[string]any{"name": "rps", "type": "AverageValue", "source": "fixed", "threshold": float64(10)}},
		"behavior": map[string]any{},
	}, "spec", "scaleConfig")
	return u
}

func TestReconcileWrites(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "rackedclusters"}, "cart", errors.New("the object has been modified"))
	type write struct {
		Replicas        int64
		ResourceVersion string
		FieldManager    string
	}
	type outcome struct {
		Writes      []write
		Events      []string
		State       State
		ScaleEvents int
		Written     []bool
		Retick      bool
	}
	cases := []struct {
		name     string
		obj      *unstructured.Unstructured
		value    float64
		writeErr []error // per write attempt
		ticks    int
		want     outcome
	}{
		{
			name: "a change is written through /scale, then recorded and announced", obj: autoscaled(2, nil), value: 50, ticks: 1,
			want: outcome{
				Writes: []write{{5, "7", v1alpha1.AutoscalerFieldManager}},
				Events: []string{"Normal Scaled: Scaled up from 2 to 5: rps=50 over 2 replicas is 25 per replica, above the target 10: asks for ceil(50 / 10) = 5"},
				State:  StateAutoscaling, ScaleEvents: 1, Written: []bool{true},
			},
		},
		{
			name: "no change, no write", obj: autoscaled(5, nil), value: 50, ticks: 1,
			want: outcome{State: StateAutoscaling, Written: []bool{false}},
		},
		{
			name: "a failed write records nothing, warns once, and no Normal event", obj: autoscaled(2, nil), value: 50, ticks: 2,
			writeErr: []error{errors.New("etcd unavailable"), errors.New("etcd unavailable")},
			want: outcome{
				Writes: []write{{5, "7", v1alpha1.AutoscalerFieldManager}, {5, "7", v1alpha1.AutoscalerFieldManager}},
				Events: []string{"Warning WriteFailed: write 5 replicas through /scale: update rackedclusters shop/cart/scale: etcd unavailable"},
				State:  StateAutoscaling, Written: []bool{false, false},
			},
		},
		{
			name: "a conflict asks for a re-read without a Warning", obj: autoscaled(2, nil), value: 50, ticks: 1,
			writeErr: []error{conflict},
			want: outcome{
				Writes: []write{{5, "7", v1alpha1.AutoscalerFieldManager}},
				State:  StateAutoscaling, Written: []bool{false}, Retick: true,
			},
		},
		{
			name: "paused: hands off", obj: autoscaled(2, map[string]string{v1alpha1.AnnotationPaused: "true"}), value: 50, ticks: 1,
			want: outcome{State: StatePaused},
		},
		{
			name: "paused-replicas: held once", obj: autoscaled(2, map[string]string{v1alpha1.AnnotationPausedReplicas: "4"}), value: 50, ticks: 1,
			want: outcome{
				Writes: []write{{4, "7", v1alpha1.AutoscalerFieldManager}},
				Events: []string{"Normal Scaled: Held at 4 (from 2): annotation scaleplane.io/paused-replicas"},
				State:  StateHeld, Written: []bool{true},
			},
		},
		{
			name: "a bad paused-replicas: hands off with a Warning", obj: autoscaled(2, map[string]string{v1alpha1.AnnotationPausedReplicas: "x"}), value: 50, ticks: 2,
			want: outcome{
				Events: []string{`Warning InvalidPauseAnnotation: annotation scaleplane.io/paused-replicas is "x": set a whole number >= 0, or remove it to resume autoscaling`},
				State:  StatePaused,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fixedValue = tc.value
			var got outcome
			attempt := 0
			writer := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
				SubResourceUpdate: func(_ context.Context, _ client.Client, sub string, _ client.Object, opts ...client.SubResourceUpdateOption) error {
					o := &client.SubResourceUpdateOptions{}
					o.ApplyOptions(opts)
					body := o.SubResourceBody.(*unstructured.Unstructured)
					r, _, _ := unstructured.NestedInt64(body.Object, "spec", "replicas")
					got.Writes = append(got.Writes, write{r, body.GetResourceVersion(), o.FieldManager})
					if sub != "scale" {
						t.Errorf("wrote subresource %q, want scale", sub)
					}
					var err error
					if attempt < len(tc.writeErr) {
						err = tc.writeErr[attempt]
					}
					attempt++
					return err
				},
			})
			rec := &recorder{}
			a := newTestAutoscaler(t, now)
			e := &env{writer: writer, events: rec}
			k := a.byResource["rackedclusters"]
			st := k.get(types.NamespacedName{Namespace: "shop", Name: "cart"})
			for i := range tc.ticks {
				// Each tick is due: a polling interval later.
				a.opts.Now = func() time.Time { return now.Add(time.Duration(i) * time.Minute) }
				if _, err := k.reconcile(context.Background(), e, tc.obj.DeepCopy(), st); err != nil && !errors.Is(err, errWriteConflict) {
					t.Fatalf("reconcile: %v", err)
				}
			}
			x := st.explain(k)
			got.Events, got.State = rec.got, x.State
			got.ScaleEvents = len(st.history.ScaleUpEvents) + len(st.history.ScaleDownEvents)
			for _, r := range x.Decisions {
				got.Written = append(got.Written, r.Written)
			}
			got.Retick = st.lastTick.IsZero() && tc.ticks > 0 && x.State == StateAutoscaling
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReconcileStandsAsideFromTheBuiltInHPA(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	u := rackedCluster("shop", "cart", 2, nil)
	_ = unstructured.SetNestedField(u.Object, map[string]any{
		"minReplicas": int64(0), "maxReplicas": int64(10),
		"idle": map[string]any{"timeoutSeconds": int64(60)},
		"metrics": []any{map[string]any{"type": "Resource", "resource": map[string]any{"name": "cpu",
			"target": map[string]any{"type": "Utilization", "averageUtilization": int64(50)}}}},
	}, "spec", "scaleConfig")
	st := k.get(types.NamespacedName{Namespace: "shop", Name: "cart"})
	if _, err := k.reconcile(context.Background(), &env{}, u, st); err != nil {
		t.Fatal(err)
	}
	x := st.explain(k)
	got := []string{string(x.State), x.Message}
	want := []string{string(StateNotManaged), "scale config has metrics: the built-in HPA scales this workload"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// C5 in the Scaling: a user's own HPA on a workload without a scale config
// is not "set by hand", and beside a config whose metrics would make the
// built-in HPA it is not "the built-in HPA scales this workload": the
// Scaling names the HPA that does.
func TestScalingNamesTheForeignAutoscaler(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	theirs := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: profile.SampleAPIVersion, Kind: "RackedCluster", Name: "cart"},
			MaxReplicas:    5,
		},
	}
	scheme := runtime.NewScheme()
	if err := autoscalingv2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	withMetrics := rackedCluster("shop", "cart", 2, nil)
	_ = unstructured.SetNestedField(withMetrics.Object, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(10),
		"metrics": []any{map[string]any{"type": "Resource", "resource": map[string]any{"name": "cpu",
			"target": map[string]any{"type": "Utilization", "averageUtilization": int64(50)}}}},
	}, "spec", "scaleConfig")
	type row struct {
		State   State
		Mode    v1alpha1.ScalingMode
		Active  string
		Message string
	}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		hpas []client.Object
		want row
	}{
		{"no config, kubectl autoscale", rackedCluster("shop", "cart", 2, nil), []client.Object{theirs.DeepCopy()},
			row{StateForeign, v1alpha1.ScalingModeExternal, "False/ForeignAutoscaler", "HorizontalPodAutoscaler/shop/cart scales this workload"}},
		{"a range with metrics and a foreign HPA", withMetrics, []client.Object{theirs.DeepCopy()},
			row{StateForeign, v1alpha1.ScalingModeExternal, "False/ForeignAutoscaler", "HorizontalPodAutoscaler/shop/cart scales this workload; scaleplane creates no built-in HPA beside it: remove it to let the scale config's metrics scale"}},
		{"a range with metrics alone", withMetrics, nil,
			row{StateNotManaged, v1alpha1.ScalingModeHPA, "True/HPA", "the built-in HPA scales this workload"}},
		{"no config alone", rackedCluster("shop", "cart", 2, nil), nil,
			row{StateNotManaged, v1alpha1.ScalingModePinned, "False/Pinned", "no scale config: pinned at 2 (min = max = spec.replicas), set by hand or kubectl scale; give the scale config a range to autoscale"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.hpas...).
				WithIndex(&autoscalingv2.HorizontalPodAutoscaler{}, foreign.HPATargetIndex, controllers.IndexHPATarget).Build()
			a := newTestAutoscaler(t, now)
			k := a.byResource["rackedclusters"]
			e := &env{foreign: &foreign.Finder{Cache: c, Mapper: meta.NewDefaultRESTMapper(nil), Interval: time.Minute, Now: a.opts.Now}}
			st := k.get(types.NamespacedName{Namespace: "shop", Name: "cart"})
			if _, err := k.reconcile(context.Background(), e, tc.obj.DeepCopy(), st); err != nil {
				t.Fatal(err)
			}
			x := st.explain(k)
			w, _ := k.view.Read(tc.obj)
			status := status.Build(status.Input{Kind: "RackedCluster", Name: "cart", Workload: w, Layout: k.view.Layout(),
				State: x.State, Message: x.Message, History: &scaling.History{}, Now: now})
			active := meta.FindStatusCondition(status.Conditions, v1alpha1.ScalingActive)
			got := row{x.State, status.Mode, string(active.Status) + "/" + active.Reason, active.Message}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// C5 across owners: an HPA of the workload, controlled by it and labelled
// managed by scaleplane for another owner, stands this owner's HPA
// controller down as a foreign autoscaler, and the Scaling says so instead
// of "HPA mode"; one labelled for this owner, or for none (releases before
// owner labels), is the built-in HPA scaleplane manages.
func TestScalingNamesAnotherOwnersHPAOfTheWorkloadAsForeign(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	workload := rackedCluster("shop", "cart", 2, nil)
	workload.SetUID("uid-cart")
	_ = unstructured.SetNestedField(workload.Object, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(10),
		"metrics": []any{map[string]any{"type": "Resource", "resource": map[string]any{"name": "cpu",
			"target": map[string]any{"type": "Utilization", "averageUtilization": int64(50)}}}},
	}, "spec", "scaleConfig")
	const name = "cart-rackedcluster.samples.scaleplane.io"
	hpaFor := func(owner string) *autoscalingv2.HorizontalPodAutoscaler {
		h := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: profile.SampleAPIVersion, Kind: "RackedCluster", Name: "cart"},
				MaxReplicas:    10,
			},
		}
		h.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(workload, workload.GroupVersionKind())}
		if owner != "" {
			h.Labels[v1alpha1.LabelOwner] = owner
		}
		return h
	}
	scheme := runtime.NewScheme()
	if err := autoscalingv2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	type row struct {
		State   State
		Mode    v1alpha1.ScalingMode
		Message string
	}
	hpaMode := row{StateNotManaged, v1alpha1.ScalingModeHPA, "the built-in HPA scales this workload"}
	cases := []struct {
		name  string
		owner string
		want  row
	}{
		{"another owner's", "embedding-operator", row{StateForeign, v1alpha1.ScalingModeExternal,
			"HorizontalPodAutoscaler/shop/" + name + " scales this workload; scaleplane creates no built-in HPA beside it: remove it to let the scale config's metrics scale"}},
		{"this owner's", "scaleplane", hpaMode},
		{"unlabelled, from before owner labels", "", hpaMode},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(hpaFor(tc.owner)).
				WithIndex(&autoscalingv2.HorizontalPodAutoscaler{}, foreign.HPATargetIndex, controllers.IndexHPATarget).Build()
			a := newTestAutoscaler(t, now)
			if a.Owner() != "scaleplane" {
				t.Fatalf("default owner %q, want scaleplane", a.Owner())
			}
			k := a.byResource["rackedclusters"]
			e := &env{foreign: &foreign.Finder{Cache: c, Owner: a.Owner(), Mapper: meta.NewDefaultRESTMapper(nil), Interval: time.Minute, Now: a.opts.Now}}
			st := k.get(types.NamespacedName{Namespace: "shop", Name: "cart"})
			if _, err := k.reconcile(context.Background(), e, workload.DeepCopy(), st); err != nil {
				t.Fatal(err)
			}
			x := st.explain(k)
			w, _ := k.view.Read(workload)
			status := status.Build(status.Input{Kind: "RackedCluster", Name: "cart", Workload: w, Layout: k.view.Layout(),
				State: x.State, Message: x.Message, History: &scaling.History{}, Now: now})
			active := meta.FindStatusCondition(status.Conditions, v1alpha1.ScalingActive)
			got := row{x.State, status.Mode, active.Message}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A workload without a scale config stands for the pin M1 would write: its
// Scaling shows min = max = R, not an empty range.
func TestScalingWithoutConfigShowsItsPin(t *testing.T) {
	v := viewOf(t, "RackedCluster")
	three := int32(3)
	st := status.Build(status.Input{Kind: "RackedCluster", Name: "db", Workload: scaling.Workload{Replicas: &three}, Layout: v.Layout(),
		State: StateNotManaged, History: &scaling.History{}, Now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)})
	got := []string{string(st.Mode), fmt.Sprint(deref(st.MinReplicas)), fmt.Sprint(deref(st.MaxReplicas))}
	if diff := cmp.Diff([]string{"pinned", "3", "3"}, got); diff != "" {
		t.Errorf("mode, min, max (-want +got):\n%s", diff)
	}
}

func deref(p *int32) any {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// An HPA wakes the reconcile of the workload it targets, directly or
// through the child the profile's HPA target names.
func TestHPAWakesItsWorkload(t *testing.T) {
	a := newTestAutoscaler(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	hpa := func(apiVersion, kind, name string) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "h"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: name}}}
	}
	cases := []struct {
		name, resource string
		hpa            *autoscalingv2.HorizontalPodAutoscaler
		want           []reconcile.Request
	}{
		{"the workload itself", "rackedclusters", hpa(profile.SampleAPIVersion, "RackedCluster", "cart"),
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "cart"}}}},
		{"another kind", "rackedclusters", hpa("apps/v1", "Deployment", "cart"), nil},
		{"the child the profile's HPA scales", "samplefunctions", hpa("apps/v1", "Deployment", "hello"),
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "hello"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, a.byResource[tc.resource].mapHPA(context.Background(), tc.hpa)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
