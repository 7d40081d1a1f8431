package autoscaler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/foreign"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	"github.com/scaleplane/scaleplane/internal/benchcmp"
	"github.com/scaleplane/scaleplane/promql"
)

// informerCache is a client.Reader that serves unstructured objects as
// controller-runtime's informer cache does: Get returns a deep copy of the
// stored object unless asked for client.UnsafeDisableDeepCopy, when it
// returns the stored object itself, shared. It lists nothing: no workload
// of the benchmark has a foreign autoscaler. gets counts the Gets that
// shared the stored object.
type informerCache struct {
	mu      sync.RWMutex
	objects map[schema.GroupVersionKind]map[types.NamespacedName]*unstructured.Unstructured
	shared  int
}

func newInformerCache() *informerCache {
	return &informerCache{objects: map[schema.GroupVersionKind]map[types.NamespacedName]*unstructured.Unstructured{}}
}

func (c *informerCache) put(u *unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gvk := u.GroupVersionKind()
	if c.objects[gvk] == nil {
		c.objects[gvk] = map[types.NamespacedName]*unstructured.Unstructured{}
	}
	c.objects[gvk][types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}] = u
}

func (c *informerCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	gvk := obj.GetObjectKind().GroupVersionKind()
	c.mu.RLock()
	stored := c.objects[gvk][key]
	c.mu.RUnlock()
	if !ok || stored == nil {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	o := &client.GetOptions{}
	o.ApplyOptions(opts)
	if o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy {
		c.mu.Lock()
		c.shared++
		c.mu.Unlock()
		*u = *stored
		return nil
	}
	stored.DeepCopyInto(u)
	return nil
}

func (c *informerCache) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// benchRackedCluster is an autoscaled RackedCluster as the informer cache
// holds it after admission and a few ticks: three racks, a scale config
// with the two triggers of newTickBench, the fan-out's status, and the
// metadata the API server sets (managed fields are stripped by the
// binary's cache transform).
func benchRackedCluster(ns, name string, replicas int64) *unstructured.Unstructured {
	u := rackedCluster(ns, name, replicas, nil)
	u.SetUID(types.UID("0b7c9e4e-5a7e-4d43-9d3e-" + fmt.Sprintf("%012d", len(name))))
	u.SetResourceVersion("4711")
	u.SetGeneration(3)
	u.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)))
	u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"samples.scaleplane.io/v1alpha1","kind":"RackedCluster","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":{"racks":[{"name":"a"},{"name":"b"},{"name":"c"}],"scaleConfig":{"maxReplicas":20,"minReplicas":1}}}`})
	racks := []any{}
	for _, r := range []string{"a", "b", "c"} {
		racks = append(racks, map[string]any{"name": r, "members": replicas})
	}
	_ = unstructured.SetNestedSlice(u.Object, racks, "spec", "racks")
	_ = unstructured.SetNestedField(u.Object, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(20),
		"triggers": []any{
			map[string]any{"name": "rps", "type": "AverageValue", "threshold": int64(4),
				"query": `sum(rate(http_requests_total{namespace="${namespace}",job="${name}"}[1m]))`},
			map[string]any{"name": "queue", "type": "AverageValue", "threshold": int64(1),
				"query": `max(queue_depth{namespace="${namespace}",job="${name}"})`},
		},
	}, "spec", "scaleConfig")
	_ = unstructured.SetNestedField(u.Object, map[string]any{
		"replicas": replicas, "readyReplicas": replicas, "observedGeneration": int64(3),
	}, "status")
	return u
}

// newReconcileBench is newTickBench through kindLoop.Reconcile: n
// RackedClusters at 3 replicas in an informer cache (with the Scaling each
// one's earlier ticks left), the store filled as newTickBench fills it, and
// the environment the binary gives the loop (Scaling writer, foreign
// autoscaler finder, event recorder) with writes that never happen: every
// decision keeps the count. The returned function reconciles every
// workload once, each one due (its last tick forgotten: the store's data
// and the clock stay put, as in newTickBench). cache counts what the
// reconciles read.
func newReconcileBench(tb testing.TB, n int) (tick func(), cache *informerCache) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	a, store := newStoreAutoscalerWith(tb, now, promql.Options{MaxSeries: -1, MaxBytes: -1})
	const perNamespace = 10_000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("w%06d", i)
	}
	for from := 0; from < n; from += perNamespace {
		fillStore(tb, store, fmt.Sprintf("bench%d", from/perNamespace), names[from:min(from+perNamespace, n)], 10, 3, now)
	}
	k := a.byResource["rackedclusters"]
	cache = newInformerCache()
	// A writer whose writes succeed and are not bounded, so that every
	// Scaling is written once the History is warm.
	applied := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, k8sruntime.ApplyConfiguration, ...client.ApplyOption) error {
			return nil
		},
		SubResourceApply: func(context.Context, client.Client, string, k8sruntime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
			return nil
		},
	})
	writer := scalings.NewWriter(applied, ScalingWrites{QPS: 1e9, Burst: 1 << 30, PerNamespaceQPS: -1}, a.opts.Now)
	writer.MarkServed()
	a.env.Store(&env{
		cache:    cache,
		events:   &recorder{},
		foreign:  &foreign.Finder{Cache: cache, Mapper: meta.NewDefaultRESTMapper(nil), Interval: time.Hour, Now: a.opts.Now},
		scalings: writer,
	})
	reqs := make([]reconcile.Request, n)
	for i, name := range names {
		nn := types.NamespacedName{Namespace: fmt.Sprintf("bench%d", i/perNamespace), Name: name}
		reqs[i] = reconcile.Request{NamespacedName: nn}
		// The count the two triggers ask for (10/4 and 3/1 → 3): no write.
		cache.put(benchRackedCluster(nn.Namespace, nn.Name, 3))
	}
	// The binary's reconciles log through a logger the controller puts in
	// their context; this one drops what it is given.
	ctx := logr.NewContext(context.Background(), logr.Discard())
	reconcileAll := func() {
		for _, r := range reqs {
			if res, err := k.Reconcile(ctx, r); err != nil || res.RequeueAfter != a.opts.PollingInterval {
				tb.Fatalf("reconcile %s: %v, %+v", r.NamespacedName, err, res)
			}
		}
	}
	// Two rounds build the scalers and warm the History; the Scalings they
	// offered are written, and stored in the cache as the writer's writes
	// would be. The rounds after find them written, their significant
	// part unchanged and no refresh due before their next tick: they
	// build no status (offerkey.go), as most ticks between two writes.
	reconcileAll()
	reconcileAll()
	writer.Flush(ctx, a.opts.Now())
	for _, r := range reqs {
		st := k.lookup(r.Namespace, r.Name)
		if st == nil || st.currentState() != StateAutoscaling || st.lastRec == nil || st.lastRec.Desired != 3 || st.lastRec.Written {
			tb.Fatalf("%s not autoscaling at 3 without a write: %+v", r.NamespacedName, st)
		}
		obj := scalings.Object(benchRackedCluster(r.Namespace, r.Name, 3), a.opts.Namespace)
		m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.Scaling{Status: *st.scalingPrev})
		if err != nil {
			tb.Fatal(err)
		}
		obj.Object["status"] = m["status"]
		obj.SetResourceVersion("5000")
		cache.put(obj)
	}
	// A round that reads the Scalings: the steady state between two of
	// their writes.
	reconcileAll()
	for _, r := range reqs {
		if st := k.lookup(r.Namespace, r.Name); !st.offered || !writer.Settled(types.NamespacedName{Namespace: st.scalingObj.GetNamespace(), Name: st.scalingObj.GetName()}, a.opts.Now()) {
			tb.Fatalf("%s: the Scaling is not written and settled", r.NamespacedName)
		}
	}
	return func() {
		for _, r := range reqs {
			// Due: the tick runs (planTick), as a polling interval later.
			k.lookup(r.Namespace, r.Name).lastTick = time.Time{}
		}
		reconcileAll()
	}, cache
}

// BenchmarkReconcile10000 is a whole reconcile (kindLoop.Reconcile) of
// 10,000 workloads: what BenchmarkTick10000 measures (decide) plus reading
// the workload and its Scaling from the informer cache, reading the scale
// config, the checks before a tick, and the Scaling offered after it. No
// /scale write: every decision keeps the count.
func BenchmarkReconcile10000(b *testing.B) { benchmarkReconcile(b, 10_000) }

// BenchmarkReconcile100000 is BenchmarkReconcile10000 with ten times the
// workloads. `make bench` runs it with -cpu 1.
func BenchmarkReconcile100000(b *testing.B) { benchmarkReconcile(b, 100_000) }

func benchmarkReconcile(b *testing.B, n int) {
	tick, _ := newReconcileBench(b, n)
	runPerWorkload(b, n, tick)
}

// TestReconcileAllocationsWithinBaseline holds a whole reconcile's
// allocations per workload to the stored baseline of
// BenchmarkReconcile10000 (hack/bench/baseline.txt), within
// benchcmp.DefaultOptions' margin, as TestTickAllocationsWithinBaseline
// holds decide's.
func TestReconcileAllocationsWithinBaseline(t *testing.T) {
	if raceDetector() {
		t.Skip("the race detector makes sync.Pool drop entries (fmt's among them), so allocation counts are not the baseline's")
	}
	base, err := benchcmp.ParseFile("../../hack/bench/baseline.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, ok := base["BenchmarkReconcile10000"]
	if !ok || b.Metrics["allocs/op"] == 0 {
		t.Fatalf("hack/bench/baseline.txt holds no allocs/op for BenchmarkReconcile10000")
	}
	const n = 200
	tick, cache := newReconcileBench(t, n)
	shared := cache.shared
	got := testing.AllocsPerRun(3, tick) / n
	want := b.Metrics["allocs/op"] / 10_000
	t.Logf("allocations per workload: %.1f (baseline %.1f)", got, want)
	if limit := want * benchcmp.DefaultOptions.MaxAllocRatio; got > limit {
		t.Errorf("a reconcile allocates %.1f times per workload, over %.1f (%.2f × the baseline's %.1f): find the new allocations with -memprofile, or refresh the baseline with `make bench-baseline` and say why",
			got, limit, benchcmp.DefaultOptions.MaxAllocRatio, want)
	}
	// Each reconcile reads its workload and its Scaling from the cache
	// without a copy.
	if reads := cache.shared - shared; reads != 4*2*n {
		t.Errorf("%d reads shared the cache's objects in 4 rounds of %d workloads, want %d", reads, n, 4*2*n)
	}
}
