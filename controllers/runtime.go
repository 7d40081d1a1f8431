package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

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
// (ScaleProfiles, PHASE2 section 2), where SetupKind registers a kind for
// the manager's whole life. It is built unmanaged: the caller (a runnable
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

// NewKindRuntime builds the controller of v's kind on mgr, with the same
// policies and watches as SetupKind (the workload, HPAs it owns, HPAs
// mapped to it). KEDA ScaledObjects are watched when KEDA is served now;
// a kind activated before KEDA is installed sees them when it is activated
// again. The kind's HPA index is registered once per manager and reused.
// Controller names are <owner>-<kind> and not validated for uniqueness
// (the kind may be activated again under the same name).
func NewKindRuntime(mgr manager.Manager, v *profile.Compiled, opts Options) (*KindRuntime, error) {
	opts.defaults()
	gvk := v.GVK()
	index := HPATargetIndex(gvk.GroupKind())
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &autoscalingv2.HorizontalPodAutoscaler{}, index, IndexHPATarget); err != nil && !strings.Contains(err.Error(), "indexer conflict") {
		return nil, fmt.Errorf("index HPAs by scale target for %s: %w", gvk.GroupKind(), err)
	}
	keda := newKEDAWatch(mgr.GetRESTMapper(), -1)
	r := newReconciler(mgr, v, keda, opts)
	r.hpaIndex = index

	global := mgr.GetControllerOptions()
	skip := true
	copts := controller.Options{
		Reconciler:              r,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		SkipNameValidation:      &skip,
		RecoverPanic:            global.RecoverPanic,
		CacheSyncTimeout:        global.CacheSyncTimeout,
	}
	if copts.MaxConcurrentReconciles == 0 {
		copts.MaxConcurrentReconciles = global.MaxConcurrentReconciles
	}
	name := opts.Owner + "-" + strings.ToLower(gvk.Kind)
	copts.LogConstructor = func(req *reconcile.Request) logr.Logger {
		log := mgr.GetLogger().WithValues("controller", name, "kind", gvk.Kind)
		if req != nil {
			log = log.WithValues("namespace", req.Namespace, "name", req.Name)
		}
		return log
	}
	c, err := controller.NewUnmanaged(name, copts)
	if err != nil {
		return nil, fmt.Errorf("build controller for %s: %w", gvk.Kind, err)
	}
	proto := objects.Prototype(mgr.GetScheme(), gvk)
	set := watches.New(mgr.GetCache())
	ca := set.Cache()
	watches := []source.Source{
		source.Kind[client.Object](ca, proto, &handler.EnqueueRequestForObject{}),
		source.Kind[client.Object](ca, &autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), proto, handler.OnlyControllerOwner()), hpaChanged),
		source.Kind[client.Object](ca, &autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.mapHPA), hpaChanged),
	}
	for _, w := range watches {
		if err := c.Watch(w); err != nil {
			return nil, fmt.Errorf("watch for %s: %w", gvk.Kind, err)
		}
	}
	keda.add(c, ca, r.mapScaledObject)
	if _, err := keda.try(); err != nil {
		return nil, err
	}
	return &KindRuntime{gk: gvk.GroupKind().String(), ctrl: c, cache: mgr.GetCache(), proto: proto, watches: set}, nil
}

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
