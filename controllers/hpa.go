package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// reconcileHPA is C4 and C5: the built-in HPA exists exactly when
// scaling.DecideHPA wants it, with the spec it decides. Only an HPA whose
// controller owner is this workload is ever applied or deleted; an object
// of ours' name that we do not own is left alone and reported.
func (r *Reconciler) reconcileHPA(ctx context.Context, u *unstructured.Unstructured) error {
	w, errs := r.view.Read(u)
	if !r.readable(ctx, u, errs) {
		return nil
	}
	nn := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
	foreign, err := r.foreignAutoscalers(ctx, u)
	if err != nil {
		return err
	}
	layout := r.view.Layout()
	layout.ClusterScoped = u.GetNamespace() == ""
	d := scaling.DecideHPA(w, layout, r.defaultMetrics, foreign)
	if layout.ClusterScoped {
		// No HPA of ours can exist (nor be looked up: it would have no
		// namespace); say so once when the config asks for one.
		unscoped := layout
		unscoped.ClusterScoped = false
		if scaling.DecideHPA(w, unscoped, r.defaultMetrics, nil).Want {
			r.warnOnce(u, ReasonHPANotPossible, d.Reason)
		} else {
			r.unwarn(nn, ReasonHPANotPossible)
		}
		return nil
	}

	name := HPAName(u.GetName(), r.view.GVK().GroupKind())
	legacy, err := r.legacyHPA(ctx, u, name)
	if err != nil {
		return err
	}
	existing := &autoscalingv2.HorizontalPodAutoscaler{}
	found := true
	if err := r.cache.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: name}, existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get HPA %s/%s: %w", u.GetNamespace(), name, err)
		}
		found = false
		// Right after our own apply the HPA informer may lag: confirm with
		// the API server before reporting a creation that already happened.
		if d.Want {
			if err := r.api.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: name}, existing); err == nil {
				found = true
			} else if !apierrors.IsNotFound(err) {
				return fmt.Errorf("get HPA %s/%s: %w", u.GetNamespace(), name, err)
			}
		}
	}
	// Another owner's HPA under our name is foreign (d.Want is false) and
	// never deleted.
	ours := found && metav1.IsControlledBy(existing, u) && !madeByAnotherOwner(existing, u, r.owner)

	if !d.Want {
		if ours {
			if err := r.deleteHPA(ctx, u, existing, d.Reason); err != nil {
				return err
			}
		}
		if legacy != nil {
			if err := r.deleteHPA(ctx, u, legacy, d.Reason); err != nil {
				return err
			}
		}
		// Warn only where the foreign autoscaler is what stops an HPA the
		// config asks for; without a range there is nothing to contend.
		if len(foreign) > 0 && scaling.DecideHPA(w, layout, r.defaultMetrics, nil).Want {
			r.warnOnce(u, v1alpha1.ReasonForeignAutoscaler,
				d.Reason+": scaleplane creates no HPA of its own and leaves it alone; remove it to let scaleplane manage one")
		} else {
			r.unwarn(nn, v1alpha1.ReasonForeignAutoscaler)
		}
		r.unwarn(nn, ReasonHPANameTaken)
		return nil
	}
	r.unwarn(nn, v1alpha1.ReasonForeignAutoscaler)
	if found && !ours {
		// An HPA of ours under the legacy name keeps scaling meanwhile.
		r.warnOnce(u, ReasonHPANameTaken, fmt.Sprintf(
			"HorizontalPodAutoscaler %s/%s exists and is not controlled by this %s: scaleplane will not edit it; delete or rename it", existing.Namespace, name, r.kind))
		return nil
	}
	r.unwarn(nn, ReasonHPANameTaken)

	desired, err := desiredHPA(r.view, r.owner, u, d)
	if err != nil {
		return err
	}
	if ours && hpaUpToDate(existing, desired) {
		return r.retireLegacyHPA(ctx, u, legacy, name)
	}
	apply, err := applyObject(desired)
	if err != nil {
		return err
	}
	if err := r.writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply HPA %s/%s: %w", u.GetNamespace(), name, err)
	}
	op := "created"
	if ours {
		op = "updated"
	}
	hpaApplies.WithLabelValues(r.kind, "apply").Inc()
	note := fmt.Sprintf("%s HorizontalPodAutoscaler %s: replicas %d..%d on %d metric(s), target %s %s", op, name, d.Min, d.Max, len(d.Metrics), desired.Spec.ScaleTargetRef.Kind, desired.Spec.ScaleTargetRef.Name)
	ctrl.LoggerFrom(ctx).Info("applied HPA", "hpa", name, "change", note)
	r.events.Eventf(u, corev1.EventTypeNormal, v1alpha1.ReasonHPAApplied, "%s", note)
	return r.retireLegacyHPA(ctx, u, legacy, name)
}

