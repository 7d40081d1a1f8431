package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// fanOut is C1: when R is set, every group gets R members and a pinned
// config follows R, in one merge patch that carries the resourceVersion it
// was computed from. A conflict means someone (kubectl scale, an HPA, the
// workload's operator) wrote in between: the decision is made again from a
// fresh read, never forced over their write, so no update is lost. On
// success u holds the written object.
func (r *Reconciler) fanOut(ctx context.Context, u *unstructured.Unstructured) error {
	var before, after scaling.Workload
	attempt := 0
	backoff := wait.Backoff{Steps: r.conflictRetries, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 0.2}
	err := retry.RetryOnConflict(backoff, func() error {
		if attempt++; attempt > 1 {
			if err := r.api.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
				return err
			}
		}
		w, errs := r.view.Read(u)
		if !r.readable(ctx, u, errs) {
			return nil
		}
		out, changed, err := fanOutObject(r.view, u, w)
		if err != nil || !changed {
			return err
		}
		patch := client.MergeFromWithOptions(u.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if err := r.writer.Patch(ctx, out, patch, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
			if apierrors.IsConflict(err) {
				fanoutConflicts.WithLabelValues(r.kind).Inc()
			}
			return err
		}
		out.DeepCopyInto(u)
		before = w
		after, _ = scaling.FanOut(w)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fan out %s %s/%s: %w", r.kind, u.GetNamespace(), u.GetName(), err)
	}
	if after.Replicas == nil {
		return nil
	}
	fanoutWrites.WithLabelValues(r.kind).Inc()
	note := fanOutNote(r.view.Layout(), before, after)
	ctrl.LoggerFrom(ctx).Info("fanned out replicas", "change", note)
	r.events.Eventf(u, corev1.EventTypeNormal, fanOutReason(after), "%s", note)
	return nil
}

// fanOutReason is the event reason of a fan-out that wrote after:
// ScaledGroups when it set member groups' sizes, Scaled when it only
// re-pinned the scale config (every write of a kind without member groups,
// such as a Function), so that no event speaks of groups a kind lacks.
func fanOutReason(after scaling.Workload) string {
	if len(after.Groups) > 0 {
		return v1alpha1.ReasonScaledGroups
	}
	return v1alpha1.ReasonScaled
}

// fanOutObject returns u with C1 applied, and whether anything changed. u
// is not modified.
func fanOutObject(v *profile.Compiled, u *unstructured.Unstructured, w scaling.Workload) (*unstructured.Unstructured, bool, error) {
	want, changed := scaling.FanOut(w)
	if !changed {
		return u, false, nil
	}
	out := u.DeepCopy()
	if err := v.WriteSpec(out, want); err != nil {
		return nil, false, fmt.Errorf("write fan-out: %w", err)
	}
	return out, true, nil
}

// fanOutNote says what a fan-out changed, old and new sizes, for the
// ScaledGroups event and the log:
//
//	spec.racks[*].members a=3, b=2 -> 5 (spec.replicas 5); spec.scaleConfig pinned 3 -> 5
func fanOutNote(l scaling.Layout, before, after scaling.Workload) string {
	var parts []string
	if len(after.Groups) > 0 {
		var old []string
		for _, g := range before.Groups {
			m := "unset"
			if g.Members != nil {
				m = fmt.Sprint(*g.Members)
			}
			old = append(old, g.Name+"="+m)
		}
		groups := "groups"
		if l.GroupsPath != nil {
			groups = l.GroupsPath.String() + "[*]." + l.GroupMembersField
		}
		parts = append(parts, fmt.Sprintf("%s %s -> %d (%s %d)", groups, strings.Join(old, ", "), *after.Replicas, pathString(l), *after.Replicas))
	}
	if b, a := before.Config, after.Config; b.Pinned() && a.Pinned() && *b.MinReplicas != *a.MinReplicas {
		cfg := "scale config"
		if l.ConfigPath != nil {
			cfg = l.ConfigPath.String()
		}
		parts = append(parts, fmt.Sprintf("%s pinned %d -> %d", cfg, *b.MinReplicas, *a.MinReplicas))
	}
	return strings.Join(parts, "; ")
}

func pathString(l scaling.Layout) string {
	if l.ReplicasPath == nil {
		return "replicas"
	}
	return l.ReplicasPath.String()
}
