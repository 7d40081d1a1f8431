package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/internal/objects"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// scaleHandleGVK is the kind whose profile brings the handle controller
// with it (SetupKind).
var scaleHandleGVK = v1alpha1.GroupVersion.WithKind(v1alpha1.ScaleHandleKind)

// handleTargetIndex indexes ScaleHandles by the TargetKey of their
// targetRef, so an event on a target finds its handle without a scan.
const handleTargetIndex = "scaleplane.io/scalehandle-target"

// handleReconciler carries a ScaleHandle's R to its target's member groups
// (C1) and the target's readiness back to the handle's status (C2, C3).
// The handle's own C, pin, HPA and autoscaler are those of any profiled
// kind: the kind's ordinary Reconciler runs beside this one.
type handleReconciler struct {
	cache  client.Reader
	api    client.Reader
	writer client.Client
	events record.EventRecorder
	mgr    manager.Manager

	conflictRetries int
	refused         refusals

	// ctrl and watched add one watch per target kind, the first time a
	// handle names it.
	ctrl    controller.Controller
	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
	warned  sync.Map
}

// newHandleReconciler builds the handle reconciler and registers its index
// of handles by target (once per manager: a kind activated again reuses
// it). SetupKind and NewKindRuntime run it beside the ScaleHandle kind's
// ordinary Reconciler, in one controller (handleKind), so a handle is
// activated the way every profiled kind is, at start or at run time.
func newHandleReconciler(mgr manager.Manager, opts Options) (*handleReconciler, error) {
	if !mgr.GetScheme().Recognizes(scaleHandleGVK) {
		return nil, errors.New("set up ScaleHandles: the manager's scheme does not know them; add api/v1alpha1.AddToScheme to it")
	}
	if _, err := indexOnce(mgr, &v1alpha1.ScaleHandle{}, handleTargetIndex, indexHandleTarget); err != nil {
		return nil, fmt.Errorf("index ScaleHandles by target: %w", err)
	}
	return &handleReconciler{
		cache:           objects.Reader(mgr.GetCache(), mgr.GetScheme()),
		api:             mgr.GetAPIReader(),
		writer:          mgr.GetClient(),
		events:          EventRecorder(mgr),
		mgr:             mgr,
		conflictRetries: opts.ConflictRetries,
		watched:         map[schema.GroupVersionKind]bool{},
	}, nil
}

// handleKind reconciles a ScaleHandle with both reconcilers: the kind's
// own (its pin, HPA and foreign autoscalers) and the handle's (its target).
// Both are keyed by the handle, so one controller and one work queue serve
// them.
type handleKind struct {
	kind   *Reconciler
	handle *handleReconciler
}

func (h handleKind) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := h.kind.Reconcile(ctx, req)
	hres, herr := h.handle.Reconcile(ctx, req)
	if err == nil {
		err = herr
	}
	if res.RequeueAfter == 0 || (hres.RequeueAfter > 0 && hres.RequeueAfter < res.RequeueAfter) {
		res.RequeueAfter = hres.RequeueAfter
	}
	return res, err
}

// reconcilerFor is what the controller of v's kind runs: r, joined by the
// handle reconciler for the ScaleHandle kind (attach gives it the built
// controller, for its watches of target kinds); attach is a no-op for
// every other kind.
func reconcilerFor(mgr manager.Manager, v *profile.Compiled, r *Reconciler, opts Options) (reconcile.Reconciler, func(controller.Controller, cache.Cache) error, error) {
	if v.GVK() != scaleHandleGVK {
		return r, func(controller.Controller, cache.Cache) error { return nil }, nil
	}
	hr, err := newHandleReconciler(mgr, opts)
	if err != nil {
		return nil, nil, err
	}
	// ca is the activation's cache, so that the watch goes with it.
	attach := func(c controller.Controller, ca cache.Cache) error {
		hr.ctrl = c
		src := source.Kind(ca, client.Object(&v1alpha1.ScaleHandle{}), handler.EnqueueRequestsFromMapFunc(hr.mapSiblings))
		if err := c.Watch(src); err != nil {
			return fmt.Errorf("watch the ScaleHandles of one target: %w", err)
		}
		return nil
	}
	return handleKind{kind: r, handle: hr}, attach, nil
}

func indexHandleTarget(o client.Object) []string {
	h, ok := o.(*v1alpha1.ScaleHandle)
	if !ok {
		return nil
	}
	ref := h.Spec.TargetRef
	if k := TargetKey(ref.APIVersion, ref.Kind, ref.Name); k != "" {
		return []string{k}
	}
	return nil
}

