package autoscaler

import (
	"context"
	"fmt"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/profile"
)

// Foreign autoscalers, found the way the HPA controller's C5 finds them
// (package controllers), but with this package's own index so that neither
// depends on the other's registration: an HPA we do not control, or a KEDA
// ScaledObject, whose scale target is the workload (or the child its
// profile's HPA would scale). Beside one of them the trigger autoscaler
// stands down: two autoscalers writing one count fight.

// hpaTargetIndex indexes HPAs by controllers.TargetKey of their target.
const hpaTargetIndex = "scaleplane.io/autoscaler-hpa-target"

// foreignFinder lists foreign autoscalers from the manager's cache.
type foreignFinder struct {
	cache    client.Reader
	mapper   meta.RESTMapper
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	keda    bool
	checked time.Time
}

// kedaServed says whether ScaledObjects are served, asking the RESTMapper
// at most once per interval, so that installing KEDA later is noticed
// without a restart and without a discovery call per tick. The lock is not
// held while the mapper asks the API server: the other workers meanwhile
// use the previous answer instead of queueing behind a slow discovery.
func (f *foreignFinder) kedaServed() (bool, error) {
	f.mu.Lock()
	if f.keda || (!f.checked.IsZero() && f.now().Sub(f.checked) < f.interval) {
		keda := f.keda
		f.mu.Unlock()
		return keda, nil
	}
	f.checked = f.now()
	f.mu.Unlock()
	if _, err := f.mapper.RESTMapping(controllers.ScaledObjectGVK.GroupKind(), controllers.ScaledObjectGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("look up %s: %w", controllers.ScaledObjectGVK, err)
	}
	f.mu.Lock()
	f.keda = true
	f.mu.Unlock()
	return true, nil
}

// find names the foreign autoscalers of u (controllers.ForeignAutoscalers,
// over this package's own HPA index). Ours (C4) never exists for a config
// with triggers; one left from a config that had metrics is being deleted by
// C4 and, being controlled by u, is not counted.
func (f *foreignFinder) find(ctx context.Context, v *profile.Compiled, u *unstructured.Unstructured) ([]string, error) {
	served, err := f.kedaServed()
	if err != nil {
		return nil, err
	}
	return controllers.ForeignAutoscalers(ctx, f.cache, hpaTargetIndex, controllers.WorkloadTargets(v, u), u, served)
}

// mapHPA maps an HPA to the workload of this kind it targets, so that a
// user's HPA appearing or going away changes the Scaling (who sets the
// count) without waiting for the workload to change.
func (k *kindLoop) mapHPA(_ context.Context, o client.Object) []reconcile.Request {
	h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	ref := h.Spec.ScaleTargetRef
	if name, ok := controllers.WorkloadOfTarget(k.view, ref.APIVersion, ref.Kind, ref.Name); ok && !k.view.Layout().ClusterScoped {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: h.Namespace, Name: name}}}
	}
	return nil
}
