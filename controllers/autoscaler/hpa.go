package autoscaler

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/scaleplane/scaleplane/controllers"
)

// HPAs and KEDA ScaledObjects the trigger autoscaler must not run beside
// are found by package internal/foreign (env.foreign); here an HPA's
// change wakes its workload.

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