// handleWarnings are the Warnings a handle's reconcile remembers
// (warnOnce), forgotten when the handle goes.
var handleWarnings = []string{ReasonInvalidWorkload, ReasonTargetNotReadable, ReasonTargetNotFound, ReasonHandleConflict, ReasonInvalidSelector, v1alpha1.ReasonWriteFailed}

// Reconcile reads the handle and its target, fans R out, and writes the
// handle's status.
func (r *handleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	h := &v1alpha1.ScaleHandle{}
	if err := r.cache.Get(ctx, req.NamespacedName, h); err != nil {
		if apierrors.IsNotFound(err) {
			for _, reason := range handleWarnings {
				r.warned.Delete(warnKey{req.NamespacedName, reason})
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if h.DeletionTimestamp != nil {
		// Nothing to undo: the groups keep the sizes they have and are
		// the target's own again.
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("scalehandle", req.NamespacedName, "target", h.Spec.TargetRef.Kind+"/"+h.Spec.TargetRef.Name))
	view, target, res, err := r.target(ctx, h)
	if view == nil || err != nil {
		return res, err
	}
	if err := r.fanOut(ctx, h, view, target); err != nil {
		held, ok := asHeld(err)
		if !ok {
			return ctrl.Result{}, err
		}
		res.RequeueAfter = held.after
	}
	return res, r.updateStatus(ctx, h, view, target)
}

// target reads h's target through the view h's spec gives, or returns a
// nil view when h cannot act now: its spec is unusable, the kind is not
// served or readable, the target does not exist, or an older handle sizes
// it. Each is a Warning on h, emitted once.
func (r *handleReconciler) target(ctx context.Context, h *v1alpha1.ScaleHandle) (*profile.Compiled, *unstructured.Unstructured, ctrl.Result, error) {
	nn := client.ObjectKeyFromObject(h)
	ref := h.Spec.TargetRef
	view, errs := profile.HandleTarget(h.Spec)
	if len(errs) > 0 {
		r.warnOnce(h, ReasonInvalidWorkload, "the ScaleHandle cannot be used: "+errs.ToAggregate().Error())
		return nil, nil, ctrl.Result{}, nil
	}
	problem, err := r.watch(ctx, view.GVK())
	if err != nil {
		return nil, nil, ctrl.Result{}, err
	}
	if problem != "" {
		// Reading a kind that is not served, or not readable, would block
		// on a cache that never syncs: say why and look again later.
		r.warnOnce(h, ReasonTargetNotReadable, problem)
		return nil, nil, ctrl.Result{RequeueAfter: targetRetry}, nil
	}
	r.warned.Delete(warnKey{nn, ReasonTargetNotReadable})
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(view.GVK())
	if err := r.cache.Get(ctx, types.NamespacedName{Namespace: h.Namespace, Name: ref.Name}, target); err != nil {
		if apierrors.IsNotFound(err) {
			r.warnOnce(h, ReasonTargetNotFound, fmt.Sprintf("%s %s/%s does not exist; the handle acts once it does", ref.Kind, h.Namespace, ref.Name))
			return nil, nil, ctrl.Result{}, nil
		}
		return nil, nil, ctrl.Result{}, fmt.Errorf("get %s %s/%s: %w", ref.Kind, h.Namespace, ref.Name, err)
	}
	r.warned.Delete(warnKey{nn, ReasonTargetNotFound})
	// Two handles on one target would put back each other's count
	// forever: the oldest holds it, the others wait.
	holder, err := r.holder(ctx, h)
	if err != nil {
		return nil, nil, ctrl.Result{}, err
	}
	if holder != h.Name {
		r.warnOnce(h, ReasonHandleConflict, fmt.Sprintf("ScaleHandle %s already sizes %s %s; this handle does nothing while it exists: delete one of them", holder, ref.Kind, ref.Name))
		return nil, nil, ctrl.Result{}, nil
	}
	r.warned.Delete(warnKey{nn, ReasonHandleConflict})
	return view, target, ctrl.Result{}, nil
}

// handleWorkload is what C1 and C2 decide on: R and the status replicas of
// the handle, the groups and their readiness of the target.
func handleWorkload(h *v1alpha1.ScaleHandle, target scaling.Workload) scaling.Workload {
	return scaling.Workload{
		Name:           h.Name,
		Replicas:       h.Spec.Replicas,
		Groups:         target.Groups,
		GroupStatus:    target.GroupStatus,
		StatusReplicas: h.Status.Replicas,
		Generation:     target.Generation,
	}
}

// fanOut is C1 for a handle: while R is set every group of the target gets
// R members, in one merge patch with the target's resourceVersion, so a
// group set to another count by hand is put back and no concurrent write
// is lost. On success target holds the written object.
func (r *handleReconciler) fanOut(ctx context.Context, h *v1alpha1.ScaleHandle, view *profile.Compiled, target *unstructured.Unstructured) error {
	if h.Spec.Replicas == nil {
		return nil
	}
	var before scaling.Workload
	wrote := false
	attempt := 0
	backoff := wait.Backoff{Steps: r.conflictRetries, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 0.2}
	err := retry.RetryOnConflict(backoff, func() error {
		if attempt++; attempt > 1 {
			if err := r.api.Get(ctx, client.ObjectKeyFromObject(target), target); err != nil {
				return err
			}
		}
		tw, errs := view.Read(target)
		if len(errs) > 0 {
			r.warnOnce(h, ReasonInvalidWorkload, fmt.Sprintf("the fields of %s %s are unreadable as the handle's memberGroups say: %v", target.GetKind(), target.GetName(), errs.ToAggregate()))
			return nil
		}
		want, changed := scaling.FanOut(handleWorkload(h, tw))
		nn := client.ObjectKeyFromObject(target)
		if !changed {
			r.refused.forget(nn)
			return nil
		}
		out := target.DeepCopy()
		if err := view.WriteSpec(out, scaling.Workload{Groups: want.Groups}); err != nil {
			return fmt.Errorf("write fan-out: %w", err)
		}
		data, err := client.MergeFrom(target).Data(out)
		if err != nil {
			return fmt.Errorf("compute fan-out patch: %w", err)
		}
		write := fmt.Sprintf("%d %s", target.GetGeneration(), data)
		if left, ok := r.refused.held(nn, write); ok {
			return &heldError{after: left}
		}
		patch := client.MergeFromWithOptions(target.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if err := r.writer.Patch(ctx, out, patch, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
			if isRefusal(err) {
				return &heldError{after: r.refused.refused(nn, write), message: "the API server refused the fan-out: " + apiMessage(err)}
			}
			return err
		}
		r.refused.forget(nn)
		before, wrote = tw, true
		out.DeepCopyInto(target)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if held, ok := asHeld(err); ok {
		if held.message != "" {
			r.warnOnce(h, v1alpha1.ReasonWriteFailed, held.message)
		}
		return held
	}
	if err != nil {
		r.warnOnce(h, v1alpha1.ReasonWriteFailed, err.Error())
		return fmt.Errorf("fan out %s to %s %s/%s: %w", h.Name, target.GetKind(), target.GetNamespace(), target.GetName(), err)
	}
	if wrote {
		r.warned.Delete(warnKey{client.ObjectKeyFromObject(h), v1alpha1.ReasonWriteFailed})
		note := fmt.Sprintf("%s %s: %s", target.GetKind(), target.GetName(), fanOutNote(view.Layout(), before, scaling.Workload{Replicas: h.Spec.Replicas, Groups: before.Groups}))
		ctrl.LoggerFrom(ctx).Info("fanned out replicas", "change", note)
		r.events.Eventf(h, corev1.EventTypeNormal, v1alpha1.ReasonScaledGroups, "%s", note)
	}
	return nil
}

// targetRetry is how soon a handle whose target kind is not served or not
// readable looks again.
const targetRetry = 30 * time.Second

// targetVerbs are what the handle reconciler does to a target: read it from
// the cache (get, list, watch) and merge-patch its member groups.
var targetVerbs = []string{"get", "list", "watch", "patch"}

// watch starts watching gvk, the kind of a handle's target, the first time
// a handle names it: every change of a target reconciles the handles that
// name it, so a group edited by hand is put back and readiness reaches
// the handle's status. It first makes sure the kind is served and that
// scaleplane may read and patch it, and returns what is missing otherwise,
// since an informer that cannot list never syncs and a read from it would
// wait for ever.
func (r *handleReconciler) watch(ctx context.Context, gvk schema.GroupVersionKind) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watched[gvk] {
		return "", nil
	}
	m, err := r.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Sprintf("%s is not served (%v); install its CRD, or fix spec.targetRef.apiVersion and kind", gvk, err), nil
	}
	var denied []string
	for _, verb := range targetVerbs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: m.Resource.Group, Version: m.Resource.Version, Resource: m.Resource.Resource, Verb: verb},
		}}
		if err := r.writer.Create(ctx, review); err != nil {
			return "", fmt.Errorf("review scaleplane's access to %s: %w", m.Resource.GroupResource(), err)
		}
		if !review.Status.Allowed {
			denied = append(denied, verb)
		}
	}
	if len(denied) > 0 {
		return fmt.Sprintf("scaleplane may not %s %s: grant it %s on them (scaleplane profile init prints the ClusterRole)", strings.Join(denied, ", "), m.Resource.GroupResource(), strings.Join(targetVerbs, ", ")), nil
	}
	// Typed objects from a cache carry no kind, so the map is told it.
	mapTarget := func(ctx context.Context, o client.Object) []reconcile.Request { return r.mapTarget(ctx, gvk, o) }
	src := source.Kind(r.mgr.GetCache(), objects.Prototype(r.mgr.GetScheme(), gvk), handler.EnqueueRequestsFromMapFunc(mapTarget))
	if err := r.ctrl.Watch(src); err != nil {
		return "", fmt.Errorf("watch %s, a ScaleHandle target: %w", gvk, err)
	}
	r.watched[gvk] = true
	return "", nil
}

