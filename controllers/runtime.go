package controllers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"weak"

	"github.com/go-logr/logr"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/scaleplane/scaleplane/internal/objects"
	"github.com/scaleplane/scaleplane/internal/watches"
	"github.com/scaleplane/scaleplane/profile"
)

// KindRuntime is the controller of one profiled kind that is started and
// stopped while the manager runs, for kinds activated at run time
// (ScaleProfiles), where SetupKind registers the same controller for the
// manager's whole life. It is built unmanaged: the caller (a runnable
// on the elected leader) starts it once the manager's cache runs and stops
// it when the kind's profile goes away or changes. A controller starts
// once: activating the kind again takes a new KindRuntime.
type KindRuntime struct {
	gk    string
	ctrl  controller.Controller
	cache cache.Cache
	proto client.Object
	// watches are the handlers this activation added to the manager's
	// shared informers; Stop removes them.
	watches *watches.Set

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

// NewKindRuntime builds the controller of v's kind on mgr, for a kind
// activated while the manager runs. It is the one construction of a
// kind's controller: SetupKind registers the same with the manager. The
// controller has every policy and watch: the workload, HPAs it owns, HPAs
// mapped to it, and KEDA ScaledObjects when KEDA is served now (a kind
// activated before KEDA is installed sees them when it is activated
// again). The kind's HPA index is registered once per manager and reused.
// Controller names are <owner>-<kind> and not validated for uniqueness
// (the kind may be activated again under the same name).
func NewKindRuntime(mgr manager.Manager, v *profile.Compiled, opts Options) (*KindRuntime, error) {
	opts.defaults()
	k, _, err := buildKind(mgr, v, opts, true)
	return k, err
}

// indexes are the field indexes registered per field indexer (one per
// manager): IndexField refuses a second registration of a name, and a
// kind activated again reuses its index. Each entry is locked on its own,
// so a registration that waits for an informer holds up no other. An
// entry holds its field indexer weakly and goes when the indexer does, so
// a process that builds and drops managers (a library's test suite) does
// not keep their caches alive through it.
var indexes sync.Map // indexKey -> *indexEntry

type indexKey struct {
	// indexer is a weak pointer to the field indexer's object; strong is
	// the indexer itself when it is not a pointer (no weak pointer can be
	// made to it, and such an entry stays for the process's life).
	indexer weak.Pointer[byte]
	strong  client.FieldIndexer
	name    string
}

type indexEntry struct {
	mu   sync.Mutex
	done bool
}

// keyOf is the registry key of index name on fi, and the object the entry
// must not outlive (nil when fi is not a pointer).
func keyOf(fi client.FieldIndexer, name string) (indexKey, *byte) {
	v := reflect.ValueOf(fi)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return indexKey{strong: fi, name: name}, nil
	}
	// The same pointer gives equal weak pointers, whatever its type: what
	// the key names is the object, never read through this *byte.
	obj := (*byte)(v.UnsafePointer())
	return indexKey{indexer: weak.Make(obj), name: name}, obj
}

// indexOnce registers the field index name of obj on mgr's field indexer
// unless this process registered it there before; first is true for the
// call that did. A registration that fails is tried again by the next
// call. The registry, not the text of IndexField's error, is what says an
// index exists.
func indexOnce(mgr manager.Manager, obj client.Object, name string, extract client.IndexerFunc) (first bool, err error) {
	fi := mgr.GetFieldIndexer()
	key, indexer := keyOf(fi, name)
	v, loaded := indexes.LoadOrStore(key, &indexEntry{})
	if !loaded && indexer != nil {
		runtime.AddCleanup(indexer, func(k indexKey) { indexes.Delete(k) }, key)
	}
	e := v.(*indexEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return false, nil
	}
	if err := fi.IndexField(context.Background(), obj, name, extract); err != nil {
		return false, err
	}
	e.done = true
	return true, nil
}

