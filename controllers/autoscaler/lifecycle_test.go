package autoscaler

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/scaleplane/scaleplane/scaling"
)

// Deleting a workload wedged the worker that reconciled
// the deletion (forget held the workload's lock while closing its scalers,
// which takes it again). Every test here runs reconciles in goroutines and
// fails when one has not returned within hangBound: a hang is a failure
// with a message, never a test that runs until the global timeout.

// hangBound is how long a reconcile or a handler may take before the test
// calls it hung. It is a hang detector, not a timing assertion: everything
// here returns in microseconds when it works.
const hangBound = 10 * time.Second

// within runs f in a goroutine and fails the test when it has not returned
// within hangBound.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hangBound):
		t.Fatalf("%s did not return within %s: the worker is wedged", what, hangBound)
	}
}

// world is the cluster a lifecycle test's reconciles see: the objects of
// its cache, which the test creates and deletes while ticks run, and the
// /scale writes that reach it.
//
// Like the API server, it gives every object it stores a new
// resourceVersion (unless the test set one), and a new UID unless it
// replaces an object of the same name; like the informer cache, Get hands out the stored object itself
// when asked for client.UnsafeDisableDeepCopy, and untouched checks that
// nobody changed one.
type world struct {
	mu     sync.Mutex
	objs   map[types.NamespacedName]*unstructured.Unstructured
	saved  map[types.NamespacedName]*unstructured.Unstructured
	rv     int
	writes int
}

func newWorld() *world {
	return &world{objs: map[types.NamespacedName]*unstructured.Unstructured{}, saved: map[types.NamespacedName]*unstructured.Unstructured{}}
}

func (w *world) Get(_ context.Context, nn types.NamespacedName, obj client.Object, opts ...client.GetOption) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	u, ok := w.objs[nn]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "samples.scaleplane.io", Resource: "rackedclusters"}, nn.Name)
	}
	o := &client.GetOptions{}
	o.ApplyOptions(opts)
	if o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy {
		*obj.(*unstructured.Unstructured) = *u
		return nil
	}
	u.DeepCopyInto(obj.(*unstructured.Unstructured))
	return nil
}

// untouched reports every stored object that differs from what was put.
func (w *world) untouched(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for nn, u := range w.objs {
		if diff := cmp.Diff(w.saved[nn].Object, u.Object); diff != "" {
			t.Errorf("the cache's object %s was changed by a reader (-put +now):\n%s", nn, diff)
		}
	}
}

func (w *world) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func (w *world) put(u *unstructured.Unstructured) {
	w.mu.Lock()
	defer w.mu.Unlock()
	nn := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
	u = u.DeepCopy()
	w.rv++
	if u.GetResourceVersion() == "" {
		u.SetResourceVersion(strconv.Itoa(w.rv))
	}
	if u.GetUID() == "" {
		uid := types.UID("uid-" + strconv.Itoa(w.rv))
		if old, ok := w.objs[nn]; ok {
			uid = old.GetUID()
		}
		u.SetUID(uid)
	}
	w.objs[nn] = u
	w.saved[nn] = u.DeepCopy()
}

func (w *world) remove(nn types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objs, nn)
}

// env is the autoscaler's view of w: its cache, and a writer whose /scale
// writes fail with NotFound once the object is gone, as the API server's do.
func (w *world) env() *env {
	writer := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ ...client.SubResourceUpdateOption) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			if _, ok := w.objs[types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}]; !ok {
				return apierrors.NewNotFound(schema.GroupResource{Group: "samples.scaleplane.io", Resource: "rackedclusters"}, obj.GetName())
			}
			w.writes++
			return nil
		},
	})
	return &env{cache: w, writer: writer}
}

