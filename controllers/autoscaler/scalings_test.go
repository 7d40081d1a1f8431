package autoscaler

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
)

// countingClient answers every apply as the API server would when it
// succeeds, and counts them: object applies and status applies.
func countingClient(t testing.TB) (client.Client, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objects, statuses atomic.Int64
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			objects.Add(1)
			return nil
		},
		SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
			statuses.Add(1)
			return nil
		},
	}).Build()
	return c, &objects, &statuses
}

func workloadObject(i int) *unstructured.Unstructured {
	u := rackedCluster("shop", fmt.Sprintf("db-%d", i), 3, nil)
	u.SetUID("uid")
	return u
}

func statusWith(desired int32, value string) v1alpha1.ScalingStatus {
	return v1alpha1.ScalingStatus{
		Mode: v1alpha1.ScalingModeTriggers, DesiredReplicas: &desired,
		Triggers: []v1alpha1.TriggerStatus{{Name: "rps", Value: value, Threshold: "10"}},
	}
}

// A Scaling is written when it changed, at once for what
// an operator acts on, once per refresh interval for values alone, and
// within the workload's bucket.
func TestScalingWrites(t *testing.T) {
	c, objects, statuses := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	w := newScalingWriter(c, ScalingWrites{PerWorkloadInterval: 5 * time.Second, PerWorkloadBurst: 2, RefreshInterval: time.Minute}, nil)
	w.served.Store(true)
	ctx := context.Background()
	obj := scalingObject(workloadObject(0), "scaleplane-system")
	type counts struct{ Objects, Statuses int64 }
	step := func(at time.Duration, s v1alpha1.ScalingStatus, want counts) {
		t.Helper()
		now := t0.Add(at)
		w.offer(obj, s, now)
		w.flush(ctx, now)
		if diff := cmp.Diff(want, counts{objects.Load(), statuses.Load()}); diff != "" {
			t.Errorf("writes after the offer at %s (-want +got):\n%s", at, diff)
		}
	}
	step(0, statusWith(3, "30"), counts{1, 1})              // new: object and status
	step(15*time.Second, statusWith(3, "30"), counts{1, 1}) // unchanged
	step(30*time.Second, statusWith(3, "31"), counts{1, 1}) // a value alone: waits
	step(45*time.Second, statusWith(4, "41"), counts{1, 2}) // a new count: at once
	step(46*time.Second, statusWith(5, "51"), counts{1, 3}) // again: the bucket's burst
	step(47*time.Second, statusWith(6, "61"), counts{1, 3}) // bucket empty: waits
	w.flush(ctx, t0.Add(50*time.Second))                    // refilled
	if got := statuses.Load(); got != 4 {
		t.Errorf("%d status writes after the bucket refilled, want 4", got)
	}
	step(60*time.Second, statusWith(6, "62"), counts{1, 4}) // value alone, within refresh
	w.flush(ctx, t0.Add(111*time.Second))                   // refresh interval after the last write
	if got := statuses.Load(); got != 5 {
		t.Errorf("%d status writes after the refresh interval, want 5", got)
	}
}

// The global bucket holds every workload's writes; what waits is written
// later, newest status only.
func TestScalingWritesGlobalBucket(t *testing.T) {
	c, _, statuses := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	w := newScalingWriter(c, ScalingWrites{QPS: 10, Burst: 20}, nil)
	w.served.Store(true)
	for i := 0; i < 100; i++ {
		w.offer(scalingObject(workloadObject(i), "ns"), statusWith(3, "1"), t0)
	}
	w.flush(context.Background(), t0)
	// 20 tokens: 10 workloads' object and status.
	if got := statuses.Load(); got != 10 {
		t.Errorf("%d status writes in the burst, want 10", got)
	}
	for i := 0; i < 100; i++ {
		w.offer(scalingObject(workloadObject(i), "ns"), statusWith(4, "1"), t0)
	}
	next := w.flush(context.Background(), t0.Add(10*time.Second))
	if next.IsZero() {
		t.Errorf("nothing left to write after 10 s at 10/s for 100 workloads")
	}
	for !next.IsZero() {
		next = w.flush(context.Background(), next)
	}
	// The 10 written in the burst are written again; the 90 that waited
	// are written once, with their newest status.
	if got := statuses.Load(); got != 110 {
		t.Errorf("%d status writes in all, want 110", got)
	}
}

