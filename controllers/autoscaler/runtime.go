package autoscaler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/scaleplane/scaleplane/controllers"
	internalobjects "github.com/scaleplane/scaleplane/internal/objects"
	"github.com/scaleplane/scaleplane/internal/watches"
	"github.com/scaleplane/scaleplane/profile"
)

// RunningKind is the trigger autoscaler of one kind started at run time
// (StartKind). Stop it before the kind's informer is removed.
type RunningKind struct {
	a      *Autoscaler
	k      *kindLoop
	cancel context.CancelFunc
	// done receives what the kind's controller returned; exited is closed
	// after.
	done   chan error
	exited chan struct{}
	once   sync.Once
	// watches are the handlers the kind's controller added to the
	// manager's shared informers; finish removes them.
	watches *watches.Set
	// stopped is closed once the kind is out of the lists and its scalers
	// are closed; err is set before.
	stopped chan struct{}
	err     error
}

func newRunningKind(a *Autoscaler, k *kindLoop, cancel context.CancelFunc) *RunningKind {
	return &RunningKind{a: a, k: k, cancel: cancel, done: make(chan error, 1), exited: make(chan struct{}), stopped: make(chan struct{})}
}

// StartKind adds the loop of v's kind while the manager runs and starts its
// controller under ctx, for kinds activated at run time (ScaleProfiles),
// where SetupKind registers a kind for the manager's whole life. Call it on
// every replica, after SetupWithManager (or SetupKind) and once the
// manager's cache runs; the caller stops it when the kind's profile goes
// away or changes. Until then the kind's triggers, idle timeouts and
// schedules run, its activity and explain endpoints answer, and its
// Scalings are written, exactly as for a kind of the configuration file.
//
// Call it on every replica, as SetupWithManager's kinds are set up on
// every replica: a gateway may POST /activity to any of them, and one
// that does not lead records the activity in the workload's Scaling for
// the leader. The kind's controller starts only once this replica leads.
func (a *Autoscaler) StartKind(ctx context.Context, v *profile.Compiled) (*RunningKind, error) {
	if a.mgr == nil {
		return nil, errors.New("start the autoscaler of a kind: set the autoscaler up with a manager first (SetupWithManager)")
	}
	k, err := a.addKind(v)
	if err != nil {
		return nil, fmt.Errorf("start the autoscaler of %s: %w", v.GVK().Kind, err)
	}
	b, err := a.buildKind(k, true)
	if err != nil {
		a.removeKind(k)
		return nil, err
	}
	return a.runKind(ctx, k, b), nil
}

// builtKind is a kind's controller, not started, and the watches it adds.
type builtKind struct {
	ctrl    controller.Controller
	watches *watches.Set
}

// buildKind is the one construction of a kind's trigger loop controller,
// for kinds set up before the manager starts (SetupKind, SetupWithManager)
// and kinds started while it runs (StartKind). live is the latter: its
// name is not validated, as the kind may be activated again under it.
func (a *Autoscaler) buildKind(k *kindLoop, live bool) (builtKind, error) {
	mgr := a.mgr
	name := controllers.ControllerName(ControllerPrefix, k.view.GVK().GroupKind())
	global := mgr.GetControllerOptions()
	skip := live || a.opts.SkipNameValidation || (global.SkipNameValidation != nil && *global.SkipNameValidation)
	c, err := controller.NewUnmanaged(name, controller.Options{
		Reconciler:              k,
		MaxConcurrentReconciles: cmp.Or(a.opts.MaxConcurrentReconciles, global.MaxConcurrentReconciles),
		SkipNameValidation:      &skip,
		RecoverPanic:            global.RecoverPanic,
		CacheSyncTimeout:        global.CacheSyncTimeout,
		LogConstructor: func(req *reconcile.Request) logr.Logger {
			log := mgr.GetLogger().WithValues("controller", name, "kind", k.kind)
			if req != nil {
				log = log.WithValues("namespace", req.Namespace, "name", req.Name)
			}
			return log
		},
	})
	if err != nil {
		return builtKind{}, fmt.Errorf("set up autoscaler for %s: %w", k.kind, err)
	}
	// Status updates (the fan-out's readiness, our neighbours') change
	// nothing a tick reads; spec and annotations do. The wake channel
	// brings activity, dependencies and Scalings.
	proto := internalobjects.Prototype(mgr.GetScheme(), k.view.GVK())
	set := watches.New(mgr.GetCache())
	changed := predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	for _, src := range []source.Source{
		source.Kind[client.Object](set.Cache(), proto, &handler.EnqueueRequestForObject{}, changed),
		source.Channel(k.wake, &handler.EnqueueRequestForObject{}),
		// HPAs from the manager's cache (indexed in setupManager): a
		// foreign one changes who sets the count (C5).
		source.Kind[client.Object](set.Cache(), &autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(k.mapHPA)),
	} {
		if err := c.Watch(src); err != nil {
			return builtKind{}, fmt.Errorf("watch for the autoscaler of %s: %w", k.kind, err)
		}
	}
	return builtKind{ctrl: c, watches: set}, nil
}