// legacyHPA is the HPA of u under LegacyHPAName, when it differs from name
// and scaleplane made it: controlled by u, labelled managed by scaleplane
// and, when it carries an owner label, labelled for this reconciler's
// owner. Anything else under that name is someone else's and never
// touched; nil when there is none of ours.
func (r *Reconciler) legacyHPA(ctx context.Context, u *unstructured.Unstructured, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	old := LegacyHPAName(u.GetName(), r.kind)
	if old == name {
		return nil, nil
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := r.cache.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: old}, hpa); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get HPA %s/%s: %w", u.GetNamespace(), old, err)
	}
	if !madeFor(hpa, u, r.owner) {
		return nil, nil
	}
	return hpa, nil
}

// madeFor reports whether scaleplane's controller of owner made hpa for u.
// An HPA without an owner label was made by a release that did not label
// them, which only scaleplane's one owner ran.
func madeFor(hpa *autoscalingv2.HorizontalPodAutoscaler, u *unstructured.Unstructured, owner string) bool {
	if !metav1.IsControlledBy(hpa, u) || hpa.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
		return false
	}
	o, labelled := hpa.Labels[v1alpha1.LabelOwner]
	return !labelled || o == owner
}

// madeByAnotherOwner reports whether another owner's scaleplane made hpa
// for u: controlled by u and labelled managed by scaleplane as ours are,
// with another owner's label. It scales u, an HPA of ours beside it would
// make kube-controller-manager stop both (AmbiguousSelector), and another
// owner's HPA is never written nor deleted: it is a foreign autoscaler
// (C5), under whichever name it has.
func madeByAnotherOwner(hpa *autoscalingv2.HorizontalPodAutoscaler, u *unstructured.Unstructured, owner string) bool {
	return metav1.IsControlledBy(hpa, u) && hpa.Labels[v1alpha1.LabelManagedBy] == v1alpha1.ManagedByValue && !madeFor(hpa, u, owner)
}

// retireLegacyHPA deletes our HPA under the legacy name once the one under
// name, with the same spec, is in place: the workload always has one
// HPA of ours, and two only between these two writes.
func (r *Reconciler) retireLegacyHPA(ctx context.Context, u *unstructured.Unstructured, legacy *autoscalingv2.HorizontalPodAutoscaler, name string) error {
	if legacy == nil {
		return nil
	}
	return r.deleteHPA(ctx, u, legacy, "renamed to "+name)
}

// deleteHPA deletes our HPA, with a UID precondition so that an HPA
// someone recreated under the same name in between is not deleted.
func (r *Reconciler) deleteHPA(ctx context.Context, u *unstructured.Unstructured, hpa *autoscalingv2.HorizontalPodAutoscaler, reason string) error {
	err := r.writer.Delete(ctx, hpa, client.Preconditions{UID: &hpa.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete HPA %s/%s: %w", hpa.Namespace, hpa.Name, err)
	}
	hpaApplies.WithLabelValues(r.kind, "delete").Inc()
	note := fmt.Sprintf("deleted HorizontalPodAutoscaler %s: %s", hpa.Name, reason)
	ctrl.LoggerFrom(ctx).Info("deleted HPA", "hpa", hpa.Name, "reason", reason)
	r.events.Eventf(u, corev1.EventTypeNormal, v1alpha1.ReasonHPADeleted, "%s", note)
	return nil
}

// HPAName is the built-in HPA's name for a workload of kind gk:
// "<name>-<kind in lower case>.<group>", e.g.
// demo-rackedcluster.samples.scaleplane.io, the name of its Scaling too.
// The kind and the group keep same-named workloads of two profiled kinds
// in one namespace apart, two kinds of one name in two API groups
// included. A name that would pass the 253-character limit keeps the start
// of the workload's name and a hash of group, kind and name (the suffix
// drops the group, which the hash holds, when it alone is long), so it
// stays unique and deterministic.
func HPAName(workload string, gk schema.GroupKind) string {
	suffix := "-" + strings.ToLower(gk.Kind)
	if gk.Group != "" {
		suffix += "." + gk.Group
	}
	name := workload + suffix
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(gk.Group + "/" + gk.Kind + "/" + workload))
	hash := hex.EncodeToString(sum[:])[:10]
	if len(suffix) > maxHPASuffix {
		suffix = "-" + strings.ToLower(gk.Kind)
	}
	keep := min(len(workload), validation.DNS1123SubdomainMaxLength-len(suffix)-len(hash)-1)
	return strings.TrimRight(workload[:keep], "-.") + "-" + hash + suffix
}

