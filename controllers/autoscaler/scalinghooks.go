package autoscaler

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/scalings"
	"github.com/scaleplane/scaleplane/controllers/autoscaler/internal/status"
)

// How the kind loops use Scalings: a workload's Scaling is read (from the
// manager's cache) on every reconcile of the leader, for the activity any
// replica recorded in it, and, on the first reconcile of a workload this
// leader has not seen, for the History and conditions the previous leader
// left; the reconcile ends by offering the newest status to the writer.

// scalingKey is where the Scaling of workload nn lives.
func (k *kindLoop) scalingKey(nn types.NamespacedName) types.NamespacedName {
	ns := nn.Namespace
	if ns == "" {
		ns = k.a.opts.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: ScalingName(nn.Name, k.view.GVK().GroupKind())}
}

// readScaling returns the workload's Scaling from the cache, nil when there
// is none or Scalings are not served.
func (k *kindLoop) readScaling(ctx context.Context, e *env, nn types.NamespacedName) *v1alpha1.Scaling {
	if e == nil || e.cache == nil || e.scalings == nil || !e.scalings.Served() {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ScalingGVK)
	if err := e.cache.Get(ctx, k.scalingKey(nn), u); err != nil {
		// Not renamed yet (migrateScalings): the Scaling of the name
		// without the group, if it is this workload's.
		legacy := types.NamespacedName{Namespace: k.scalingKey(nn).Namespace, Name: scalings.LegacyName(nn.Name, k.kind)}
		if e.cache.Get(ctx, legacy, u) != nil || !targets(u, k.view.GVK().GroupKind(), nn.Name) {
			return nil
		}
	}
	s := &v1alpha1.Scaling{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		ctrl.LoggerFrom(ctx).Info("Scaling unreadable; ignoring it", "error", err.Error())
		return nil
	}
	return s
}

// syncScaling takes what the workload's Scaling holds that this replica's
// memory may lack: the latest activity (any replica's POST /activity), and,
// once per memory, the previous leader's History, conditions and
// decisions, so that a new leader's first decision is the one the old
// leader would have made.
func (k *kindLoop) syncScaling(ctx context.Context, e *env, st *workload) {
	s := k.readScaling(ctx, e, st.nn)
	if s == nil {
		st.restored = true
		return
	}
	if t := s.Status.LastActivity; t != nil {
		// A time in the future (another replica's clock, or a hand-edited
		// status) is not activity: it would keep the workload awake for
		// good.
		if at, ok := scalings.ActivityTime(t.Time, k.a.opts.Now()); ok {
			st.recordActivity(at)
		}
	}
	if st.restored {
		return
	}
	st.restored = true
	prev := s.Status.DeepCopy()
	st.scalingPrev = prev
	st.changes = prev.Decisions
	if prev.Mode == v1alpha1.ScalingModeTriggers && prev.History != nil {
		active := false
		for _, t := range prev.Triggers {
			active = active || t.Active
		}
		st.history = status.HistoryFromStatus(prev.History, active, k.a.opts.Now())
	}
}

// offerScaling builds the workload's Scaling from what this reconcile
// published and hands it to the writer.
func (k *kindLoop) offerScaling(e *env, u *unstructured.Unstructured, st *workload) {
	if e == nil || e.scalings == nil {
		return
	}
	w, _ := k.view.Read(u)
	st.mu.Lock()
	in := status.Input{
		Kind: k.kind, Name: u.GetName(), Generation: u.GetGeneration(),
		Workload: w, Layout: k.view.Layout(), Defaults: k.defaultMetrics,
		State: st.state, Message: st.message,
		History: st.history, Decisions: st.changes, Previous: st.scalingPrev,
		Now: k.a.opts.Now(),
	}
	if st.lastRec != nil && st.state == StateAutoscaling {
		d := st.lastRec.Decision
		in.Decision = &d
		in.WriteError = st.lastRec.Error
		in.Throttled = st.throttled
	}
	st.mu.Unlock()
	if e.cache != nil && status.Mode(in.State, w, in.Layout, in.Defaults) == v1alpha1.ScalingModeHPA && u.GetNamespace() != "" {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := e.cache.Get(context.Background(), types.NamespacedName{Namespace: u.GetNamespace(), Name: controllers.HPAName(u.GetName(), k.kind)}, hpa); err == nil {
			in.HPA = &hpa.Status
		}
	}
	built := status.Build(in)
	if t := st.lastActivity(); !t.IsZero() {
		built.LastActivity = status.MicroOrNil(t)
	}
	st.scalingPrev = &built
	e.scalings.Offer(scalings.Object(u, k.a.opts.Namespace), built, in.Now)
}

