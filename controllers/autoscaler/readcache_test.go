package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// withThreshold is autoscaled(replicas) at resourceVersion rv (none when
// empty) whose trigger's threshold is threshold.
func withThreshold(replicas int64, rv string, threshold float64) *unstructured.Unstructured {
	u := autoscaled(replicas, nil)
	u.SetResourceVersion(rv)
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "rps", "type": "AverageValue", "source": "fixed", "threshold": threshold}},
		"spec", "scaleConfig", "triggers")
	return u
}

// The loop keeps what it read of an object while the object keeps its
// resourceVersion: a new version (or an object without one) is read
// again, so a changed config is decided on at once, never the one before.
func TestReconcileDecidesOnTheNewVersionOfTheObject(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	fixedValue = 50
	cases := []struct {
		name     string
		versions []*unstructured.Unstructured
		want     []int64
	}{
		// 50 over a threshold of 10 asks for 5: no write; of 5, for 10.
		{"a new resourceVersion", []*unstructured.Unstructured{withThreshold(5, "7", 10), withThreshold(5, "7", 10), withThreshold(5, "8", 5)}, []int64{10}},
		{"no resourceVersion", []*unstructured.Unstructured{withThreshold(5, "", 10), withThreshold(5, "", 5)}, []int64{10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var writes []int64
			writer := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
				SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, _ client.Object, opts ...client.SubResourceUpdateOption) error {
					o := &client.SubResourceUpdateOptions{}
					o.ApplyOptions(opts)
					r, _, _ := unstructured.NestedInt64(o.SubResourceBody.(*unstructured.Unstructured).Object, "spec", "replicas")
					writes = append(writes, r)
					return nil
				},
			})
			a := newTestAutoscaler(t, now)
			k := a.byResource["rackedclusters"]
			st := k.get(types.NamespacedName{Namespace: "shop", Name: "cart"})
			for i, u := range tc.versions {
				a.opts.Now = func() time.Time { return now.Add(time.Duration(i) * time.Minute) }
				if _, err := k.reconcile(context.Background(), &env{writer: writer, events: &recorder{}}, u, st); err != nil {
					t.Fatalf("reconcile: %v", err)
				}
			}
			if diff := cmp.Diff(tc.want, writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
}

// The object's read is kept per profile too: the same version read
// through another compilation of the profile is read again.
func TestObjectReadKeptPerProfile(t *testing.T) {
	a := newTestAutoscaler(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	k := a.byResource["rackedclusters"]
	st := newWorkload(types.NamespacedName{Namespace: "shop", Name: "cart"}, 0)
	u := withThreshold(5, "7", 10)
	k.read(st, u)
	first := st.read
	k.read(st, u)
	if st.read != first {
		t.Fatal("the same version was read again")
	}
	other, err := profile.Compile(profile.Samples()[0])
	if err != nil {
		t.Fatal(err)
	}
	k.view = other
	k.read(st, u)
	if st.read == first || st.read.id.view != other {
		t.Error("a read through the previous profile was reused")
	}
}

// A Scaling decoded once is decoded again when its resourceVersion
// changes: the activity another replica recorded in it is taken.
func TestSyncScalingTakesTheNewVersionsActivity(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAutoscaler(t, now)
	k := a.byResource["rackedclusters"]
	nn := types.NamespacedName{Namespace: "shop", Name: "cart"}
	cache := newInformerCache()
	w := scalings.NewWriter(nil, ScalingWrites{}, a.opts.Now)
	w.MarkServed()
	e := &env{cache: cache, scalings: w}
	st := k.get(nn)
	var got []time.Time
	for i, rv := range []string{"1", "1", "2"} {
		s := scalingWithActivity(k.scalingKey(nn), k.view.GVK(), nn.Name, now.Add(time.Duration(i-10)*time.Second))
		s.SetResourceVersion(rv)
		if i != 1 {
			// The same version stays the same object in the cache.
			cache.put(s)
		}
		k.syncScaling(context.Background(), e, st)
		got = append(got, st.lastActivity())
	}
	want := []time.Time{now.Add(-10 * time.Second), now.Add(-10 * time.Second), now.Add(-8 * time.Second)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("activity after each sync (-want +got):\n%s", diff)
	}
	if cache.shared != 3 {
		t.Errorf("%d Gets shared the cache's object, want 3: the Scaling is read without a copy", cache.shared)
	}
}

// The handles observe keeps of a workload's series follow the series: a
// trigger that turns invalid loses its series and gets it back with its
// next value, and after deleteMetrics (no longer managed) the next tick
// exports the workload again.
func TestSeriesHandlesFollowTheSeries(t *testing.T) {
	a := newTestAutoscaler(t, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	k := a.byResource["rackedclusters"]
	r := &rig{t: t, ns: "series-handles"}
	st := k.get(types.NamespacedName{Namespace: r.ns, Name: "cart"})
	defer k.deleteMetrics(st)
	valid := func(v float64) scaling.Decision {
		return scaling.Decision{Desired: 2, Current: 2, Triggers: []scaling.TriggerDecision{{Name: "rps", Value: v, Valid: true}}}
	}
	invalid := scaling.Decision{Desired: 2, Current: 2, Triggers: []scaling.TriggerDecision{{Name: "rps", Problem: "no data"}}}
	var got [][]string
	for _, step := range []func(){
		func() { k.observe(st, valid(3)) },
		func() { k.observe(st, invalid) },
		func() { k.observe(st, valid(4)) },
		func() { k.deleteMetrics(st) },
		func() { k.observe(st, valid(5)) },
	} {
		step()
		got = append(got, r.series())
	}
	both := []string{"scaleplane_desired_replicas cart", "scaleplane_trigger_value cart/rps"}
	want := [][]string{both, {"scaleplane_desired_replicas cart", "scaleplane_trigger_errors_total cart/rps"}, append(both[:1:1], "scaleplane_trigger_errors_total cart/rps", both[1]), nil, both}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series after each step (-want +got):\n%s", diff)
	}
	if v := testutil.ToFloat64(triggerValue.WithLabelValues(profile.SampleGroup, "RackedCluster", r.ns, "cart", "rps")); v != 5 {
		t.Errorf("trigger value %v, want the last one, 5", v)
	}
}
