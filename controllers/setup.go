package controllers

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/scaleplane/scaleplane/profile"
)

// Options tunes the controllers. The zero value is ready to use.
type Options struct {
	// MaxConcurrentReconciles is how many workloads of one kind reconcile at
	// once. Different workloads never share state, so more than one is safe;
	// default 4, which keeps a burst of kubectl scale calls on many workloads
	// from queueing behind one another.
	MaxConcurrentReconciles int
	// ConflictRetries bounds how often the fan-out re-reads the workload and
	// writes again after a conflict (another writer changed it in between)
	// before it gives up and lets the work queue retry with backoff.
	// Default 10.
	ConflictRetries int
	// KEDADiscoveryInterval is how often the controllers look for KEDA's
	// ScaledObject kind (keda.sh/v1alpha1) when it is not served at Setup,
	// so that installing KEDA later starts the watch without a restart.
	// Default 30 s; negative disables the look-ups (ScaledObjects are then
	// seen only if served at Setup).
	KEDADiscoveryInterval time.Duration
	// SkipNameValidation lets several managers in one process register
	// controllers of the same names (scaleplane-<kind>); only tests need it.
	SkipNameValidation bool
}

func (o *Options) defaults() {
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
	}
	if o.ConflictRetries <= 0 {
		o.ConflictRetries = 10
	}
	if o.KEDADiscoveryInterval == 0 {
		o.KEDADiscoveryInterval = 30 * time.Second
	}
}

// Setup registers one controller per view with mgr: fan-out (C1), status
// (C2, C3) and the built-in HPA (C4, C5). Call it once per manager; the
// controllers run only on the elected leader.
func Setup(mgr manager.Manager, views []*profile.Compiled, opts Options) error {
	opts.defaults()
	if len(views) == 0 {
		return nil
	}
	seen := map[schema.GroupVersionKind]bool{}
	for _, v := range views {
		if seen[v.GVK()] {
			return fmt.Errorf("two profiles for %s: keep one", v.GVK())
		}
		seen[v.GVK()] = true
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &autoscalingv2.HorizontalPodAutoscaler{}, hpaTargetIndex, IndexHPATarget); err != nil {
		return fmt.Errorf("index HPAs by scale target: %w", err)
	}
	keda := newKEDAWatch(mgr.GetRESTMapper(), opts.KEDADiscoveryInterval)
	for _, v := range views {
		r := newReconciler(mgr, v, keda, opts)
		c, err := r.build(mgr, opts)
		if err != nil {
			return fmt.Errorf("set up controller for %s: %w", v.GVK().Kind, err)
		}
		keda.add(c, mgr.GetCache(), r.mapScaledObject)
	}
	return keda.setup(mgr)
}

// build registers the reconciler's controller and its watches: the
// workload, HPAs we own (a deleted or hand-edited one is restored), and
// every HPA mapped to the workload it targets (a user's HPA appearing or
// going away changes C5's answer).
func (r *Reconciler) build(mgr manager.Manager, opts Options) (controller.Controller, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.view.GVK())
	copts := controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}
	if opts.SkipNameValidation {
		skip := true
		copts.SkipNameValidation = &skip
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.controllerName()).
		For(u).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}, builder.WithPredicates(hpaChanged)).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.mapHPA), builder.WithPredicates(hpaChanged)).
		WithOptions(copts).
		Build(r)
}

// hpaChanged lets through HPA updates that can change a decision: spec,
// labels, owners or deletion. The HPA controller rewrites every HPA's
// status each sync period; reconciling every workload with an HPA for that
// would be pure load.
var hpaChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*autoscalingv2.HorizontalPodAutoscaler)
		n, ok2 := e.ObjectNew.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok1 || !ok2 {
			return true
		}
		return !equality.Semantic.DeepEqual(o.Spec, n.Spec) ||
			!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			!equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences) ||
			!equality.Semantic.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp)
	},
}