// noteChange keeps a decision that changed, or tried to change, the count
// for status.decisions. Called under st.mu (publish).
func (st *workload) noteChange(rec *Record) {
	if rec == nil || (rec.Desired == rec.Current && rec.Error == "") {
		return
	}
	d := v1alpha1.ScalingDecision{
		Time: microTimeOf(rec.Time), Current: rec.Current, Desired: rec.Desired,
		Action: string(rec.Action), Reason: truncate(rec.Reason, maxNote), Error: truncate(rec.Error, maxNote),
	}
	st.changes = append(append([]v1alpha1.ScalingDecision(nil), st.changes...), d)
	if n := len(st.changes); n > status.MaxDecisions {
		st.changes = st.changes[n-status.MaxDecisions:]
	}
}

// scalingWatch runs on the leader: it learns whether Scalings are served
// (the writer holds its writes until they are) and turns a Scaling whose
// lastActivity moved into a wake-up of its workload, so that activity
// posted to any replica reaches the leader's loop.
type scalingWatch struct {
	a      *Autoscaler
	cache  cache.Cache
	mapper meta.RESTMapper
	every  time.Duration
}

func (s scalingWatch) NeedLeaderElection() bool { return true }

func (s scalingWatch) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("scalings")
	e := s.a.env.Load()
	warned := false
	for {
		_, err := s.mapper.RESTMapping(ScalingGVK.GroupKind(), ScalingGVK.Version)
		if err == nil {
			break
		}
		wait := time.Second
		if meta.IsNoMatchError(err) {
			// Known not served: the loops run without Scalings.
			e.scalings.MarkKnown()
			wait = s.every
			if !warned {
				log.Error(err, "scalings.scaleplane.io is not served: install scaleplane's CRDs (config/crd); until then no Scaling is written and activity reaches only the replica that receives it")
				warned = true
			}
		} else {
			// Discovery failed: the loops wait (a new leader must not
			// decide before it could restore the History); ask again soon.
			log.Info("cannot tell whether Scalings are served yet; retrying", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ScalingGVK)
	inf, err := s.cache.GetInformer(ctx, u)
	if err != nil {
		return fmt.Errorf("watch Scalings: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := newObj.(*unstructured.Unstructured)
			if !ok1 || !ok2 {
				return
			}
			before, _, _ := unstructured.NestedString(o.Object, "status", "lastActivity")
			after, _, _ := unstructured.NestedString(n.Object, "status", "lastActivity")
			if after != "" && after != before {
				s.a.wakeFromScaling(n)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				// A Scaling deleted while its workload lives is written
				// again at once.
				e.scalings.Gone(types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
				s.a.wakeFromScaling(u)
			}
		},
	}); err != nil {
		return fmt.Errorf("watch Scalings: %w", err)
	}
	// Only the Scalings' informer: a workload kind not served yet must
	// not hold the rename (nor the loops) back.
	if toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) && e.scalings.Client() != nil {
		migrateScalings(ctx, s.cache, e.scalings.Client())
	}
	e.scalings.MarkServed()
	<-ctx.Done()
	return nil
}

// targets reports whether Scaling u is the one of workload name of kind gk.
func targets(u *unstructured.Unstructured, gk schema.GroupKind, name string) bool {
	apiVersion, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "apiVersion")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "kind")
	n, _, _ := unstructured.NestedString(u.Object, "spec", "targetRef", "name")
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == gk.Group && kind == gk.Kind && n == name
}