// probe is a trigger source whose scalers tell the test what happens to
// them: how many were built and closed, whether Close got a live context,
// and, when asked, a Sample or a Close that waits for the test (or never
// returns).
type probe struct {
	source        string
	value         float64
	built, closed atomic.Int32
	// closeCtxErr is the context error each Close saw when it started.
	closeCtxErr chan error

	// When not nil, a Sample reports on sampling and waits for
	// releaseSample, and a Close waits for releaseClose.
	sampling      chan struct{}
	releaseSample chan struct{}
	releaseClose  chan struct{}
	// sources are the test's trigger sources, the probe's among them.
	sources *scaling.Sources
}

// newProbe registers a probe under a source name of its own.
func newProbe(t *testing.T) *probe {
	t.Helper()
	p := &probe{source: "probe-" + t.Name(), value: 50, closeCtxErr: make(chan error, 100), sources: testSources(t, nil)}
	registerTestSource(t, p.sources, p.source, func(context.Context, scaling.ScalerConfig) (scaling.Scaler, error) {
		p.built.Add(1)
		return probeScaler{p}, nil
	})
	return p
}

// holdSamples makes every Sample report and wait until the returned
// function is called.
func (p *probe) holdSamples() (release func()) {
	p.sampling, p.releaseSample = make(chan struct{}, 100), make(chan struct{})
	return sync.OnceFunc(func() { close(p.releaseSample) })
}

// registerTestSource is the one place the lifecycle tests register a
// trigger source.
func registerTestSource(t testing.TB, sources *scaling.Sources, source string, ctor scaling.ScalerConstructor) {
	t.Helper()
	if err := sources.Register(source, scaling.Source{New: ctor}); err != nil {
		t.Fatal(err)
	}
}

type probeScaler struct{ p *probe }

func (probeScaler) Metric() scaling.ScalerMetric { return scaling.ScalerMetric{} }

func (s probeScaler) Sample(context.Context, time.Time) (scaling.Sample, error) {
	if s.p.sampling != nil {
		s.p.sampling <- struct{}{}
		// Deliberately deaf to its context: the worker must not be.
		<-s.p.releaseSample
	}
	return scaling.Sample{Value: s.p.value, OK: true}, nil
}

func (s probeScaler) Close(ctx context.Context) error {
	s.p.closeCtxErr <- ctx.Err()
	if s.p.releaseClose != nil {
		<-s.p.releaseClose // deaf to its context too
	}
	s.p.closed.Add(1)
	return nil
}

// probed is a RackedCluster at 2 replicas autoscaled by one trigger of
// source.
func probed(ns, name, source string) *unstructured.Unstructured {
	u := rackedCluster(ns, name, 2, nil)
	u.SetResourceVersion("1")
	_ = unstructured.SetNestedField(u.Object, map[string]any{
		"minReplicas": int64(1), "maxReplicas": int64(10),
		"triggers": []any{map[string]any{"name": "load", "type": "AverageValue", "source": source, "threshold": float64(10)}},
	}, "spec", "scaleConfig")
	return u
}

// rig is one autoscaler kind loop with a world and a probe source, and the
// steps a lifecycle test takes; every step that could hang runs within
// hangBound.
type rig struct {
	t     *testing.T
	a     *Autoscaler
	k     *kindLoop
	w     *world
	p     *probe
	ns    string
	clock atomic.Pointer[time.Time]
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, w: newWorld(), p: newProbe(t), ns: strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	r.clock.Store(&now)
	a, err := New(Options{Views: sampleViews(t), Sources: r.p.sources, Now: func() time.Time { return *r.clock.Load() }})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	r.a, r.k = a, a.byResource["rackedclusters"]
	a.env.Store(r.w.env())
	t.Cleanup(func() { r.w.untouched(t) })
	return r
}

func (r *rig) advance(d time.Duration) {
	now := r.clock.Load().Add(d)
	r.clock.Store(&now)
}

func (r *rig) nn(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: r.ns, Name: name}
}