// runKind runs b under ctx once this replica leads, and returns at once.
func (a *Autoscaler) runKind(ctx context.Context, k *kindLoop, b builtKind) *RunningKind {
	ctx, cancel := context.WithCancel(ctx)
	r := newRunningKind(a, k, cancel)
	r.watches = b.watches
	go func() {
		defer close(r.exited)
		select {
		case <-a.mgr.Elected():
			r.done <- b.ctrl.Start(ctx)
		case <-ctx.Done():
			r.done <- nil
		}
	}()
	return r
}

// managedKind runs a kind set up before the manager starts for the
// manager's life, on every replica (its controller waits for the
// election), exactly as StartKind runs a kind activated later.
type managedKind struct {
	a *Autoscaler
	k *kindLoop
	b builtKind
}

// Start runs the kind until ctx ends, or its controller fails.
func (m managedKind) Start(ctx context.Context) error {
	r := m.a.runKind(ctx, m.k, m.b)
	select {
	case <-ctx.Done():
	case <-r.exited:
	}
	return r.Stop(context.WithoutCancel(ctx))
}

// NeedLeaderElection is false: every replica answers the kind's activity
// and explain endpoints; the controller itself waits for the election.
func (managedKind) NeedLeaderElection() bool { return false }

// Stop stops the kind's controller, waits until its ticks have returned (or
// ctx ends), removes the event handler its watch added to the manager's
// shared informer, takes the kind out of the endpoints and the scraper, and
// releases its workloads' scalers. Scalings stay: they belong to their
// workloads (owner references), and a profile applied again restores its
// History from them, as a new leader does. Stop is idempotent. When ctx
// ends first, the rest still happens once the ticks return, and a later
// Stop waits for it: a kind left in the lists for good would make every
// StartKind of it fail ("two profiles").
func (r *RunningKind) Stop(ctx context.Context) error {
	r.once.Do(func() {
		r.cancel()
		go r.finish()
	})
	select {
	case <-r.stopped:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("stop the autoscaler of %s: %w; it leaves once its ticks return", r.k.kind, ctx.Err())
	}
}

// finish waits for the controller, then takes the kind out of the lists
// and closes its workloads' scalers (each within Options.CloseTimeout).
func (r *RunningKind) finish() {
	defer close(r.stopped)
	if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
		r.err = fmt.Errorf("autoscaler of %s: %w", r.k.kind, err)
	}
	if r.watches != nil {
		if err := r.watches.Release(); err != nil {
			r.err = errors.Join(r.err, fmt.Errorf("remove the event handlers of the autoscaler of %s: %w", r.k.kind, err))
		}
	}
	r.a.removeKind(r.k)
	r.k.mu.Lock()
	states := make([]*workload, 0, len(r.k.workloads))
	for nn, st := range r.k.workloads {
		states = append(states, st)
		delete(r.k.workloads, nn)
	}
	r.k.mu.Unlock()
	for _, st := range states {
		r.k.deleteMetrics(st)
		r.k.closeScalers(context.Background(), st)
	}
}