// migrateScalings renames the Scalings of the name without the group
// (<workload>-<kind>) that scaleplane wrote before the group was part of
// it: each is written again under ScalingName with its status, the
// activity under its own field manager, then deleted. Until the watch
// shows the rename, readScaling finds the old one. A failure is logged:
// the leader then writes the new one from what it restores, and the old
// one stays until its workload is deleted.
func migrateScalings(ctx context.Context, r client.Reader, c client.Client) {
	log := ctrl.LoggerFrom(ctx).WithName("scalings")
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ScalingGVK.GroupVersion().WithKind("ScalingList"))
	if err := r.List(ctx, list, client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}); err != nil {
		log.Info("list Scalings to rename; leaving the old names", "error", err.Error())
		return
	}
	for i := range list.Items {
		old := &list.Items[i]
		next, ok := renamedScaling(old)
		if !ok {
			continue
		}
		if err := renameScaling(ctx, r, c, old, next); err != nil {
			log.Info("rename a Scaling to include the API group; leaving the old one", "scaling", old.GetNamespace()+"/"+old.GetName(), "error", err.Error())
			continue
		}
		log.Info("renamed a Scaling to include the API group", "from", old.GetName(), "to", next.GetName(), "namespace", old.GetNamespace())
	}
}

// renamedScaling is old under its new name (metadata, labels and spec;
// the status is copied by renameScaling), when old has a name without
// the group.
func renamedScaling(old *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	apiVersion, _, _ := unstructured.NestedString(old.Object, "spec", "targetRef", "apiVersion")
	kind, _, _ := unstructured.NestedString(old.Object, "spec", "targetRef", "kind")
	name, _, _ := unstructured.NestedString(old.Object, "spec", "targetRef", "name")
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" || name == "" {
		return nil, false
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	if old.GetName() != scalings.LegacyName(name, kind) || old.GetName() == ScalingName(name, gk) {
		return nil, false
	}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(gv.WithKind(kind))
	w.SetName(name)
	next := scalings.Object(w, old.GetNamespace())
	next.SetNamespace(old.GetNamespace())
	next.SetOwnerReferences(old.GetOwnerReferences())
	return next, true
}

// renameScaling writes next with old's status, then deletes old.
func renameScaling(ctx context.Context, r client.Reader, c client.Client, old, next *unstructured.Unstructured) error {
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(ScalingGVK)
	err := r.Get(ctx, types.NamespacedName{Namespace: next.GetNamespace(), Name: next.GetName()}, have)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(next.DeepCopy()), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("create %s: %w", next.GetName(), err)
		}
		status, _, _ := unstructured.NestedMap(old.Object, "status")
		activity, _, _ := unstructured.NestedString(status, "lastActivity")
		delete(status, "lastActivity")
		if len(status) > 0 {
			u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
			u.SetGroupVersionKind(ScalingGVK)
			u.SetNamespace(next.GetNamespace())
			u.SetName(next.GetName())
			if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("copy the status to %s: %w", next.GetName(), err)
			}
		}
		if activity != "" {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(ScalingGVK)
			u.SetNamespace(next.GetNamespace())
			u.SetName(next.GetName())
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"lastActivity":%q}}`, activity)))
			if err := c.Status().Patch(ctx, u, patch, client.FieldOwner(v1alpha1.ActivityFieldManager)); err != nil {
				return fmt.Errorf("copy the last activity to %s: %w", next.GetName(), err)
			}
		}
	case err != nil:
		return fmt.Errorf("read %s: %w", next.GetName(), err)
	}
	uid := old.GetUID()
	if err := c.Delete(ctx, old, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", old.GetName(), err)
	}
	return nil
}

// wakeFromScaling queues a tick of the workload a Scaling names.
func (a *Autoscaler) wakeFromScaling(s *unstructured.Unstructured) {
	kind, _, _ := unstructured.NestedString(s.Object, "spec", "targetRef", "kind")
	apiVersion, _, _ := unstructured.NestedString(s.Object, "spec", "targetRef", "apiVersion")
	name, _, _ := unstructured.NestedString(s.Object, "spec", "targetRef", "name")
	for _, k := range a.kindList() {
		gvk := k.view.GVK()
		if gvk.Kind != kind || gvk.GroupVersion().String() != apiVersion {
			continue
		}
		ns := s.GetNamespace()
		if len(s.GetOwnerReferences()) == 0 && ns == a.opts.Namespace {
			// A cluster-scoped workload's Scaling (scalings.Object).
			ns = ""
		}
		nn := types.NamespacedName{Namespace: ns, Name: name}
		if st := k.lookup(nn.Namespace, nn.Name); st != nil {
			k.enqueue(st)
			return
		}
		u := k.newObject()
		u.SetNamespace(nn.Namespace)
		u.SetName(nn.Name)
		k.wakeObject(u)
		return
	}
}

func microTimeOf(t time.Time) metav1.MicroTime { return metav1.NewMicroTime(t) }
