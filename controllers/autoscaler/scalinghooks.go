package autoscaler

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
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
// is none or Scalings are not served. Once the workload is restored only
// the activity is taken from it (syncScaling): a Scaling at the version
// decoded last is not decoded again.
func (k *kindLoop) readScaling(ctx context.Context, e *env, st *workload) *v1alpha1.Scaling {
	if e == nil || e.cache == nil || e.scalings == nil || !e.scalings.Served() {
		return nil
	}
	nn := st.nn
	if st.scalingAt.Name == "" {
		st.scalingAt = k.scalingKey(nn)
	}
	// The cache's own object, not a copy: it is only read.
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": scalingAPIVersion, "kind": ScalingGVK.Kind}}
	if err := e.cache.Get(ctx, st.scalingAt, u, client.UnsafeDisableDeepCopy); err != nil {
		// Not renamed yet (scalings.Migrate): the Scaling of the name
		// without the group, if it is this workload's.
		legacy := types.NamespacedName{Namespace: k.scalingKey(nn).Namespace, Name: scalings.LegacyName(nn.Name, k.kind)}
		u = &unstructured.Unstructured{}
		u.SetGroupVersionKind(ScalingGVK)
		if e.cache.Get(ctx, legacy, u, client.UnsafeDisableDeepCopy) != nil || !scalings.Targets(u, k.view.GVK().GroupKind(), nn.Name) {
			return nil
		}
	}
	id := scalingIdentity{name: u.GetName(), uid: u.GetUID(), rv: u.GetResourceVersion()}
	if r := st.scalingRead; st.restored && id.rv != "" && r != nil && r.id == id {
		return r.scaling
	}
	s := &v1alpha1.Scaling{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		ctrl.LoggerFrom(ctx).Info("Scaling unreadable; ignoring it", "error", err.Error())
		s = nil
	}
	st.scalingRead = nil
	if id.rv != "" {
		// What syncScaling reads of a restored workload's Scaling.
		var kept *v1alpha1.Scaling
		if s != nil {
			kept = &v1alpha1.Scaling{Status: v1alpha1.ScalingStatus{LastActivity: s.Status.LastActivity.DeepCopy()}}
		}
		st.scalingRead = &scalingRead{id: id, scaling: kept}
	}
	return s
}

// scalingAPIVersion is ScalingGVK's apiVersion.
var scalingAPIVersion = ScalingGVK.GroupVersion().String()

// scalingIdentity is one version of a Scaling.
type scalingIdentity struct {
	name string
	uid  types.UID
	rv   string
}

// scalingRead is what readScaling keeps of the version of the Scaling it
// decoded last: its activity, nil when it was unreadable.
type scalingRead struct {
	id      scalingIdentity
	scaling *v1alpha1.Scaling
}

// syncScaling takes what the workload's Scaling holds that this replica's
// memory may lack: the latest activity (any replica's POST /activity), and,
// once per memory, the previous leader's History, conditions and
// decisions, so that a new leader's first decision is the one the old
// leader would have made.
func (k *kindLoop) syncScaling(ctx context.Context, e *env, st *workload) {
	s := k.readScaling(ctx, e, st)
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
	st.scalingPrev, st.offered = prev, false
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
// published and hands it to the writer; not when its significant part is
// the last offer's and the writer could not write it before the next tick
// (offerkey.go).
func (k *kindLoop) offerScaling(e *env, u *unstructured.Unstructured, st *workload) {
	if e == nil || e.scalings == nil {
		return
	}
	w, _ := k.read(st, u)
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
	interval := st.interval
	st.mu.Unlock()
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	if e.cache != nil && status.Mode(in.State, w, in.Layout, in.Defaults) == v1alpha1.ScalingModeHPA && u.GetNamespace() != "" {
		got := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := e.cache.Get(context.Background(), types.NamespacedName{Namespace: u.GetNamespace(), Name: controllers.HPAName(u.GetName(), k.view.GVK().GroupKind())}, got, client.UnsafeDisableDeepCopy); err == nil {
			hpa, in.HPA = got, &got.Status
		}
	}
	activity := st.lastActivity()
	obj := k.scalingObject(st, u)
	id, _ := identityOf(k.view, u)
	key, keyed := keyOf(id, &in, hpa, activity)
	if keyed && st.offered && key == st.offerKey && !k.a.alwaysOffer &&
		e.scalings.Settled(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, in.Now.Add(interval)) {
		return
	}
	built := status.Build(in)
	if !activity.IsZero() {
		built.LastActivity = status.MicroOrNil(activity)
	}
	st.scalingPrev = &built
	st.offerKey, st.offered = key, keyed
	e.scalings.Offer(obj, built, in.Now)
}

// scalingObject is scalings.Object of u, built again only for another
// object of the workload's name (its UID: the Scaling's owner); the rest
// it is made of, the kind, name and namespace, is the loop's and the
// workload's own. The writer copies it before writing.
func (k *kindLoop) scalingObject(st *workload, u *unstructured.Unstructured) *unstructured.Unstructured {
	from := scalingFrom{uid: u.GetUID()}
	if st.scalingObj == nil || st.scalingObjFrom != from {
		st.scalingObj, st.scalingObjFrom = scalings.Object(u, k.a.opts.Namespace), from
	}
	return st.scalingObj
}

// scalingFrom is what of a workload its Scaling's metadata and spec are
// made of, besides its kind and name.
type scalingFrom struct {
	uid types.UID
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
