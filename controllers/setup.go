package controllers

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/scaleplane/scaleplane/profile"
)

// Options tunes the controllers. The zero value is ready to use: what it
// leaves out is the manager's (mgr.GetControllerOptions()).
type Options struct {
	// Owner names the controllers <owner>-<kind> (controller-runtime
	// requires names unique in a process, and an embedding operator may
	// profile a kind the binary also profiles). Default scaleplane.
	Owner string
	// MaxConcurrentReconciles is how many workloads of one kind reconcile at
	// once. Different workloads never share state, so more than one is safe.
	// Zero leaves the manager's setting (controller-runtime's default is
	// 1); the binary asks for 4, which keeps a burst of kubectl scale calls
	// on many workloads from queueing behind one another.
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
	// controllers of the same names; only tests need it. False leaves the
	// manager's setting.
	SkipNameValidation bool
}

func (o *Options) defaults() {
	if o.Owner == "" {
		o.Owner = "scaleplane"
	}
	if o.ConflictRetries <= 0 {
		o.ConflictRetries = 10
	}
	if o.KEDADiscoveryInterval == 0 {
		o.KEDADiscoveryInterval = 30 * time.Second
	}
}

// Setup registers one controller per view with mgr (SetupKind for each):
// fan-out (C1), status (C2, C3) and the built-in HPA (C4, C5). The
// controllers run only on the elected leader.
func Setup(mgr manager.Manager, views []*profile.Compiled, opts Options) error {
	seen := map[schema.GroupVersionKind]bool{}
	for _, v := range views {
		if seen[v.GVK()] {
			return fmt.Errorf("two profiles for %s: keep one", v.GVK())
		}
		seen[v.GVK()] = true
	}
	for _, v := range views {
		if err := SetupKind(mgr, v, opts); err != nil {
			return err
		}
	}
	return nil
}

// SetupKind registers the controller of one profiled kind with mgr; call it
// once for each kind, as one calls SetupWithManager once per reconciler.
// Everything it registers is the kind's own (its HPA index is named after
// the kind), so kinds set up one by one never collide; setting up one kind
// twice on a manager is an error that says so.
//
// The workload is watched as mgr's scheme knows it: typed when the scheme
// has the kind (the embedding operator's own type, one informer shared with
// its controllers), unstructured otherwise. No manager-wide
// Cache.Unstructured is needed.
//
// The controller is the one NewKindRuntime builds for a kind activated
// while the manager runs (one watch list, one set of policies), run by
// the manager on the elected leader for its whole life.
func SetupKind(mgr manager.Manager, v *profile.Compiled, opts Options) error {
	opts.defaults()
	k, keda, err := buildKind(mgr, v, opts, false)
	if err != nil {
		return err
	}
	if err := mgr.Add(managedKind{k}); err != nil {
		return fmt.Errorf("set up controller for %s: %w", v.GVK().Kind, err)
	}
	return keda.setup(mgr)
}

// HPATargetIndex names the field index of HPAs by scale target that the
// controller of gk lists through. Each kind has its own, so that setting up
// kinds one by one never registers an index twice.
func HPATargetIndex(gk schema.GroupKind) string {
	return hpaTargetIndex + "/" + gk.String()
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
