package scalings

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

// rackedCluster is a workload of the sample profile's kind.
func rackedCluster(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("samples.scaleplane.io/v1alpha1")
	u.SetKind("RackedCluster")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func workloadObject(i int) *unstructured.Unstructured {
	u := rackedCluster("shop", fmt.Sprintf("db-%d", i))
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
	w := NewWriter(c, Writes{PerWorkloadInterval: 5 * time.Second, PerWorkloadBurst: 2, RefreshInterval: time.Minute}, nil)
	w.MarkServed()
	ctx := context.Background()
	obj := Object(workloadObject(0), "scaleplane-system")
	type counts struct{ Objects, Statuses int64 }
	step := func(at time.Duration, s v1alpha1.ScalingStatus, want counts) {
		t.Helper()
		now := t0.Add(at)
		w.Offer(obj, s, now)
		w.Flush(ctx, now)
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
	w.Flush(ctx, t0.Add(50*time.Second))                    // refilled
	if got := statuses.Load(); got != 4 {
		t.Errorf("%d status writes after the bucket refilled, want 4", got)
	}
	step(60*time.Second, statusWith(6, "62"), counts{1, 4}) // value alone, within refresh
	w.Flush(ctx, t0.Add(111*time.Second))                   // refresh interval after the last write
	if got := statuses.Load(); got != 5 {
		t.Errorf("%d status writes after the refresh interval, want 5", got)
	}
}

// The global bucket holds every workload's writes; what waits is written
// later, newest status only.
func TestScalingWritesGlobalBucket(t *testing.T) {
	c, _, statuses := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	w := NewWriter(c, Writes{QPS: 10, Burst: 20, PerNamespaceQPS: -1}, nil)
	w.MarkServed()
	for i := 0; i < 100; i++ {
		w.Offer(Object(workloadObject(i), "ns"), statusWith(3, "1"), t0)
	}
	w.Flush(context.Background(), t0)
	// 20 tokens: 10 workloads' object and status.
	if got := statuses.Load(); got != 10 {
		t.Errorf("%d status writes in the burst, want 10", got)
	}
	for i := 0; i < 100; i++ {
		w.Offer(Object(workloadObject(i), "ns"), statusWith(4, "1"), t0)
	}
	next := w.Flush(context.Background(), t0.Add(10*time.Second))
	if next.IsZero() {
		t.Errorf("nothing left to write after 10 s at 10/s for 100 workloads")
	}
	for !next.IsZero() {
		next = w.Flush(context.Background(), next)
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
	w := NewWriter(c, Writes{}, nil)
	w.Offer(Object(workloadObject(0), "ns"), statusWith(3, "1"), t0)
	w.Flush(context.Background(), t0)
	if objects.Load() != 0 {
		t.Fatalf("wrote before Scalings were served")
	}
	w.MarkServed()
	w.Flush(context.Background(), t0)
	if objects.Load() != 1 {
		t.Fatalf("%d object writes once served, want 1", objects.Load())
	}
}

// A cluster-scoped workload's Scaling lives in scaleplane's namespace
// without an owner; a namespaced one's beside it, owned by it.
func TestScalingObject(t *testing.T) {
	u := workloadObject(1)
	s := Object(u, "scaleplane-system")
	if s.GetNamespace() != "shop" || s.GetName() != "db-1-rackedcluster.samples.scaleplane.io" || len(s.GetOwnerReferences()) != 1 || s.GetOwnerReferences()[0].Name != "db-1" {
		t.Errorf("namespaced: %s/%s owners %v", s.GetNamespace(), s.GetName(), s.GetOwnerReferences())
	}
	u.SetNamespace("")
	s = Object(u, "scaleplane-system")
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
				w := NewWriter(c, Writes{}, nil)
				w.MarkServed()
				objs := make([]*unstructured.Unstructured, n)
				for i := range objs {
					// Ten namespaces, so that the process's bucket, not
					// one namespace's share of it, is what holds them.
					u := workloadObject(i)
					u.SetNamespace(fmt.Sprintf("team-%d", i%10))
					objs[i] = Object(u, "ns")
				}
				ctx := context.Background()
				// Creation is not counted: the first writes of every workload.
				for i := range objs {
					w.Offer(objs[i], statusWith(3, "0"), t0)
				}
				var next time.Time
				for now := t0; ; now = next {
					if next = w.Flush(ctx, now); next.IsZero() {
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
						w.Offer(objs[i], statusWith(tc.count(tick), fmt.Sprint(tick)), at)
						if i%100 == 99 {
							w.Flush(ctx, at)
						}
					}
					w.Flush(ctx, now.Add(15*time.Second-time.Nanosecond))
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
	w := NewWriter(c, Writes{}, nil)
	w.Forget(context.Background(), types.NamespacedName{Namespace: "shop", Name: "db-rackedcluster.samples.scaleplane.io"}, false)
	w.Forget(context.Background(), types.NamespacedName{Namespace: "scaleplane-system", Name: "global-clusterkind"}, true)
	if diff := cmp.Diff([]string{"scaleplane-system/global-clusterkind"}, deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
}

// A Scaling deleted while the writer keeps its workload is written again
// at once, object and status, though nothing about the workload changed.
func TestDeletedScalingWrittenAgain(t *testing.T) {
	c, objects, statuses := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	w := NewWriter(c, Writes{}, func() time.Time { return t0 })
	w.MarkServed()
	obj := Object(workloadObject(0), "scaleplane-system")
	w.Offer(obj, statusWith(3, "30"), t0)
	w.Flush(context.Background(), t0)
	w.Flush(context.Background(), t0)
	if objects.Load() != 1 || statuses.Load() != 1 {
		t.Fatalf("writes before the delete: %d objects, %d statuses; want 1 and 1", objects.Load(), statuses.Load())
	}
	w.Gone(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	w.Flush(context.Background(), t0)
	if objects.Load() != 2 || statuses.Load() != 2 {
		t.Errorf("writes after the delete: %d objects, %d statuses; want 2 and 2", objects.Load(), statuses.Load())
	}
}

// A delete seen while a status write of the Scaling is in flight (the
// write succeeded just before the delete) still has the Scaling written
// again: the write's success does not mark it as existing.
func TestScalingDeletedDuringAWriteWrittenAgain(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var w *Writer
	var objects, statuses int
	var deleteDuring bool
	obj := Object(workloadObject(0), "scaleplane-system")
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			objects++
			return nil
		},
		SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
			statuses++
			if deleteDuring {
				deleteDuring = false
				w.Gone(key)
			}
			return nil
		},
	}).Build()
	w = NewWriter(c, Writes{}, func() time.Time { return t0 })
	w.MarkServed()
	w.Offer(obj, statusWith(3, "30"), t0)
	w.Flush(context.Background(), t0)
	deleteDuring = true
	w.Offer(obj, statusWith(4, "40"), t0)
	w.Flush(context.Background(), t0)
	if objects != 2 || statuses != 3 {
		t.Errorf("writes: %d objects, %d statuses; want 2 and 3 (the Scaling written again after the delete)", objects, statuses)
	}
}

// writtenIn counts the Scalings of namespace ns written at least once.
func (w *Writer) writtenIn(ns string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for key, it := range w.items {
		if key.Namespace == ns && it.exists {
			n++
		}
	}
	return n
}

// A namespace alone writes at the process's pace; once another namespace
// has workloads, and its share unspent, the first is held to its share at
// once (it borrows only what the other leaves) and the other's Scaling is
// written without waiting behind the first one's backlog.
func TestScalingWritesOfOneNamespaceLeaveOthersTheirShare(t *testing.T) {
	c, _, _ := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	opts := Writes{}
	opts.defaults()
	w := NewWriter(c, Writes{}, func() time.Time { return t0 })
	w.MarkServed()
	ctx := context.Background()
	for i := range 1000 {
		w.Offer(Object(rackedCluster("flood", fmt.Sprintf("db-%d", i)), "ns"), statusWith(3, "1"), t0)
	}
	quiet := Object(rackedCluster("quiet", "cart"), "ns")
	offeredAt := t0.Add(5 * time.Second)
	var writtenAt time.Time
	var callsAtOffer float64
	for step := range 70 {
		now := t0.Add(time.Duration(step) * 100 * time.Millisecond)
		if now.Equal(offeredAt) {
			// Each new Scaling is two calls: the object, then its status.
			callsAtOffer = float64(2 * w.writtenIn("flood"))
			// Alone, the namespace took the process's budget, not
			// only its share.
			if alone := float64(opts.Burst) + opts.QPS*now.Sub(t0).Seconds(); callsAtOffer < 0.9*alone {
				t.Errorf("alone for %s the namespace made %v calls, want about the process's %v", now.Sub(t0), callsAtOffer, alone)
			}
			w.Offer(quiet, statusWith(1, "1"), now)
		}
		w.Flush(ctx, now)
		if writtenAt.IsZero() && w.writtenIn("quiet") == 1 {
			writtenAt = now
		}
		if now.Before(offeredAt) {
			continue
		}
		// Held to its share from the other's offer on: its bucket was
		// left with less than a token at its last borrow, one flush
		// (100 ms) before the offer.
		calls := float64(2*w.writtenIn("flood")) - callsAtOffer
		if limit := 1 + opts.PerNamespaceQPS*(now.Sub(offeredAt)+100*time.Millisecond).Seconds(); calls > limit {
			t.Fatalf("%s after the other namespace's offer the flooding namespace made %v calls, over its share of %v", now.Sub(offeredAt), calls, limit)
		}
	}
	if !writtenAt.Equal(offeredAt) {
		t.Errorf("the other namespace's Scaling offered at %s was written at %s, want at once", offeredAt.Sub(t0), writtenAt.Sub(t0))
	}
}

// A refresh of another namespace's values, due while one namespace
// borrows the process's budget for a backlog of new Scalings, is written
// within the borrower's share, not after its whole backlog: the urgent
// backlog would otherwise keep the refresh from ever being looked at.
func TestRefreshOfAnotherNamespaceIsNotStarvedByABorrower(t *testing.T) {
	c, _, _ := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	opts := Writes{}
	opts.defaults()
	w := NewWriter(c, Writes{}, func() time.Time { return t0 })
	w.MarkServed()
	ctx := context.Background()
	quiet := Object(rackedCluster("quiet", "cart"), "ns")
	w.Offer(quiet, statusWith(1, "1"), t0)
	w.Flush(ctx, t0)
	if w.writtenIn("quiet") != 1 {
		t.Fatal("the quiet namespace's Scaling was not written")
	}
	// Its value alone changes: a refresh, due one RefreshInterval on.
	w.Offer(quiet, statusWith(1, "2"), t0.Add(time.Second))
	due := t0.Add(opts.RefreshInterval)
	// A backlog of new Scalings in another namespace, 40 s of the
	// process's budget, starts just before the refresh is due.
	start := due.Add(-time.Second)
	for i := range 1000 {
		w.Offer(Object(rackedCluster("flood", fmt.Sprintf("db-%d", i)), "ns"), statusWith(3, "1"), start)
	}
	refreshed := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for key, it := range w.items {
			if key.Namespace == "quiet" {
				return it.wroteFull == it.full
			}
		}
		return false
	}
	for step := range 200 {
		now := start.Add(time.Duration(step) * 100 * time.Millisecond)
		w.Flush(ctx, now)
		if refreshed() {
			if late := now.Sub(due); late > 2*time.Second {
				t.Errorf("the refresh due at %s was written %s late", due.Sub(t0), late)
			}
			return
		}
	}
	t.Errorf("the refresh due at %s was not written within 20 s of a borrower's backlog", due.Sub(t0))
}

// A namespace that keeps one urgent write coming in a second namespace
// does not stop a namespace past its share from borrowing what the
// process's budget has to spare: the trickle's own writes are all
// written at once, and the flood writes at about the process's pace less
// the trickle's, not only at its share.
func TestATrickleOfUrgentWritesDoesNotBlockBorrowing(t *testing.T) {
	c, _, _ := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	opts := Writes{}
	opts.defaults()
	w := NewWriter(c, Writes{}, func() time.Time { return t0 })
	w.MarkServed()
	ctx := context.Background()
	trickle := Object(rackedCluster("trickle", "cart"), "ns")
	w.Offer(trickle, statusWith(1, "1"), t0)
	w.Flush(ctx, t0)
	for i := range 2000 {
		w.Offer(Object(rackedCluster("flood", fmt.Sprintf("db-%d", i)), "ns"), statusWith(3, "1"), t0)
	}
	const seconds = 20
	trickleWrites := 0
	for step := range seconds * 10 {
		now := t0.Add(time.Duration(step) * 100 * time.Millisecond)
		if step%10 == 5 {
			// A new count every second: urgent, within its share.
			w.Offer(trickle, statusWith(int32(2+(step/10)%2), "1"), now)
			trickleWrites++
		}
		w.Flush(ctx, now)
		w.mu.Lock()
		it := w.items[types.NamespacedName{Namespace: trickle.GetNamespace(), Name: trickle.GetName()}]
		pending := it.full != it.wroteFull
		w.mu.Unlock()
		if pending {
			t.Fatalf("the trickle's write offered at %s waits behind the flood", now.Sub(t0))
		}
	}
	// Each new Scaling is two calls: the object, then its status.
	calls := float64(2 * w.writtenIn("flood"))
	share := float64(opts.PerNamespaceBurst) + opts.PerNamespaceQPS*seconds
	spare := 0.8 * (opts.QPS*seconds - float64(trickleWrites))
	if calls < spare {
		t.Errorf("in %d s beside a trickle of urgent writes the flood made %v calls (its share alone: %v), want at least %v: borrowing was blocked", seconds, calls, share, spare)
	}
}

// Deleting and re-creating all of a namespace's workloads gives it no
// fresh burst: its bucket outlives its last workload until it has
// refilled, and only then is dropped, so buckets of namespaces that are
// gone do not pile up.
func TestNamespaceBucketOutlivesItsWorkloadsUntilRefilled(t *testing.T) {
	c, _, _ := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := t0
	// Room in the process's bucket for both namespaces' shares and some
	// to borrow.
	opts := Writes{QPS: 50, Burst: 400, PerNamespaceQPS: 25, PerNamespaceBurst: 100}
	w := NewWriter(c, opts, func() time.Time { return clock })
	w.MarkServed()
	ctx := context.Background()
	w.Offer(Object(rackedCluster("quiet", "cart"), "ns"), statusWith(1, "1"), t0)
	w.Flush(ctx, t0)
	clock = t0.Add(10 * time.Second) // every bucket full again
	// The other namespace writes too, so what the churning one takes
	// past its share is only what the other leaves.
	w.Offer(Object(rackedCluster("quiet", "cart"), "ns"), statusWith(2, "1"), clock)
	w.Flush(ctx, clock)
	churn := func(generation int) []types.NamespacedName {
		var keys []types.NamespacedName
		for i := range 300 {
			o := Object(rackedCluster("churn", fmt.Sprintf("db-%d-%d", generation, i)), "ns")
			w.Offer(o, statusWith(3, "1"), clock)
			keys = append(keys, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
		}
		return keys
	}
	keys := churn(0)
	w.Flush(ctx, clock)
	first := w.writtenIn("churn")
	if first == 0 || first == len(keys) {
		t.Fatalf("%d of %d new Scalings written at once, want the namespace's share and what it may borrow", first, len(keys))
	}
	for _, k := range keys {
		w.Forget(ctx, k, false)
	}
	keys = churn(1)
	w.Flush(ctx, clock)
	if again := w.writtenIn("churn"); again != 0 {
		t.Errorf("re-created at once, the namespace's workloads had %d Scalings written at once, want none: a fresh bucket", again)
	}
	for _, k := range keys {
		w.Forget(ctx, k, false)
	}
	hasBucket := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.shares.buckets["churn"] != nil
	}
	// The bucket refills in PerNamespaceBurst/PerNamespaceQPS, 4 s: Flush
	// says to come back then, with nothing else to write.
	next := w.Flush(ctx, clock.Add(time.Second))
	if !hasBucket() {
		t.Errorf("the namespace's bucket was dropped a second after its last workload went, before it refilled")
	}
	if next.IsZero() || next.After(clock.Add(5*time.Second)) {
		t.Fatalf("Flush asks to be called again at %v, want when the idle bucket has refilled, within 5 s of %v", next, clock)
	}
	w.Flush(ctx, next)
	if hasBucket() {
		t.Errorf("the namespace's bucket is kept once refilled with no workload")
	}
}

// A namespace's share larger than the process's bucket (a configuration
// that asks more for one namespace than the process has) never holds a
// namespace's writes within its share back for good, beside another
// namespace whose share is full.
func TestNamespaceShareOverTheProcessBucketStillWrites(t *testing.T) {
	c, _, _ := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	w := NewWriter(c, Writes{QPS: 10, Burst: 10, PerNamespaceQPS: 1, PerNamespaceBurst: 100}, func() time.Time { return t0 })
	w.MarkServed()
	ctx := context.Background()
	w.Offer(Object(rackedCluster("idle", "cart"), "ns"), statusWith(1, "1"), t0)
	w.Flush(ctx, t0)
	for i := range 20 {
		w.Offer(Object(rackedCluster("busy", fmt.Sprintf("db-%d", i)), "ns"), statusWith(3, "1"), t0)
	}
	for step := range 100 {
		w.Flush(ctx, t0.Add(time.Duration(step)*100*time.Millisecond))
	}
	if got := w.writtenIn("busy"); got < 20 {
		t.Errorf("the busy namespace wrote %d of its 20 new Scalings in 10 s at 10 calls/s, want all", got)
	}
}

// Settled says whether an offer made before a time could be written by
// then: not for a Scaling never written, one with an urgent write pending
// (held by its bucket), one written again after a delete until the next
// offer, nor past the refresh of the status last written or a soft write
// already scheduled; otherwise it is.
func TestScalingSettledUntilAWriteCouldHappen(t *testing.T) {
	c, _, _ := countingClient(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	w := NewWriter(c, Writes{PerWorkloadInterval: 5 * time.Second, PerWorkloadBurst: 1, RefreshInterval: time.Minute}, func() time.Time { return t0 })
	w.MarkServed()
	ctx := context.Background()
	obj := Object(workloadObject(0), "scaleplane-system")
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	check := func(what string, until time.Duration, want bool) {
		t.Helper()
		if got := w.Settled(key, t0.Add(until)); got != want {
			t.Errorf("%s: Settled until %s = %v, want %v", what, until, got, want)
		}
	}
	check("never offered", 0, false)
	w.Offer(obj, statusWith(3, "30"), t0)
	check("offered, not written", 0, false)
	w.Flush(ctx, t0)
	check("written", 59*time.Second, true)
	check("written, until the refresh", time.Minute, false)
	w.Offer(obj, statusWith(3, "31"), t0.Add(time.Second))
	check("a soft write scheduled at the refresh", 59*time.Second, true)
	check("a soft write scheduled, until it", time.Minute, false)
	w.Offer(obj, statusWith(4, "41"), t0.Add(2*time.Second))
	w.Flush(ctx, t0.Add(2*time.Second))
	check("an urgent write its bucket holds", 2*time.Second, false)
	w.Flush(ctx, t0.Add(10*time.Second))
	check("the urgent write done", 20*time.Second, true)
	w.Gone(key)
	w.Flush(ctx, t0.Add(20*time.Second))
	check("written again after a delete", 30*time.Second, false)
	w.Offer(obj, statusWith(4, "41"), t0.Add(30*time.Second))
	check("offered after the rewrite", 31*time.Second, true)
}
