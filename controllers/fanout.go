package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
		nn := client.ObjectKeyFromObject(u)
		out, changed, err := fanOutObject(r.view, u, w)
		if err != nil || !changed {
			r.refused.forget(nn)
			return err
		}
		// C6: a write the schema refuses is never sent (S2 keeps /scale
		// from asking for one; an object stored before the schema changed
		// still can).
		want, _ := scaling.FanOut(w)
		if errs := scaling.SchemaRefusals(want, r.view.Layout()); len(errs) > 0 {
			msgs := make([]string, len(errs))
			for i, e := range errs {
				msgs[i] = e.Error()
			}
			return &heldError{message: fmt.Sprintf("replicas not fanned out: %s; scale to a count the schema accepts", strings.Join(msgs, "; "))}
		}
		// The same refused write to the same spec waits out its backoff.
		data, err := client.MergeFrom(u).Data(out)
		if err != nil {
			return fmt.Errorf("compute fan-out patch: %w", err)
		}
		write := fmt.Sprintf("%d %s", u.GetGeneration(), data)
		if left, ok := r.refused.held(nn, write); ok {
			return &heldError{after: left}
		}
		patch := client.MergeFromWithOptions(u.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if err := r.writer.Patch(ctx, out, patch, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
			if apierrors.IsConflict(err) {
				fanoutConflicts.WithLabelValues(r.kind).Inc()
			}
			if isRefusal(err) {
				d := r.refused.refused(nn, write)
				return &heldError{after: d, message: "the API server refused the fan-out: " + apiMessage(err)}
			}
			return err
		}
		r.refused.forget(nn)
		out.DeepCopyInto(u)
		before = w
		after, _ = scaling.FanOut(w)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if h, ok := asHeld(err); ok {
		if h.message != "" {
			ctrl.LoggerFrom(ctx).Info("fan-out held", "reason", h.message, "retryAfter", h.after)
			r.warnOnce(u, v1alpha1.ReasonWriteFailed, h.message)
		}
		return h
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
	if equality.Semantic.DeepEqual(out.Object, u.Object) {
		// A config the profile never writes (SlimFaas annotations) stays
		// pinned where its annotations say: nothing to write or report.
		return u, false, nil
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

// apiMessage is the API server's own message in err.
func apiMessage(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Message != "" {
		return s.Status().Message
	}
	return err.Error()
}

func pathString(l scaling.Layout) string {
	if l.ReplicasPath == nil {
		return "replicas"
	}
	return l.ReplicasPath.String()
}
