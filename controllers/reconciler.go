package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/internal/objects"
	"github.com/scaleplane/scaleplane/profile"
)

// warnReasons are the Warnings remembered by warnOnce.
var warnReasons = []string{v1alpha1.ReasonForeignAutoscaler, ReasonHPANameTaken, ReasonHPANotPossible, ReasonInvalidWorkload, ReasonInvalidSelector, v1alpha1.ReasonWriteFailed}

// Reconciler reconciles the workloads of one profiled kind.
type Reconciler struct {
	view *profile.Compiled
	kind string
	// defaultMetrics are the profile's metrics for configs without any.
	defaultMetrics []autoscalingv2.MetricSpec

	// cache serves reads (workloads, HPAs, ScaledObjects) from the
	// manager's informers; api reads past it after a write conflict, when
	// the cache is known to be stale.
	cache  client.Reader
	api    client.Reader
	writer client.Client
	// events are core/v1 Events (see EventRecorder).
	events record.EventRecorder
	keda   *kedaWatch
	// hpaIndex is the kind's field index of HPAs by scale target.
	hpaIndex string
	// owner labels the HPAs this reconciler makes (LabelOwner), so that
	// `scaleplane cleanup` of one owner leaves another owner's alone.
	owner string

	conflictRetries int

	// refused holds back writes the API server refused (C6).
	refused refusals

	// warned remembers, per workload, the last Warning emitted without a
	// write (foreign autoscaler, HPA name taken, unreadable fields), so a
	// condition that persists is reported once and not on every resync.
	warned sync.Map
}

func newReconciler(mgr manager.Manager, v *profile.Compiled, keda *kedaWatch, opts Options) *Reconciler {
	return &Reconciler{
		view:            v,
		kind:            v.GVK().Kind,
		defaultMetrics:  v.Spec().DefaultMetrics,
		cache:           objects.Reader(mgr.GetCache(), mgr.GetScheme()),
		api:             mgr.GetAPIReader(),
		writer:          mgr.GetClient(),
		events:          EventRecorder(mgr),
		keda:            keda,
		conflictRetries: opts.ConflictRetries,
		owner:           opts.Owner,
	}
}

// Reconcile applies the three policies in order. Fan-out goes first so that
// status and the HPA see the groups as they will be.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := time.Now()
	defer func() {
		reconcileDuration.WithLabelValues(r.kind).Observe(time.Since(start).Seconds())
		if err != nil {
			reconcileErrors.WithLabelValues(r.kind).Inc()
		}
	}()
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("kind", r.kind, "namespace", req.Namespace, "name", req.Name))

	u := r.newObject()
	if err := r.cache.Get(ctx, req.NamespacedName, u); err != nil {
		if apierrors.IsNotFound(err) {
			r.unwarn(req.NamespacedName, warnReasons...)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get %s %s: %w", r.kind, req.NamespacedName, err)
	}
	if u.GetDeletionTimestamp() != nil {
		// Our HPA goes with it through its owner reference.
		return ctrl.Result{}, nil
	}
	// A held fan-out (C6) does not stop status and HPA: they do not
	// depend on the write that was refused.
	var res ctrl.Result
	held := false
	if err := r.fanOut(ctx, u); err != nil {
		h, ok := asHeld(err)
		if !ok {
			return ctrl.Result{}, r.failed(u, err)
		}
		held, res.RequeueAfter = true, h.after
	}
	if err := r.updateStatus(ctx, u); err != nil {
		return ctrl.Result{}, r.failed(u, err)
	}
	if err := r.reconcileHPA(ctx, u); err != nil {
		return ctrl.Result{}, r.failed(u, err)
	}
	if held {
		return res, nil
	}
	r.unwarn(req.NamespacedName, v1alpha1.ReasonWriteFailed)
	return ctrl.Result{}, nil
}

// failed reports a write that failed (other than a conflict, which the
// work queue retries quietly) as a Warning on the workload, so that a
// forbidden or invalid write is visible with kubectl describe, and returns
// err for the work queue to retry with backoff.
func (r *Reconciler) failed(u *unstructured.Unstructured, err error) error {
	if !apierrors.IsConflict(err) {
		r.warnOnce(u, v1alpha1.ReasonWriteFailed, err.Error())
	}
	return err
}

func (r *Reconciler) newObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.view.GVK())
	return u
}

// warnKey names one kind of Warning about one workload.
type warnKey struct {
	workload types.NamespacedName
	reason   string
}

// warnOnce emits a Warning about u unless the same note was the last one
// emitted for this reason: a condition that persists (a foreign autoscaler,
// a taken HPA name) is reported once, not on every resync.
func (r *Reconciler) warnOnce(u *unstructured.Unstructured, reason, note string) {
	key := warnKey{types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}, reason}
	if last, ok := r.warned.Load(key); ok && last.(string) == note {
		return
	}
	r.warned.Store(key, note)
	r.events.Eventf(u, corev1.EventTypeWarning, reason, "%s", note)
}

// unwarn forgets a Warning, so the condition is reported again if it comes
// back.
func (r *Reconciler) unwarn(nn types.NamespacedName, reasons ...string) {
	for _, reason := range reasons {
		r.warned.Delete(warnKey{nn, reason})
	}
}

// readable reports whether u's fields read cleanly. Fields of the wrong type stop every
// policy for this object: a decision on half-read values could shrink
// racks or delete an HPA the user still wants.
func (r *Reconciler) readable(ctx context.Context, u *unstructured.Unstructured, errs field.ErrorList) bool {
	if len(errs) == 0 {
		r.unwarn(types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}, ReasonInvalidWorkload)
		return true
	}
	ctrl.LoggerFrom(ctx).Info("workload fields unreadable; skipping", "errors", errs.ToAggregate().Error())
	r.warnOnce(u, ReasonInvalidWorkload, "fields unreadable as the "+r.kind+" profile says: "+errs.ToAggregate().Error())
	return false
}