// buildKind builds the controller of v's kind and its watches. live is a
// kind activated while the manager runs: its name is not validated (it
// may be activated again) and its HPA index may exist already; a kind set
// up before the manager starts (SetupKind) may be set up once.
func buildKind(mgr manager.Manager, v *profile.Compiled, opts Options, live bool) (*KindRuntime, *kedaWatch, error) {
	gvk := v.GVK()
	index := HPATargetIndex(gvk.GroupKind())
	first, err := indexOnce(mgr, &autoscalingv2.HorizontalPodAutoscaler{}, index, IndexHPATarget)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("index HPAs by scale target for %s: %w", gvk.GroupKind(), err)
	case !first && !live:
		return nil, nil, fmt.Errorf("set up controller for %s: this manager already has one for the kind; set up each kind once", gvk.GroupKind())
	}
	interval := opts.KEDADiscoveryInterval
	if live {
		interval = -1
	}
	keda := newKEDAWatch(mgr.GetRESTMapper(), interval)
	r := newReconciler(mgr, v, keda, opts)
	r.hpaIndex = index
	// A ScaleHandle's groups live in its target: the handle reconciler
	// carries R there and readiness back, in the kind's controller.
	rec, attach, err := reconcilerFor(mgr, v, r, opts)
	if err != nil {
		return nil, nil, err
	}

	global := mgr.GetControllerOptions()
	skip := live || opts.SkipNameValidation || (global.SkipNameValidation != nil && *global.SkipNameValidation)
	copts := controller.Options{
		Reconciler:              rec,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		SkipNameValidation:      &skip,
		RecoverPanic:            global.RecoverPanic,
		CacheSyncTimeout:        global.CacheSyncTimeout,
	}
	if copts.MaxConcurrentReconciles == 0 {
		copts.MaxConcurrentReconciles = global.MaxConcurrentReconciles
	}
	name := ControllerName(opts.Owner+"-", gvk.GroupKind())
	copts.LogConstructor = func(req *reconcile.Request) logr.Logger {
		log := mgr.GetLogger().WithValues("controller", name, "kind", gvk.Kind)
		if req != nil {
			log = log.WithValues("namespace", req.Namespace, "name", req.Name)
		}
		return log
	}
	c, err := controller.NewUnmanaged(name, copts)
	if err != nil {
		return nil, nil, fmt.Errorf("set up controller for %s: %w", gvk.Kind, err)
	}
	proto := objects.Prototype(mgr.GetScheme(), gvk)
	set := watches.New(mgr.GetCache())
	ca := set.Cache()
	srcs := []source.Source{
		source.Kind[client.Object](ca, proto, &handler.EnqueueRequestForObject{}),
		source.Kind[client.Object](ca, &autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), proto, handler.OnlyControllerOwner()), hpaChanged),
		source.Kind[client.Object](ca, &autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.mapHPA), hpaChanged),
	}
	for _, w := range srcs {
		if err := c.Watch(w); err != nil {
			return nil, nil, fmt.Errorf("watch for %s: %w", gvk.Kind, err)
		}
	}
	if err := attach(c, ca); err != nil {
		return nil, nil, fmt.Errorf("set up controller for %s: %w", gvk.Kind, err)
	}
	keda.add(c, ca, r.mapScaledObject)
	if live {
		if _, err := keda.try(); err != nil {
			return nil, nil, err
		}
	}
	return &KindRuntime{gk: gvk.GroupKind().String(), ctrl: c, cache: mgr.GetCache(), proto: proto, watches: set}, keda, nil
}

// managedKind runs a kind set up before the manager starts (SetupKind)
// for the manager's life, on the elected leader, as a controller built
// with the manager's builder would run.
type managedKind struct{ k *KindRuntime }

func (m managedKind) Start(ctx context.Context) error {
	err := m.k.ctrl.Start(ctx)
	if rerr := m.k.watches.Release(); rerr != nil && err == nil {
		err = fmt.Errorf("remove the event handlers of %s: %w", m.k.gk, rerr)
	}
	return err
}

// NeedLeaderElection is true: the controllers write, so only the leader
// runs them.
func (managedKind) NeedLeaderElection() bool { return true }

// Start runs the controller until ctx ends or Stop; it returns at once.
func (k *KindRuntime) Start(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done != nil {
		return fmt.Errorf("start controller for %s: it ran already; build a new KindRuntime to activate the kind again", k.gk)
	}
	ctx, k.cancel = context.WithCancel(ctx)
	k.done = make(chan error, 1)
	go func() { k.done <- k.ctrl.Start(ctx) }()
	return nil
}

// Stop stops the controller, waits until its workers have returned (or
// ctx ends), removes the event handlers its watches added to the
// manager's shared informers (each holds goroutines for the informer's
// life), and removes the kind's informer from the cache when the
// manager's scheme does not know the kind: nothing else of the manager
// watches an unstructured kind scaleplane was given at run time, while a
// typed kind's informer may serve the operator's own controllers.
func (k *KindRuntime) Stop(ctx context.Context) error {
	k.mu.Lock()
	cancel, done := k.cancel, k.done
	k.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("controller for %s: %w", k.gk, err)
		}
	case <-ctx.Done():
		return fmt.Errorf("stop controller for %s: %w", k.gk, ctx.Err())
	}
	if err := k.watches.Release(); err != nil {
		return fmt.Errorf("remove the event handlers of %s: %w", k.gk, err)
	}
	if _, unstructuredKind := k.proto.(*unstructured.Unstructured); unstructuredKind {
		if err := k.cache.RemoveInformer(ctx, k.proto); err != nil {
			return fmt.Errorf("remove the informer of %s: %w", k.gk, err)
		}
	}
	return nil
}