func (r *rig) create(name string, edit ...func(*unstructured.Unstructured)) {
	u := probed(r.ns, name, r.p.source)
	for _, f := range edit {
		f(u)
	}
	r.w.put(u)
}

func (r *rig) delete(name string) { r.w.remove(r.nn(name)) }

// markDeleting gives the object a deletion timestamp: a finalizer holds it.
func (r *rig) markDeleting(name string) {
	var u unstructured.Unstructured
	if err := r.w.Get(context.Background(), r.nn(name), &u); err != nil {
		r.t.Fatal(err)
	}
	ts := metav1.NewTime(*r.clock.Load())
	u.SetDeletionTimestamp(&ts)
	u.SetFinalizers([]string{"example.com/hold"})
	r.w.put(&u)
}

// reconcile is one pass of a worker over name with ctx.
func (r *rig) reconcileCtx(ctx context.Context, name string) {
	r.t.Helper()
	within(r.t, "the reconcile of "+name, func() {
		if _, err := r.k.Reconcile(ctx, request(r.ns, name)); err != nil {
			r.t.Errorf("reconcile %s: %v", name, err)
		}
	})
}

func (r *rig) reconcile(name string) { r.t.Helper(); r.reconcileCtx(context.Background(), name) }

// tick reconciles name a polling interval after the previous tick.
func (r *rig) tick(name string) {
	r.t.Helper()
	r.advance(time.Minute)
	r.reconcile(name)
}

// drain reconciles every queued wake-up, as the controller would.
func (r *rig) drain() {
	r.t.Helper()
	for {
		select {
		case ev := <-r.k.wake:
			r.reconcile(ev.Object.GetName())
		default:
			return
		}
	}
}

// activity posts activity for name and returns the status.
func (r *rig) activity(name string) int {
	r.t.Helper()
	return r.serve(http.MethodPost, ActivityPath+r.ns+"/rackedclusters/"+name)
}

// explain gets the explanation of name and returns the status.
func (r *rig) explain(name string) int {
	r.t.Helper()
	return r.serve(http.MethodGet, ExplainPath+r.ns+"/rackedclusters/"+name)
}

func (r *rig) serve(method, path string) int {
	r.t.Helper()
	rec := httptest.NewRecorder()
	within(r.t, method+" "+path, func() { r.a.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil)) })
	return rec.Code
}

// remembered lists the names the loop keeps in memory, sorted.
func (r *rig) remembered() []string {
	r.k.mu.RLock()
	defer r.k.mu.RUnlock()
	var out []string
	for nn := range r.k.workloads {
		out = append(out, nn.Name)
	}
	slices.Sort(out)
	return out
}

