package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

// ScaledObjectGVK is KEDA's ScaledObject, a foreign autoscaler (C5) whose
// kind is watched only where the API server serves it.
var ScaledObjectGVK = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}

// TargetKey is how HPAs and ScaledObjects are matched with workloads:
// "<group>/<Kind>/<name>", or "" when the reference names nothing. The
// version is left out because an autoscaler naming any served version of a
// kind scales the same object. The trigger autoscaler matches with it too.
func TargetKey(apiVersion, kind, name string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || name == "" {
		return ""
	}
	return gv.Group + "/" + kind + "/" + name
}

// IndexHPATarget indexes an HPA by the TargetKey of its scaleTargetRef.
func IndexHPATarget(o client.Object) []string {
	h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	ref := h.Spec.ScaleTargetRef
	if k := TargetKey(ref.APIVersion, ref.Kind, ref.Name); k != "" {
		return []string{k}
	}
	return nil
}

// ScaledObjectTarget is a ScaledObject's spec.scaleTargetRef with KEDA's
// defaults (apps/v1 Deployment).
func ScaledObjectTarget(so *unstructured.Unstructured) (apiVersion, kind, name string) {
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

// WorkloadTargets are the keys an autoscaler of u may target: u itself
// through /scale and, for kinds whose HPA scales a child, that child. An
// autoscaler on either would fight the built-in HPA over the same count.
func WorkloadTargets(v *profile.Compiled, u *unstructured.Unstructured) []string {
	gvk := v.GVK()
	keys := []string{gvk.Group + "/" + gvk.Kind + "/" + u.GetName()}
	if ref := v.HPATargetRef(u); !v.Layout().TargetSelf {
		if k := TargetKey(ref.APIVersion, ref.Kind, ref.Name); k != "" && k != keys[0] {
			keys = append(keys, k)
		}
	}
	return keys
}

// foreignAutoscalers names the HPAs not controlled by u or made by another
// owner's scaleplane, and the KEDA ScaledObjects, that target u or its HPA
// target.
func (r *Reconciler) foreignAutoscalers(ctx context.Context, u *unstructured.Unstructured) ([]string, error) {
	return ForeignAutoscalers(ctx, r.cache, r.hpaIndex, WorkloadTargets(r.view, u), u, r.owner, r.keda.served())
}

// ForeignAutoscalers names, sorted, the autoscalers other than u's own that
// target one of keys (WorkloadTargets of u), as
// "HorizontalPodAutoscaler/<ns>/<name>" and "ScaledObject/<ns>/<name>": HPAs
// not controlled by u, or controlled by u but made by another owner's
// scaleplane (labelled managed by scaleplane with an owner label other than
// owner, under any name), found through the field index named index (built
// with IndexHPATarget), and, when keda is true (the API server serves
// ScaledObjectGVK), KEDA ScaledObjects. owner is the caller's owner
// (v1alpha1.LabelOwner of the HPAs its controllers make). The HPA
// controller (C5) and the trigger autoscaler both stand down beside one.
func ForeignAutoscalers(ctx context.Context, r client.Reader, index string, keys []string, u *unstructured.Unstructured, owner string, keda bool) ([]string, error) {
	if u.GetNamespace() == "" {
		// A cluster-scoped workload: HPAs and ScaledObjects are namespaced
		// and resolve their target in their own namespace, so none can
		// scale it (and listing in "" would search every namespace).
		return nil, nil
	}
	var out []string
	for _, k := range keys {
		var list autoscalingv2.HorizontalPodAutoscalerList
		if err := r.List(ctx, &list, client.InNamespace(u.GetNamespace()), client.MatchingFields{index: k}); err != nil {
			return nil, fmt.Errorf("list HPAs targeting %s: %w", k, err)
		}
		for i := range list.Items {
			if h := &list.Items[i]; !metav1.IsControlledBy(h, u) || madeByAnotherOwner(h, u, owner) {
				out = append(out, "HorizontalPodAutoscaler/"+h.Namespace+"/"+h.Name)
			}
		}
	}
	if keda {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(ScaledObjectGVK.GroupVersion().WithKind(ScaledObjectGVK.Kind + "List"))
		if err := r.List(ctx, list, client.InNamespace(u.GetNamespace())); err != nil {
			return nil, fmt.Errorf("list ScaledObjects: %w", err)
		}
		for i := range list.Items {
			so := &list.Items[i]
			if slices.Contains(keys, TargetKey(ScaledObjectTarget(so))) {
				out = append(out, "ScaledObject/"+so.GetNamespace()+"/"+so.GetName())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// workloadFor maps an autoscaler's target to the workload of this view it
// concerns: the workload itself, or the workload whose child it is (the
// profile's child name with ${name} inverted). ok is false for anything
// else.
func (r *Reconciler) workloadFor(apiVersion, kind, name string) (string, bool) {
	return WorkloadOfTarget(r.view, apiVersion, kind, name)
}

// WorkloadOfTarget is the name of the workload of view v that an
// autoscaler's scale target concerns: the workload itself, or the workload
// whose child it is (the profile's child name with ${name} inverted). ok is
// false for anything else. The trigger autoscaler maps HPAs with it too.
func WorkloadOfTarget(v *profile.Compiled, apiVersion, kind, name string) (string, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "", false
	}
	gvk := v.GVK()
	if gv.Group == gvk.Group && kind == gvk.Kind {
		return name, name != ""
	}
	t := v.Spec().HPATarget
	if t.Self() {
		return "", false
	}
	tgv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil || tgv.Group != gv.Group || t.Kind != kind {
		return "", false
	}
	return invertName(t.Name, name)
}

// invertName finds the workload name that template (holding ${name} once)
// turns into name.
func invertName(template, name string) (string, bool) {
	before, after, ok := strings.Cut(template, v1alpha1.NamePlaceholder)
	if !ok || strings.Contains(after, v1alpha1.NamePlaceholder) {
		return "", false
	}
	if len(name) <= len(before)+len(after) || !strings.HasPrefix(name, before) || !strings.HasSuffix(name, after) {
		return "", false
	}
	return name[len(before) : len(name)-len(after)], true
}

// mapHPA maps any HPA to the workload it targets, so that a user's HPA
// appearing or going away is seen (C5).
func (r *Reconciler) mapHPA(_ context.Context, o client.Object) []reconcile.Request {
	h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	ref := h.Spec.ScaleTargetRef
	if name, ok := r.workloadFor(ref.APIVersion, ref.Kind, ref.Name); ok {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: h.Namespace, Name: name}}}
	}
	return nil
}

// mapScaledObject is mapHPA for KEDA's ScaledObjects.
func (r *Reconciler) mapScaledObject(_ context.Context, o client.Object) []reconcile.Request {
	so, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	if name, ok := r.workloadFor(ScaledObjectTarget(so)); ok {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: so.GetNamespace(), Name: name}}}
	}
	return nil
}