// maxHPASuffix is the longest "-<kind>.<group>" a long workload name's HPA
// keeps, so that enough of the workload's name is left to read.
const maxHPASuffix = 120

// LegacyHPAName is the name built-in HPAs had before the group was part of
// it: "<name>-<kind in lower case>", cut with a hash of the whole past 253
// characters. reconcileHPA moves an HPA of ours from it to HPAName.
func LegacyHPAName(workload, kind string) string {
	suffix := "-" + strings.ToLower(kind)
	name := workload + suffix
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:])[:10]
	keep := validation.DNS1123SubdomainMaxLength - len(suffix) - len(hash) - 1
	return strings.TrimRight(workload[:keep], "-.") + "-" + hash + suffix
}

// desiredHPA builds the built-in HPA for u from decision d (d.Want),
// labelled with the owner whose controller makes it.
func desiredHPA(v *profile.Compiled, owner string, u *unstructured.Unstructured, d scaling.HPADecision) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	if u.GetUID() == "" {
		return nil, fmt.Errorf("%s %s/%s has no uid yet", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	gvk := v.GVK()
	labels := map[string]string{
		v1alpha1.LabelManagedBy:    v1alpha1.ManagedByValue,
		v1alpha1.LabelWorkloadKind: gvk.Kind,
	}
	// Label values stop at 63 characters; the owner reference names the
	// workload in every case.
	if len(validation.IsValidLabelValue(u.GetName())) == 0 {
		labels[v1alpha1.LabelWorkloadName] = u.GetName()
	}
	if gvk.Group != "" && len(validation.IsValidLabelValue(gvk.Group)) == 0 {
		labels[v1alpha1.LabelWorkloadGroup] = gvk.Group
	}
	if owner != "" && len(validation.IsValidLabelValue(owner)) == 0 {
		labels[v1alpha1.LabelOwner] = owner
	}
	yes := true
	minReplicas := d.Min
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta: metav1.TypeMeta{APIVersion: autoscalingv2.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      HPAName(u.GetName(), gvk.GroupKind()),
			Namespace: u.GetNamespace(),
			Labels:    labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         gvk.GroupVersion().String(),
				Kind:               gvk.Kind,
				Name:               u.GetName(),
				UID:                u.GetUID(),
				Controller:         &yes,
				BlockOwnerDeletion: &yes,
			}},
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: v.HPATargetRef(u),
			MinReplicas:    &minReplicas,
			MaxReplicas:    d.Max,
			Metrics:        d.Metrics,
			Behavior:       d.Behavior,
		},
	}
	return hpa, nil
}

// applyObject turns a typed HPA into the apply configuration we send: only
// the fields we set, so that server-side apply makes us the owner of those
// and nothing else (no status, no zero-valued creationTimestamp).
func applyObject(hpa *autoscalingv2.HorizontalPodAutoscaler) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(hpa)
	if err != nil {
		return nil, fmt.Errorf("convert HPA %s: %w", hpa.Name, err)
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]interface{}); ok {
		delete(meta, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// hpaUpToDate reports whether existing already holds everything desired
// sets. It compares only the fields we set: the API server defaults others
// (behavior policies, selectPolicy), and comparing those would re-apply on
// every reconcile. A hand edit of a field we set makes it false, so the
// edit is reverted.
func hpaUpToDate(existing, desired *autoscalingv2.HorizontalPodAutoscaler) bool {
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	ref := desired.OwnerReferences[0]
	owner := metav1.GetControllerOfNoCopy(existing)
	if owner == nil || !reflect.DeepEqual(*owner, ref) {
		return false
	}
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&existing.Spec)
	if err != nil {
		return false
	}
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&desired.Spec)
	if err != nil {
		return false
	}
	return contains(have, want)
}

// contains reports whether have holds every value of want: maps may have
// more keys, lists must have the same length (the HPA's lists are atomic, so
// an extra item is a difference our apply would remove).
func contains(have, want interface{}) bool {
	switch w := want.(type) {
	case map[string]interface{}:
		h, ok := have.(map[string]interface{})
		if !ok {
			return false
		}
		for k, wv := range w {
			if !contains(h[k], wv) {
				return false
			}
		}
		return true
	case []interface{}:
		h, ok := have.([]interface{})
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}
