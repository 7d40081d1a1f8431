package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// updateStatus is C2 and C3 for a handle: status.replicas when every group
// of the target reports the same ready count, and a selector of one
// group's pods, server-side applied to the handle's status under
// v1alpha1.FieldManager. The target's status is never written.
func (r *handleReconciler) updateStatus(ctx context.Context, h *v1alpha1.ScaleHandle, view *profile.Compiled, target *unstructured.Unstructured) error {
	tw, errs := view.Read(target)
	if len(errs) > 0 {
		// fanOut has said why.
		return nil
	}
	plan, selErr := planHandleStatus(h, view, target, tw)
	if selErr != nil {
		r.warnOnce(h, ReasonInvalidSelector, fmt.Sprintf("no /scale selector for ScaleHandle %s/%s: %v; rename the group, or fix the handle's pods labels", h.Namespace, h.Name, selErr))
	}
	if !plan.changed {
		return nil
	}
	err := r.writer.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(plan.apply), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("apply status of ScaleHandle %s/%s: %w", h.Namespace, h.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("updated status", "change", plan.note)
	r.events.Eventf(h, corev1.EventTypeNormal, v1alpha1.ReasonStatusReplicas, "%s", plan.note)
	return nil
}

// planHandleStatus decides the handle's status apply from its target. As
// planStatus does for a profiled kind, it sends every field it owns, the
// current status.replicas when the groups disagree (C2 leaves it
// unchanged), and leaves the selector out when it cannot be built (the
// error says why) or the handle names no pod labels.
func planHandleStatus(h *v1alpha1.ScaleHandle, view *profile.Compiled, target *unstructured.Unstructured, tw scaling.Workload) (statusPlan, error) {
	p := statusPlan{apply: &unstructured.Unstructured{}}
	p.apply.SetAPIVersion(v1alpha1.GroupVersion.String())
	p.apply.SetKind(v1alpha1.ScaleHandleKind)
	p.apply.SetName(h.Name)
	p.apply.SetNamespace(h.Namespace)

	var notes []string
	count, changed := scaling.StatusReplicas(handleWorkload(h, tw))
	switch {
	case changed:
		_ = unstructured.SetNestedField(p.apply.Object, int64(*count), "status", "replicas")
		p.changed = true
		old := "unset"
		if h.Status.Replicas != nil {
			old = fmt.Sprint(*h.Status.Replicas)
		}
		notes = append(notes, fmt.Sprintf("status.replicas %s -> %d (every member group of %s %s reports %d ready)", old, *count, target.GetKind(), target.GetName(), *count))
	case h.Status.Replicas != nil:
		_ = unstructured.SetNestedField(p.apply.Object, int64(*h.Status.Replicas), "status", "replicas")
	}
	var selErr error
	if len(h.Spec.Pods.Labels) > 0 {
		sel, err := view.PodSelector(target)
		switch {
		case err != nil:
			selErr = err
			if h.Status.Selector != "" {
				_ = unstructured.SetNestedField(p.apply.Object, h.Status.Selector, "status", "selector")
			}
		default:
			_ = unstructured.SetNestedField(p.apply.Object, sel, "status", "selector")
			if sel != h.Status.Selector {
				p.changed = true
				notes = append(notes, fmt.Sprintf("status.selector %q", sel))
			}
		}
	}
	p.note = strings.Join(notes, "; ")
	return p, selErr
}