// Not served: nothing is written, offers are kept.
func TestScalingNotServed(t *testing.T) {
	c, objects, _ := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	w := newScalingWriter(c, ScalingWrites{}, nil)
	w.offer(scalingObject(workloadObject(0), "ns"), statusWith(3, "1"), t0)
	w.flush(context.Background(), t0)
	if objects.Load() != 0 {
		t.Fatalf("wrote before Scalings were served")
	}
	w.served.Store(true)
	w.flush(context.Background(), t0)
	if objects.Load() != 1 {
		t.Fatalf("%d object writes once served, want 1", objects.Load())
	}
}

// A cluster-scoped workload's Scaling lives in scaleplane's namespace
// without an owner; a namespaced one's beside it, owned by it.
func TestScalingObject(t *testing.T) {
	u := workloadObject(1)
	s := scalingObject(u, "scaleplane-system")
	if s.GetNamespace() != "shop" || s.GetName() != "db-1-rackedcluster.samples.scaleplane.io" || len(s.GetOwnerReferences()) != 1 || s.GetOwnerReferences()[0].Name != "db-1" {
		t.Errorf("namespaced: %s/%s owners %v", s.GetNamespace(), s.GetName(), s.GetOwnerReferences())
	}
	u.SetNamespace("")
	s = scalingObject(u, "scaleplane-system")
	if s.GetNamespace() != "scaleplane-system" || len(s.GetOwnerReferences()) != 0 {
		t.Errorf("cluster-scoped: %s/%s owners %v", s.GetNamespace(), s.GetName(), s.GetOwnerReferences())
	}
}

// BenchmarkScalingWrites10000 counts the API writes of 10,000
// autoscaled workloads over a simulated hour of 15 s ticks, with the
// default buckets: steady (every trigger value changes on every tick,
// counts hold) and burst (every workload changes its count on every tick
// for the first 5 minutes). Reported as writes per simulated second.
func BenchmarkScalingWrites10000(b *testing.B) {
	const n = 10000
	for _, tc := range []struct {
		name  string
		count func(tick int) int32
	}{
		{"steady", func(int) int32 { return 3 }},
		{"burst", func(tick int) int32 {
			if tick < 20 {
				return int32(3 + tick%5)
			}
			return 3
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perSecond, peak float64
			for b.Loop() {
				c, objects, statuses := countingClient(b)
				t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
				w := newScalingWriter(c, ScalingWrites{}, nil)
				w.served.Store(true)
				objs := make([]*unstructured.Unstructured, n)
				for i := range objs {
					objs[i] = scalingObject(workloadObject(i), "ns")
				}
				ctx := context.Background()
				// Creation is not counted: the first writes of every workload.
				for i := range objs {
					w.offer(objs[i], statusWith(3, "0"), t0)
				}
				var next time.Time
				for now := t0; ; now = next {
					if next = w.flush(ctx, now); next.IsZero() {
						break
					}
				}
				start := objects.Load() + statuses.Load()
				const ticks = 240
				var busiest int64
				for tick := 1; tick <= ticks; tick++ {
					now := t0.Add(time.Duration(tick) * 15 * time.Second)
					before := objects.Load() + statuses.Load()
					for i := range objs {
						// Offers are spread over the tick, as workers tick them.
						at := now.Add(time.Duration(i) * 15 * time.Second / n)
						w.offer(objs[i], statusWith(tc.count(tick), fmt.Sprint(tick)), at)
						if i%100 == 99 {
							w.flush(ctx, at)
						}
					}
					w.flush(ctx, now.Add(15*time.Second-time.Nanosecond))
					busiest = max(busiest, objects.Load()+statuses.Load()-before)
				}
				perSecond = float64(objects.Load()+statuses.Load()-start) / (ticks * 15)
				peak = float64(busiest) / 15
			}
			b.ReportMetric(perSecond, "writes/s")
			b.ReportMetric(peak, "peak-writes/s")
		})
	}
}

// A cluster-scoped workload's Scaling has no owner to collect it: forget
// deletes it; a namespaced one's is left to the garbage collector.
func TestScalingForget(t *testing.T) {
	var deleted []string
	scheme := runtime.NewScheme()
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.DeleteOption) error {
			deleted = append(deleted, obj.GetNamespace()+"/"+obj.GetName())
			return nil
		},
	}).Build()
	w := newScalingWriter(c, ScalingWrites{}, nil)
	w.forget(context.Background(), types.NamespacedName{Namespace: "shop", Name: "db-rackedcluster.samples.scaleplane.io"}, false)
	w.forget(context.Background(), types.NamespacedName{Namespace: "scaleplane-system", Name: "global-clusterkind"}, true)
	if diff := cmp.Diff([]string{"scaleplane-system/global-clusterkind"}, deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
}
