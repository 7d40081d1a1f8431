package autoscaler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/config"
)

// Foreign autoscalers, found the way the HPA controller's C5 finds them
// (package controllers), but with this package's own index so that neither
// depends on the other's registration: an HPA we do not control, or a KEDA
// ScaledObject, whose scale target is the workload (or the child its
// profile's HPA would scale). Beside one of them the trigger autoscaler
// stands down: two autoscalers writing one count fight.

// ScaledObjectGVK is KEDA's ScaledObject.
var ScaledObjectGVK = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}

// hpaTargetIndex indexes HPAs by "<group>/<Kind>/<name>" of their target.
const hpaTargetIndex = "scaleplane.io/autoscaler-hpa-target"

// targetKey is how autoscalers and workloads are matched. The version is
// left out: an autoscaler naming any served version scales the same object.
func targetKey(apiVersion, kind, name string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || name == "" {
		return ""
	}
	return gv.Group + "/" + kind + "/" + name
}

func indexHPATarget(o client.Object) []string {
	h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	ref := h.Spec.ScaleTargetRef
	if k := targetKey(ref.APIVersion, ref.Kind, ref.Name); k != "" {
		return []string{k}
	}
	return nil
}

// workloadTargets are the keys an autoscaler of u may target.
func workloadTargets(v *config.View, u *unstructured.Unstructured) []string {
	gvk := v.GVK()
	keys := []string{gvk.Group + "/" + gvk.Kind + "/" + u.GetName()}
	if !v.Layout().TargetSelf {
		ref := v.HPATargetRef(u)
		if k := targetKey(ref.APIVersion, ref.Kind, ref.Name); k != "" && k != keys[0] {
			keys = append(keys, k)
		}
	}
	return keys
}

// scaledObjectTarget is a ScaledObject's scaleTargetRef with KEDA's
// defaults (apps/v1 Deployment).
func scaledObjectTarget(so *unstructured.Unstructured) (apiVersion, kind, name string) {
	ref, _, _ := unstructured.NestedStringMap(so.Object, "spec", "scaleTargetRef")
	apiVersion, kind, name = ref["apiVersion"], ref["kind"], ref["name"]
	if apiVersion == "" {
		apiVersion = "apps/v1"
	}
	if kind == "" {
		kind = "Deployment"
	}
	return apiVersion, kind, name
}

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
// without a restart and without a discovery call per tick.
func (f *foreignFinder) kedaServed() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keda || (!f.checked.IsZero() && f.now().Sub(f.checked) < f.interval) {
		return f.keda, nil
	}
	f.checked = f.now()
	if _, err := f.mapper.RESTMapping(ScaledObjectGVK.GroupKind(), ScaledObjectGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("look up %s: %w", ScaledObjectGVK, err)
	}
	f.keda = true
	return true, nil
}

// find names the foreign autoscalers of u, sorted, as
// "HorizontalPodAutoscaler/<ns>/<name>" and "ScaledObject/<ns>/<name>".
func (f *foreignFinder) find(ctx context.Context, v *config.View, u *unstructured.Unstructured) ([]string, error) {
	keys := workloadTargets(v, u)
	var out []string
	for _, k := range keys {
		var list autoscalingv2.HorizontalPodAutoscalerList
		if err := f.cache.List(ctx, &list, client.InNamespace(u.GetNamespace()), client.MatchingFields{hpaTargetIndex: k}); err != nil {
			return nil, fmt.Errorf("list HPAs targeting %s: %w", k, err)
		}
		for i := range list.Items {
			// Ours (C4) never exists for a config with triggers; one left
			// from a config that had metrics is being deleted by C4.
			if h := &list.Items[i]; !metav1.IsControlledBy(h, u) {
				out = append(out, "HorizontalPodAutoscaler/"+h.Namespace+"/"+h.Name)
			}
		}
	}
	served, err := f.kedaServed()
	if err != nil {
		return nil, err
	}
	if served {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(ScaledObjectGVK.GroupVersion().WithKind(ScaledObjectGVK.Kind + "List"))
		if err := f.cache.List(ctx, list, client.InNamespace(u.GetNamespace())); err != nil {
			return nil, fmt.Errorf("list ScaledObjects: %w", err)
		}
		for i := range list.Items {
			so := &list.Items[i]
			if slices.Contains(keys, targetKey(scaledObjectTarget(so))) {
				out = append(out, "ScaledObject/"+so.GetNamespace()+"/"+so.GetName())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
