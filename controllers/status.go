package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// updateStatus is C2 and C3: status.replicas when every group agrees, and
// the /scale selector, server-side applied under v1alpha1.FieldManager to the
// status subresource. The applied object names only those two fields, so no
// other status field (the workload operator's) is touched.
func (r *Reconciler) updateStatus(ctx context.Context, u *unstructured.Unstructured) error {
	w, errs := r.view.Read(u)
	if !r.readable(ctx, u, errs) {
		return nil
	}
	plan, err := planStatus(r.view, u, w)
	if err != nil {
		// The selector keeps its old value (C2 still applies): say why on
		// the workload, since an HPA reading /scale counts pods by it.
		// Admission refuses what causes this (V11); an object stored
		// before that, or a profile changed since, still gets here.
		ctrl.LoggerFrom(ctx).Info("no /scale selector", "reason", err.Error())
		r.warnOnce(u, ReasonInvalidSelector, fmt.Sprintf("no /scale selector for %s %s/%s: %v; rename the group, or fix the profile's pods labels", r.kind, u.GetNamespace(), u.GetName(), err))
	} else {
		r.unwarn(types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}, ReasonInvalidSelector)
	}
	if !plan.changed {
		return nil
	}
	err = r.writer.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(plan.apply), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("apply status of %s %s/%s: %w", r.kind, u.GetNamespace(), u.GetName(), err)
	}
	statusUpdates.WithLabelValues(r.kind).Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("updated status", "change", plan.note)
	r.events.Eventf(u, corev1.EventTypeNormal, v1alpha1.ReasonStatusReplicas, "%s", plan.note)
	return nil
}

// statusPlan is the status apply C2 and C3 call for.
type statusPlan struct {
	// apply is the apply configuration: apiVersion, kind, name, namespace
	// and only the status fields we own.
	apply *unstructured.Unstructured
	// changed is false when the object already holds those values.
	changed bool
	// note says what changed, for the event.
	note string
}

// planStatus decides the status apply for u. Every field we own is in the
// apply even when unchanged: server-side apply removes a field its manager
// owned and no longer sends. When the groups disagree, status.replicas is
// sent with its current value (or left out when absent), which keeps it
// unchanged as C2 requires. A selector error leaves the selector out and is
// returned beside a still usable plan.
func planStatus(v *profile.Compiled, u *unstructured.Unstructured, w scaling.Workload) (statusPlan, error) {
	p := statusPlan{apply: &unstructured.Unstructured{}}
	p.apply.SetAPIVersion(u.GetAPIVersion())
	p.apply.SetKind(u.GetKind())
	p.apply.SetName(u.GetName())
	p.apply.SetNamespace(u.GetNamespace())

	var notes []string
	if path := v.StatusReplicasPath(); path != nil {
		count, changed := scaling.StatusReplicas(w)
		switch {
		case changed:
			_ = unstructured.SetNestedField(p.apply.Object, int64(*count), path...)
			p.changed = true
			old := "unset"
			if w.StatusReplicas != nil {
				old = fmt.Sprint(*w.StatusReplicas)
			}
			notes = append(notes, fmt.Sprintf("%s %s -> %d (every group reports %d ready)", dotted(path), old, *count, *count))
		case w.StatusReplicas != nil:
			_ = unstructured.SetNestedField(p.apply.Object, int64(*w.StatusReplicas), path...)
		}
	}
	var selErr error
	if path := v.SelectorPath(); path != nil {
		sel, err := v.PodSelector(u)
		cur, found, _ := unstructured.NestedString(u.Object, path...)
		switch {
		case err != nil:
			selErr = err
			if found {
				_ = unstructured.SetNestedField(p.apply.Object, cur, path...)
			}
		default:
			_ = unstructured.SetNestedField(p.apply.Object, sel, path...)
			if !found || cur != sel {
				p.changed = true
				notes = append(notes, fmt.Sprintf("%s %q", dotted(path), sel))
			}
		}
	}
	p.note = strings.Join(notes, "; ")
	return p, selErr
}

func dotted(path []string) string { return strings.Join(path, ".") }