// holder is the name of the handle that sizes h's target: the oldest of
// the handles naming it, by creation time and then name.
func (r *handleReconciler) holder(ctx context.Context, h *v1alpha1.ScaleHandle) (string, error) {
	ref := h.Spec.TargetRef
	var list v1alpha1.ScaleHandleList
	if err := r.cache.List(ctx, &list, client.InNamespace(h.Namespace), client.MatchingFields{handleTargetIndex: TargetKey(ref.APIVersion, ref.Kind, ref.Name)}); err != nil {
		return "", fmt.Errorf("list the ScaleHandles of %s %s/%s: %w", ref.Kind, h.Namespace, ref.Name, err)
	}
	return oldestHandle(append(list.Items, *h)), nil
}

// oldestHandle is the name of the oldest handle, by creation time and then
// name, so every reconcile of every handle agrees on it.
func oldestHandle(handles []v1alpha1.ScaleHandle) string {
	best := -1
	for i := range handles {
		if handles[i].DeletionTimestamp != nil {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		a, b := handles[i].CreationTimestamp, handles[best].CreationTimestamp
		if a.Before(&b) || (a.Equal(&b) && handles[i].Name < handles[best].Name) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return handles[best].Name
}

// mapSiblings finds the other handles of o's target, so that a handle
// waiting behind o (ReasonHandleConflict) takes over when o goes.
func (r *handleReconciler) mapSiblings(ctx context.Context, o client.Object) []reconcile.Request {
	h, ok := o.(*v1alpha1.ScaleHandle)
	if !ok {
		return nil
	}
	ref := h.Spec.TargetRef
	var list v1alpha1.ScaleHandleList
	if err := r.cache.List(ctx, &list, client.InNamespace(h.Namespace), client.MatchingFields{handleTargetIndex: TargetKey(ref.APIVersion, ref.Kind, ref.Name)}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the ScaleHandles of a target", "target", ref.Kind+"/"+ref.Name)
		return nil
	}
	var out []reconcile.Request
	for _, s := range list.Items {
		if s.Name != h.Name {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
		}
	}
	return out
}

// mapTarget finds the handles that name o.
func (r *handleReconciler) mapTarget(ctx context.Context, gvk schema.GroupVersionKind, o client.Object) []reconcile.Request {
	key := TargetKey(gvk.GroupVersion().String(), gvk.Kind, o.GetName())
	var list v1alpha1.ScaleHandleList
	if err := r.cache.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{handleTargetIndex: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the ScaleHandles of a target", "target", key)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, h := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: h.Namespace, Name: h.Name}})
	}
	return out
}

// warnOnce emits a Warning on the handle unless the same note was the last
// one for this reason.
func (r *handleReconciler) warnOnce(h *v1alpha1.ScaleHandle, reason, note string) {
	key := warnKey{client.ObjectKeyFromObject(h), reason}
	if last, ok := r.warned.Load(key); ok && last.(string) == note {
		return
	}
	r.warned.Store(key, note)
	r.events.Eventf(h, corev1.EventTypeWarning, reason, "%s", note)
}
