package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

// ReasonInvalidPause is the Warning reason for a paused-replicas
// annotation that is not a count.
const ReasonInvalidPause = "InvalidPauseAnnotation"

// Reconcile is one workload's tick: get it, decide whether it is ours and
// whether a tick is due, sample, decide, write.
func (k *kindLoop) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !k.shares.EnterOrHold(req.NamespacedName, k.a.workerShare()) {
		// The namespace holds its share of the workers: the others' ticks
		// go first, and this one as soon as one of its namespace's ends.
		k.deferred.Add(1)
		return reconcile.Result{RequeueAfter: workerShareRetry}, nil
	}
	defer k.leaveShare(req.Namespace)
	defer k.running.End(k.running.Begin(k.a.opts.Now()))
	e := k.a.env.Load()
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("kind", k.kind, "namespace", req.Namespace, "name", req.Name))
	// u is the cache's own object, not a copy (UnsafeDisableDeepCopy):
	// the loop only reads it, and writeScale sends a copy.
	u := k.newObject()
	if err := e.cache.Get(ctx, req.NamespacedName, u, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			k.forget(ctx, req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("get %s %s: %w", k.kind, req.NamespacedName, err)
	}
	if u.GetDeletionTimestamp() != nil {
		k.forget(ctx, req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if e.scalings != nil && !e.scalings.Known() {
		// A new leader restores History from the Scaling before deciding.
		return reconcile.Result{RequeueAfter: 250 * time.Millisecond}, nil
	}
	st := k.get(req.NamespacedName)
	st.pending.Store(false)
	if k.podLabelsOf != nil {
		labels := k.podLabelsOf(u)
		st.mu.Lock()
		st.podLabels = labels
		st.mu.Unlock()
	}
	k.syncScaling(ctx, e, st)
	res, err := k.reconcile(ctx, e, u, st)
	// A /scale write refused for a conflict: the count or the status
	// changed since the cache showed the workload, and the watch filters
	// status changes out, so nothing would bring it back before the next
	// interval, by which time the activity that woke it may be past its
	// idle timeout. Re-read from the API server and decide again at once;
	// the activity keeps the time it arrived.
	reader := e.api
	if reader == nil {
		reader = e.cache
	}
	for attempt := 1; errors.Is(err, errWriteConflict); attempt++ {
		fresh := k.newObject()
		if attempt > maxConflictRetries || reader.Get(ctx, req.NamespacedName, fresh) != nil {
			res, err = reconcile.Result{RequeueAfter: time.Second}, nil
			break
		}
		u = fresh
		res, err = k.reconcile(ctx, e, u, st)
	}
	k.offerScaling(e, u, st)
	return res, err
}

// errWriteConflict is what reconcile returns when its /scale write met a
// conflict; Reconcile re-reads and decides again, at most
// maxConflictRetries times.
var errWriteConflict = errors.New("the /scale write met a conflict")

const maxConflictRetries = 3

func (k *kindLoop) reconcile(ctx context.Context, e *env, u *unstructured.Unstructured, st *workload) (reconcile.Result, error) {
	now := k.a.opts.Now()
	w, errs := k.read(st, u)
	if len(errs) > 0 {
		// The fan-out controller reports the field errors as a Warning.
		st.publish(StateUnreadable, "fields unreadable as the profile says: "+errs.ToAggregate().Error(), 0, nil)
		return reconcile.Result{}, nil
	}
	if k.view.SlimFaas() {
		k.warn(e, u, st, ReasonSlimFaasSettingIgnored, slimFaasIgnoredNote(u.GetAnnotations()))
	}
	if problem := unadmittedProblems(k.view.Admission(), w, k.view.Layout(), k.a.opts.Sources); !k.view.Admission() {
		// No webhook judges a built-in kind's config: the rules admission
		// would apply are applied here, and a config that breaks them is
		// not acted on.
		k.warn(e, u, st, ReasonInvalidConfig, problem)
		if problem != "" {
			k.closeScalers(ctx, st)
			st.publish(StateUnreadable, problem, 0, nil)
			return reconcile.Result{}, nil
		}
	}
	if ok, why := manages(w, k.view.Layout(), k.defaultMetrics); !ok {
		k.closeScalers(ctx, st)
		k.deleteMetrics(st)
		// Who sets the count is what the Scaling says: a user's own HPA or
		// ScaledObject, not "set by hand" nor the built-in HPA that C5
		// keeps from being created beside it.
		if e.foreign != nil {
			foreign, err := e.foreign.Find(ctx, k.view, u)
			if err != nil {
				return reconcile.Result{}, err
			}
			if len(foreign) > 0 {
				st.publish(StateForeign, foreignScalesNote(foreign, w, k.view.Layout(), k.defaultMetrics), 0, nil)
				return reconcile.Result{}, nil
			}
		}
		st.publish(StateNotManaged, why, 0, nil)
		return reconcile.Result{}, nil
	}
	interval := pollingInterval(w.Config, k.a.opts.PollingInterval)

	p := readPause(pauseAnnotations(u))
	k.warn(e, u, st, ReasonInvalidPause, p.Problem)
	switch {
	case p.Problem != "":
		st.publish(StatePaused, p.Problem, interval, nil)
		return reconcile.Result{}, nil
	case p.Hold != nil:
		return k.hold(ctx, e, u, st, *w.Replicas, *p.Hold, interval)
	case p.Paused:
		st.publish(StatePaused, fmt.Sprintf("annotation %s is %q: remove it to resume autoscaling",
			v1alpha1.AnnotationPaused, u.GetAnnotations()[v1alpha1.AnnotationPaused]), interval, nil)
		return reconcile.Result{}, nil
	}

	if e.foreign != nil {
		foreign, err := e.foreign.Find(ctx, k.view, u)
		if err != nil {
			return reconcile.Result{}, err
		}
		note := ""
		if len(foreign) > 0 {
			note = fmt.Sprintf("trigger autoscaler standing down: %s also scales this workload; remove it, or remove the scale config's triggers and idle settings",
				strings.Join(foreign, ", "))
		}
		k.warn(e, u, st, v1alpha1.ReasonForeignAutoscaler, note)
		if note != "" {
			// ScaledObjects are not watched here: look again next interval.
			st.publish(StateForeign, note, interval, nil)
			return reconcile.Result{RequeueAfter: interval}, nil
		}
	}

	fp := k.fingerprint(st, w)
	activity := st.lastActivity()
	// A workload that went to zero since the last tick (our own scale to
	// zero, seen through the watch) is decided on at once: an activity
	// that came while the tick that scaled it down was running was judged
	// against the stale count, and waiting for the next interval would
	// delay its wake-up by up to that interval. At zero, Decide only wakes
	// or stays, so no stale sample compounds.
	wentToZero := w.Replicas != nil && *w.Replicas == 0 && st.lastCurrent > 0
	urgent := fp != st.configFP || activity.After(st.activitySeen) || st.currentState() != StateAutoscaling || wentToZero
	run, after := planTick(now, st.lastTick, interval, urgent)
	if !run {
		return reconcile.Result{RequeueAfter: after}, nil
	}
	st.configFP, st.activitySeen, st.lastTick = fp, activity, now

	d := k.decide(ctx, e, st, w, now, activity)
	st.lastCurrent = d.Current
	k.signalDependencies(u.GetNamespace(), d)
	k.warn(e, u, st, v1alpha1.ReasonInvalidTrigger, triggerProblems(d))
	k.warn(e, u, st, v1alpha1.ReasonTriggerThrottled, st.throttled)
	k.noteFallback(e, u, st, d)
	rec := Record{Decision: d, LastActivity: activity}
	res := reconcile.Result{RequeueAfter: interval}
	if d.Desired != d.Current {
		if err := k.writeScale(ctx, e, u, d.Desired); err != nil {
			rec.Error = err.Error()
			ctrl.LoggerFrom(ctx).Info("scale write failed", "desired", d.Desired, "error", err.Error())
			if apierrors.IsConflict(err) {
				// R changed since the cache showed it: Reconcile re-reads
				// and decides again on the new count at once.
				st.lastTick = time.Time{}
				k.observe(st, d)
				st.publish(StateAutoscaling, "", interval, &rec)
				return res, errWriteConflict
			} else {
				k.warn(e, u, st, v1alpha1.ReasonWriteFailed, fmt.Sprintf("write %d replicas through /scale: %v", d.Desired, err))
			}
		} else {
			rec.Written = true
			// The HPA stores a scale event only after a successful update.
			st.history.RecordScale(w.Config, d)
			k.warn(e, u, st, v1alpha1.ReasonWriteFailed, "")
			if e.events != nil {
				e.events.Eventf(u, corev1.EventTypeNormal, v1alpha1.ReasonScaled, "%s", eventNote(d))
			}
		}
	}
	k.observe(st, d)
	st.publish(StateAutoscaling, "", interval, &rec)
	return res, nil
}

// decide samples the workload's triggers and runs scaling.Decide with its
// History. It is the CPU part of a tick, without any write.
func (k *kindLoop) decide(ctx context.Context, e *env, st *workload, w scaling.Workload, now, activity time.Time) scaling.Decision {
	k.ensureScalers(ctx, st, w.Config)
	in := scaling.DecideInput{
		Now:                    now,
		Current:                *w.Replicas,
		Config:                 w.Config,
		Triggers:               k.sample(ctx, st, now),
		LastActivity:           activity,
		Tolerance:              k.a.opts.Tolerance,
		DownscaleStabilization: k.a.opts.DownscaleStabilization,
	}
	if len(w.Config.DependsOn) > 0 && e != nil {
		in.Dependencies = k.dependencies(ctx, e, st.nn, w.Config.DependsOn)
	}
	// Never a count the schema of the replicas field refuses.
	return scaling.FitCounts(scaling.Decide(in, st.history), k.view.Layout())
}

// dependencies is the snapshot of dependsOn's workloads (same kind, same
// namespace): R, and status.replicas as the ready count (R itself for
// kinds whose profile names no status.replicas).
func (k *kindLoop) dependencies(ctx context.Context, e *env, self types.NamespacedName, names []string) map[string]scaling.DependencyState {
	ns := self.Namespace
	out := make(map[string]scaling.DependencyState, len(names))
	for _, name := range names {
		u := k.newObject()
		if err := e.cache.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u, client.UnsafeDisableDeepCopy); err != nil {
			continue // missing: Decide waits for it
		}
		w, _ := k.view.Read(u)
		var s scaling.DependencyState
		if w.Replicas != nil {
			s.Replicas = *w.Replicas
		}
		switch {
		case w.StatusReplicas != nil:
			s.ReadyReplicas = *w.StatusReplicas
		case len(k.view.StatusReplicasPath()) == 0:
			s.ReadyReplicas = s.Replicas
		}
		// Only a dependency that is not ready could be waited for: the
		// walk is spent on those alone.
		if w.Config != nil && s.ReadyReplicas <= 0 {
			s.Cycle = k.leadsBack(ctx, e, self, w.Config.DependsOn)
		}
		out[name] = s
	}
	return out
}

// maxDependencyWalk bounds the workloads leadsBack reads on one tick.
const maxDependencyWalk = 64

// leadsBack reports whether following dependsOn from deps, through the
// cache, reaches self: a cycle, whose members would each wait for the
// next to be ready forever. The walk reads at most maxDependencyWalk
// workloads; past that it reports no cycle.
func (k *kindLoop) leadsBack(ctx context.Context, e *env, self types.NamespacedName, deps []string) bool {
	seen := map[string]bool{}
	queue := slices.Clone(deps)
	for len(queue) > 0 && len(seen) < maxDependencyWalk {
		name := queue[0]
		queue = queue[1:]
		if name == self.Name {
			return true
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		u := k.newObject()
		if err := e.cache.Get(ctx, types.NamespacedName{Namespace: self.Namespace, Name: name}, u, client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		if w, _ := k.view.Read(u); w.Config != nil {
			queue = append(queue, w.Config.DependsOn...)
		}
	}
	return false
}

// signalDependencies records activity for the workloads d depends on, and
// wakes them at once when this workload is waking.
func (k *kindLoop) signalDependencies(ns string, d scaling.Decision) {
	for _, name := range d.SignalDependencies {
		dep, created := k.getOrCreate(types.NamespacedName{Namespace: ns, Name: name})
		dep.recordActivity(d.Time)
		// A memory created here is for a name no reconcile has seen, maybe
		// one that does not exist: its tick keeps it or forgets it.
		if created || d.Action == scaling.ActionWakeUp || d.Action == scaling.ActionWait {
			k.enqueue(dep)
		}
	}
}

// hold applies scaleplane.io/paused-replicas: R goes to the count once,
// then nothing happens until the annotation changes.
func (k *kindLoop) hold(ctx context.Context, e *env, u *unstructured.Unstructured, st *workload, cur, hold int32, interval time.Duration) (reconcile.Result, error) {
	msg := fmt.Sprintf("annotation %s holds the count at %d: remove it to resume autoscaling", v1alpha1.AnnotationPausedReplicas, hold)
	if cur == hold {
		k.warn(e, u, st, v1alpha1.ReasonWriteFailed, "")
		st.publish(StateHeld, msg, interval, nil)
		return reconcile.Result{}, nil
	}
	now := k.a.opts.Now()
	rec := Record{Decision: scaling.Decision{Time: now, Current: cur, Desired: hold, Action: actionFor(cur, hold),
		Reason: fmt.Sprintf("Hold at %d: annotation %s", hold, v1alpha1.AnnotationPausedReplicas), Recommended: -1, Stabilized: -1}}
	if err := k.writeScale(ctx, e, u, hold); err != nil {
		rec.Error = err.Error()
		st.publish(StateHeld, msg, interval, &rec)
		if apierrors.IsConflict(err) {
			// Someone changed the workload since the cache showed it: the
			// watch brings the new version; hold again then.
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		k.warn(e, u, st, v1alpha1.ReasonWriteFailed, fmt.Sprintf("write %d replicas through /scale: %v", hold, err))
		return reconcile.Result{RequeueAfter: interval}, nil
	}
	rec.Written = true
	k.warn(e, u, st, v1alpha1.ReasonWriteFailed, "")
	if e.events != nil {
		e.events.Eventf(u, corev1.EventTypeNormal, v1alpha1.ReasonScaled,
			"Held at %d (from %d): annotation %s", hold, cur, v1alpha1.AnnotationPausedReplicas)
	}
	st.publish(StateHeld, msg, interval, &rec)
	return reconcile.Result{}, nil
}

func actionFor(cur, desired int32) scaling.ScaleAction {
	switch {
	case desired > cur:
		return scaling.ActionScaleUp
	case desired < cur:
		return scaling.ActionScaleDown
	}
	return scaling.ActionNone
}

// writeScale sets R through /scale as an autoscaling/v1 Scale, under the
// autoscaler's field manager, with u's resourceVersion: a count someone
// else wrote since the cache showed u is never overwritten blindly.
func (k *kindLoop) writeScale(ctx context.Context, e *env, u *unstructured.Unstructured, replicas int32) error {
	scale := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v1",
		"kind":       "Scale",
		"metadata": map[string]any{
			"name":            u.GetName(),
			"namespace":       u.GetNamespace(),
			"resourceVersion": u.GetResourceVersion(),
		},
		"spec": map[string]any{"replicas": int64(replicas)},
	}}
	// u may be the cache's own object: the client gets a copy.
	err := e.writer.SubResource("scale").Update(ctx, u.DeepCopy(), client.WithSubResourceBody(scale), client.FieldOwner(v1alpha1.AutoscalerFieldManager))
	observeWrite(k.view.GVK().GroupKind(), err)
	if err != nil {
		return fmt.Errorf("update %s %s/%s/scale: %w", k.resource, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// warn emits a Warning when note differs from the last one for reason, and
// forgets the reason when note is empty (see warnings.next).
func (k *kindLoop) warn(e *env, u *unstructured.Unstructured, st *workload, reason, note string) {
	if st.warned.next(reason, note) && e != nil && e.events != nil {
		e.events.Eventf(u, corev1.EventTypeWarning, reason, "%s", note)
	}
}

// noteFallback emits a Warning when a trigger of the workload enters
// fallback (V12) and a Normal event when none is in fallback any more.
func (k *kindLoop) noteFallback(e *env, u *unstructured.Unstructured, st *workload, d scaling.Decision) {
	note := ""
	if f := d.Fallback; f != nil {
		note = fmt.Sprintf("trigger %s failed more than %d times in a row: it stands for the fallback count %d (behavior %s) until it succeeds",
			strings.Join(f.Triggers, ", "), f.FailureThreshold, f.Replicas, f.Behavior)
	}
	was := st.fallbackNote
	st.fallbackNote = note
	if note == was || e == nil || e.events == nil {
		return
	}
	if note != "" {
		e.events.Eventf(u, corev1.EventTypeWarning, v1alpha1.ReasonFallbackActive, "%s", note)
		return
	}
	e.events.Eventf(u, corev1.EventTypeNormal, v1alpha1.ReasonFallbackEnded, "every trigger succeeded again: fallback ended (%s)", eventNote(d))
}