// series lists the autoscaler's metric series of the rig's namespace as
// "metric name[/trigger]", sorted.
func (r *rig) series() []string {
	r.t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		r.t.Fatalf("gather metrics: %v", err)
	}
	var out []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			lv := map[string]string{}
			for _, l := range m.GetLabel() {
				lv[l.GetName()] = l.GetValue()
			}
			if lv["namespace"] != r.ns {
				continue
			}
			s := f.GetName() + " " + lv["name"]
			if tr := lv["trigger"]; tr != "" {
				s += "/" + tr
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// lifecycle is what a lifecycle test checks at the end.
type lifecycle struct {
	Remembered    []string
	Built, Closed int32
	Series        []string
}

func (r *rig) lifecycle() lifecycle {
	return lifecycle{Remembered: r.remembered(), Built: r.p.built.Load(), Closed: r.p.closed.Load(), Series: r.series()}
}

// TestLifecycle deletes, re-creates and signals workloads in
// the orders a cluster produces, and checks that every reconcile returns,
// that nothing of a deleted workload stays in memory or in the metrics, and
// that every scaler built is closed once.
func TestLifecycle(t *testing.T) {
	alive := []string{"scaleplane_desired_replicas cart", "scaleplane_trigger_value cart/load"}
	cases := []struct {
		name  string
		steps func(r *rig)
		want  lifecycle
	}{
		{
			name:  "deleted after a tick",
			steps: func(r *rig) { r.create("cart"); r.tick("cart"); r.delete("cart"); r.reconcile("cart") },
			want:  lifecycle{Built: 1, Closed: 1},
		},
		{
			name: "deleted twice",
			steps: func(r *rig) {
				r.create("cart")
				r.tick("cart")
				r.delete("cart")
				r.reconcile("cart")
				r.reconcile("cart")
			},
			want: lifecycle{Built: 1, Closed: 1},
		},
		{
			name: "held by a finalizer, then gone",
			steps: func(r *rig) {
				r.create("cart")
				r.tick("cart")
				r.markDeleting("cart")
				r.reconcile("cart")
				r.reconcile("cart")
				r.delete("cart")
				r.reconcile("cart")
			},
			want: lifecycle{Built: 1, Closed: 1},
		},
		{
			name: "deleted before its first tick",
			steps: func(r *rig) {
				r.create("cart")
				r.delete("cart")
				r.reconcile("cart")
			},
			want: lifecycle{},
		},
		{
			name: "re-created with the same name starts afresh",
			steps: func(r *rig) {
				r.create("cart")
				r.tick("cart")
				r.delete("cart")
				r.reconcile("cart")
				r.create("cart")
				r.tick("cart")
				if n := len(r.k.lookup(r.ns, "cart").explain(r.k).Decisions); n != 1 {
					r.t.Errorf("the new cart remembers %d decisions, want only its own 1", n)
				}
			},
			want: lifecycle{Remembered: []string{"cart"}, Built: 2, Closed: 1, Series: alive},
		},
		{
			name: "activity posted while it is deleted",
			steps: func(r *rig) {
				r.create("cart")
				r.tick("cart")
				r.delete("cart")
				var wg sync.WaitGroup
				for range 20 {
					wg.Go(func() {
						if got := r.activity("cart"); got != http.StatusAccepted && got != http.StatusNotFound {
							r.t.Errorf("activity: got %d, want 202 or 404", got)
						}
					})
				}
				wg.Go(func() { r.reconcile("cart") })
				wg.Wait()
				r.drain()
			},
			want: lifecycle{Built: 1, Closed: 1},
		},
		{
			name: "a dependency that does not exist is not remembered",
			steps: func(r *rig) {
				r.create("cart", func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedStringSlice(u.Object, []string{"ghost"}, "spec", "scaleConfig", "dependsOn")
				})
				r.tick("cart")
				r.drain()
			},
			want: lifecycle{Remembered: []string{"cart"}, Built: 1, Series: alive},
		},
		{
			name: "the leader loses its lease as the deletion is reconciled",
			steps: func(r *rig) {
				r.create("cart")
				r.tick("cart")
				r.delete("cart")
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				r.reconcileCtx(ctx, "cart")
				// Close gets a live context: a remote scaler can still say
				// goodbye during a shutdown.
				select {
				case err := <-r.p.closeCtxErr:
					if err != nil {
						r.t.Errorf("Close started with an ended context: %v", err)
					}
				default:
					r.t.Error("the scaler was not closed")
				}
			},
			want: lifecycle{Built: 1, Closed: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			tc.steps(r)
			if diff := cmp.Diff(tc.want, r.lifecycle(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("after the steps (-want +got):\n%s", diff)
			}
		})
	}
}

// A workload deleted while a worker is inside its tick (the sample is
// slow): the endpoints, the scraper's discovery and the gauges keep
// answering meanwhile, the tick ends with the /scale write refused as not
// found, and the deletion's reconcile forgets it.
func TestDeleteDuringTick(t *testing.T) {
	r := newRig(t)
	r.create("cart")
	r.tick("cart") // builds the scaler; cart is known
	release := r.p.holdSamples()
	defer release()
	ticked := make(chan struct{})
	r.advance(time.Minute)
	go func() {
		defer close(ticked)
		if _, err := r.k.Reconcile(context.Background(), request(r.ns, "cart")); err != nil {
			t.Errorf("tick: %v", err)
		}
	}()
	select {
	case <-r.p.sampling:
	case <-time.After(hangBound):
		t.Fatal("the tick never sampled")
	}
	r.delete("cart")
	r.advance(30 * time.Second)
	type during struct {
		Explain, Activity int
		Gauges            workerGauges
	}
	var got during
	got.Explain, got.Activity = r.explain("cart"), r.activity("cart")
	within(t, "the scraper's discovery", func() { r.a.ScrapeWorkloads() })
	liveAutoscalers.add(r.a)
	defer liveAutoscalers.remove(r.a)
	got.Gauges = gaugesOf(t, "RackedCluster")
	want := during{Explain: http.StatusOK, Activity: http.StatusNotFound,
		Gauges: workerGauges{Group: "samples.scaleplane.io", Kind: "RackedCluster", Workers: 4, Busy: 1, Workloads: 1, OldestTick: 30 * time.Second}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("while the tick runs (-want +got):\n%s", diff)
	}

	release()
	select {
	case <-ticked:
	case <-time.After(hangBound):
		t.Fatal("the tick did not return once its sample did")
	}
	last := r.k.lookup(r.ns, "cart").explain(r.k).Decisions
	if n := len(last); n == 0 || !strings.Contains(last[n-1].Error, "not found") {
		t.Errorf("the tick's write should have been refused as not found; decisions: %+v", last)
	}
	r.reconcile("cart")
	if diff := cmp.Diff(lifecycle{Built: 1, Closed: 1}, r.lifecycle(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("after the deletion (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(workerGauges{Group: "samples.scaleplane.io", Kind: "RackedCluster", Workers: 4}, gaugesOf(t, "RackedCluster")); diff != "" {
		t.Errorf("gauges at rest (-want +got):\n%s", diff)
	}
}

// While a deleted workload's scaler is slow to close, the same name is
// created again and gets activity: the new workload has a memory of its
// own at once, and the activity wakes it once the old memory is forgotten.
func TestRecreateWhileForgetting(t *testing.T) {
	r := newRig(t)
	r.create("cart")
	r.tick("cart")
	r.p.releaseClose = make(chan struct{})
	r.delete("cart")
	forgotten := make(chan struct{})
	go func() {
		defer close(forgotten)
		if _, err := r.k.Reconcile(context.Background(), request(r.ns, "cart")); err != nil {
			t.Errorf("reconcile of the deletion: %v", err)
		}
	}()
	select {
	case err := <-r.p.closeCtxErr:
		t.Logf("the deletion closed the scaler (its context: %v)", err)
	case <-time.After(hangBound):
		t.Fatal("the deletion never closed the scaler")
	}
	r.create("cart")
	if got := r.activity("cart"); got != http.StatusAccepted {
		t.Errorf("activity for the new cart: got %d, want 202", got)
	}
	close(r.p.releaseClose)
	select {
	case <-forgotten:
	case <-time.After(hangBound):
		t.Fatal("the deletion's reconcile did not return once Close did")
	}
	r.drain()
	x := r.k.lookup(r.ns, "cart").explain(r.k)
	type fresh struct {
		State     State
		Activity  bool
		Decisions int
	}
	if diff := cmp.Diff(fresh{StateAutoscaling, true, 1}, fresh{x.State, !x.LastActivity.IsZero(), len(x.Decisions)}); diff != "" {
		t.Errorf("the new cart (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(lifecycle{Remembered: []string{"cart"}, Built: 2, Closed: 1, Series: []string{"scaleplane_desired_replicas cart", "scaleplane_trigger_value cart/load"}}, r.lifecycle(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A scaler whose Sample or Close ignores its context holds the worker only
// until SampleTimeout or CloseTimeout.
func TestDeafScalerDoesNotHoldTheWorker(t *testing.T) {
	t.Run("Close", func(t *testing.T) {
		r := newRig(t)
		r.a.opts.CloseTimeout = 10 * time.Millisecond
		r.p.releaseClose = make(chan struct{}) // never released
		r.create("cart")
		r.tick("cart")
		r.delete("cart")
		r.reconcile("cart")
		if diff := cmp.Diff(lifecycle{Built: 1}, r.lifecycle(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("Sample", func(t *testing.T) {
		r := newRig(t)
		r.a.opts.SampleTimeout = 10 * time.Millisecond
		r.create("cart")
		r.p.holdSamples() // never released
		r.tick("cart")
		d := r.k.lookup(r.ns, "cart").explain(r.k).Decisions
		if len(d) != 1 || len(d[0].Triggers) != 1 || !strings.Contains(d[0].Triggers[0].Problem, "no answer within 10ms") {
			t.Errorf("the deaf trigger should be invalid for this tick with the timeout named; decisions: %+v", d)
		}
	})
}

// gaugesOf is the worker gauges of kind from the live autoscalers.
func gaugesOf(t *testing.T, kind string) workerGauges {
	t.Helper()
	for _, g := range liveAutoscalers.gauges() {
		if g.Kind == kind {
			return g
		}
	}
	t.Fatalf("no worker gauges for %s", kind)
	return workerGauges{}
}

// The gauges are exported under their documented names, one series per
// kind, only while an autoscaler's manager runs.
func TestWorkerGaugesExported(t *testing.T) {
	r := newRig(t)
	r.create("cart")
	r.tick("cart")
	r.a.opts.MaxConcurrentReconciles = 3
	liveAutoscalers.add(r.a)
	want := `
# HELP scaleplane_autoscaler_busy_workers Workers reconciling a workload of the kind now; at the worker count for longer than a tick, the kind's autoscaling has stalled.
# TYPE scaleplane_autoscaler_busy_workers gauge
scaleplane_autoscaler_busy_workers{group="samples.scaleplane.io",kind="Function"} 0
scaleplane_autoscaler_busy_workers{group="samples.scaleplane.io",kind="RackedCluster"} 0
scaleplane_autoscaler_busy_workers{group="samples.scaleplane.io",kind="WorkerGroup"} 0
# HELP scaleplane_autoscaler_workers Reconcile workers of a kind's autoscaler (MaxConcurrentReconciles).
# TYPE scaleplane_autoscaler_workers gauge
scaleplane_autoscaler_workers{group="samples.scaleplane.io",kind="Function"} 3
scaleplane_autoscaler_workers{group="samples.scaleplane.io",kind="RackedCluster"} 3
scaleplane_autoscaler_workers{group="samples.scaleplane.io",kind="WorkerGroup"} 3
# HELP scaleplane_autoscaler_workloads Workloads of the kind the autoscaler keeps in memory (History, scalers, explain records); back to 0 when they are all deleted.
# TYPE scaleplane_autoscaler_workloads gauge
scaleplane_autoscaler_workloads{group="samples.scaleplane.io",kind="Function"} 0
scaleplane_autoscaler_workloads{group="samples.scaleplane.io",kind="RackedCluster"} 1
scaleplane_autoscaler_workloads{group="samples.scaleplane.io",kind="WorkerGroup"} 0
`
	if err := testutil.CollectAndCompare(liveAutoscalers, strings.NewReader(want),
		"scaleplane_autoscaler_workers", "scaleplane_autoscaler_busy_workers", "scaleplane_autoscaler_workloads"); err != nil {
		t.Error(err)
	}
	liveAutoscalers.remove(r.a)
	if n := testutil.CollectAndCount(liveAutoscalers); n != 0 {
		t.Errorf("%d series after the manager stopped, want 0", n)
	}
}

func request(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}