// kedaWatch adds the ScaledObject watch to every controller once KEDA's
// kind is served: at Setup when it already is, else from a manager
// Runnable that looks for it every interval, so that a cluster which
// installs KEDA later needs no restart.
type kedaWatch struct {
	mapper   meta.RESTMapper
	interval time.Duration

	mu       sync.Mutex
	watching bool
	targets  []kedaTarget
}

type kedaTarget struct {
	ctrl  controller.Controller
	cache cache.Cache
	mapFn handler.MapFunc
}

func newKEDAWatch(mapper meta.RESTMapper, interval time.Duration) *kedaWatch {
	return &kedaWatch{mapper: mapper, interval: interval}
}

func (k *kedaWatch) add(c controller.Controller, ca cache.Cache, fn handler.MapFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.targets = append(k.targets, kedaTarget{c, ca, fn})
}

// served reports whether the ScaledObject watch is running, so reconcilers
// may list ScaledObjects from the cache.
func (k *kedaWatch) served() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.watching
}

// setup starts the watch now when KEDA is served, else registers the
// look-up Runnable.
func (k *kedaWatch) setup(mgr manager.Manager) error {
	started, err := k.try()
	if err != nil || started || k.interval < 0 {
		return err
	}
	return mgr.Add(k)
}

// try starts the watches when the kind is served.
func (k *kedaWatch) try() (bool, error) {
	if _, err := k.mapper.RESTMapping(ScaledObjectGVK.GroupKind(), ScaledObjectGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("look up %s: %w", ScaledObjectGVK, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.watching {
		return true, nil
	}
	for _, t := range k.targets {
		so := &unstructured.Unstructured{}
		so.SetGroupVersionKind(ScaledObjectGVK)
		if err := t.ctrl.Watch(source.Kind[client.Object](t.cache, so, handler.EnqueueRequestsFromMapFunc(t.mapFn))); err != nil {
			return false, fmt.Errorf("watch %s: %w", ScaledObjectGVK, err)
		}
	}
	k.watching = true
	return true, nil
}

// Start looks for the kind every interval until it is served.
func (k *kedaWatch) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("keda-discovery")
	t := time.NewTicker(k.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		started, err := k.try()
		if err != nil {
			log.Error(err, "KEDA discovery")
			continue
		}
		if started {
			log.Info("KEDA ScaledObjects are served; watching them as foreign autoscalers")
			return nil
		}
	}
}

// NeedLeaderElection is false: the watch is added to controllers that start
// only on the leader, and looking early costs nothing.
func (k *kedaWatch) NeedLeaderElection() bool { return false }
