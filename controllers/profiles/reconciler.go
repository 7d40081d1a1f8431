package profiles

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers"
	"github.com/scaleplane/scaleplane/profile"
)

// Dispatcher serves the webhooks of the active kinds; package webhooks'
// *Dispatcher implements it.
type Dispatcher interface {
	Activate(view *profile.Compiled)
	Deactivate(gvr schema.GroupVersionResource)
}

// Options wires the reconciler.
type Options struct {
	// Owner names the controllers (<owner>-scaleprofiles, <owner>-<kind>)
	// and says which ScaleProfiles are this process's: those labelled
	// scaleplane.io/owner=<Owner>, and the unlabelled ones when Owner is
	// the default owner (Owns). Another owner's profiles are left alone:
	// not activated, not in the webhook entries, their status not written.
	// Default v1alpha1.DefaultOwner.
	Owner string
	// Dispatcher is told on every replica which kinds are active.
	Dispatcher Dispatcher
	// Resync brings the webhook entries in line with the active kinds
	// (webhooks.SyncDispatchConfigurations); called on the leader when
	// they change. Nil leaves the entries alone.
	Resync func(ctx context.Context, active []*profile.Compiled) error
	// Missing, set instead of Resync in GitOps mode (where the entries are
	// the user's repository's), reports the active kinds whose entries the
	// webhook configurations lack (webhooks.MissingDispatchEntries). Their
	// profiles show Active False, reason WebhooksNotInstalled, until the
	// entries are applied; their kinds run meanwhile, so the entries take
	// effect as soon as they are. Looked at again every NotServedRetry.
	Missing func(ctx context.Context, active []*profile.Compiled) (map[schema.GroupVersionResource][]string, error)
	// StartAutoscaler starts the trigger autoscaler of an active kind
	// (controllers/autoscaler's Autoscaler.StartKind) and returns what
	// stops it. It is called on every replica: a replica that does not
	// lead answers the kind's activity endpoint (recording activity in the
	// Scaling for the leader) and runs its controller once elected. Nil runs none; the webhooks must then refuse
	// triggers for the kinds (webhooks.Options.Sources nil), or they would
	// be accepted and never evaluated.
	StartAutoscaler func(ctx context.Context, v *profile.Compiled) (stop func(context.Context) error, err error)
	// Controllers tunes each kind's controller.
	Controllers controllers.Options
	// Static are the kinds this process set up otherwise (its
	// configuration file, the library builder): a ScaleProfile of one of
	// them is a Conflict.
	Static []*profile.Compiled
	// NotServedRetry is how often profiles that wait on what is not
	// watched (RBAC, the webhook entries in GitOps mode) are looked at
	// again; CRDs are watched when the manager's scheme knows them, and
	// this is then only a fallback for a CRD the API server serves a
	// little after its last event. Default 15 s.
	NotServedRetry time.Duration
	// CRDs reads a kind's CustomResourceDefinition, whose served schema
	// gives the kind's limits (contract M7, S2, C6) and must agree with
	// the profile (SchemaMismatch otherwise). Nil reads through the
	// manager's API reader, which needs the manager's scheme to know
	// apiextensions.k8s.io/v1; a kind without a readable CRD (a built-in
	// kind, no RBAC) runs without limits.
	CRDs client.Reader
	// SkipAccessReview leaves out the SelfSubjectAccessReviews that make a
	// profile RBACMissing when this process may not do what its kind
	// needs (accessRules); for managers whose client cannot create them.
	SkipAccessReview bool
}

// Reconciler keeps the active kinds in line with the ScaleProfiles. Every
// replica runs it (the webhooks answer on every replica); only the leader
// runs the kinds' controllers, resyncs the webhook entries and writes
// status.
type Reconciler struct {
	mgr  manager.Manager
	opts Options

	static map[schema.GroupKind]bool

	// elected wakes the reconciler once this replica leads: the kinds'
	// controllers, the entries and the status are the leader's.
	elected chan event.GenericEvent

	mu sync.Mutex
	// ctx lives as long as the manager; kinds' controllers run under it.
	ctx    context.Context
	active map[schema.GroupKind]*activeKind
	// lagging counts the quick looks at profiles whose CRD exists while
	// discovery does not serve their kind, by profile and CRD version.
	lagging map[string]int
	// crdsWatched says CRDs' metadata is cached (the manager's scheme
	// knows CRDs), so withSchema can compare generations without a read.
	crdsWatched bool
	// unsynced is set while the webhook entries may not match active: a
	// change seen before this replica led, or a resync that failed.
	unsynced bool
}

type activeKind struct {
	profile string
	spec    v1alpha1.ScaleProfileSpec
	// crd is the CRD the view's schema limits came from.
	crd     crdVersion
	view    *profile.Compiled
	runtime *controllers.KindRuntime
	// stopAutoscaler stops the kind's trigger autoscaler (nil: none runs).
	stopAutoscaler func(context.Context) error
}

// crdVersion names one schema of a CRD: a CRD deleted and created again
// starts at generation 1 again, under another UID.
type crdVersion struct {
	uid        types.UID
	generation int64
}

// stop stops what runs for the kind: the trigger autoscaler before the
// controller, whose Stop may remove the informer both read.
func (a *activeKind) stop(ctx context.Context) error {
	var errs []error
	if a.stopAutoscaler != nil {
		errs = append(errs, a.stopAutoscaler(ctx))
		a.stopAutoscaler = nil
	}
	if a.runtime != nil {
		errs = append(errs, a.runtime.Stop(ctx))
	}
	return errors.Join(errs...)
}

// SetupWithManager registers the reconciler; mgr's scheme must know
// package api/v1alpha1's types.
func SetupWithManager(mgr manager.Manager, opts Options) (*Reconciler, error) {
	if !mgr.GetScheme().Recognizes(v1alpha1.GroupVersion.WithKind("ScaleProfile")) {
		return nil, errors.New("set up ScaleProfiles: the manager's scheme does not know them; add api/v1alpha1.AddToScheme to it")
	}
	if opts.Dispatcher == nil {
		return nil, errors.New("set up ScaleProfiles: Options.Dispatcher is required (webhooks.NewDispatcher)")
	}
	if opts.Owner == "" {
		opts.Owner = v1alpha1.DefaultOwner
	}
	opts.Controllers.Owner = opts.Owner
	if opts.NotServedRetry <= 0 {
		opts.NotServedRetry = 15 * time.Second
	}
	if opts.CRDs == nil {
		opts.CRDs = mgr.GetAPIReader()
	}
	r := &Reconciler{mgr: mgr, opts: opts, active: map[schema.GroupKind]*activeKind{}, static: map[schema.GroupKind]bool{},
		elected: make(chan event.GenericEvent, 1), unsynced: true}
	for _, v := range opts.Static {
		r.static[v.GVK().GroupKind()] = true
	}
	if err := mgr.Add(r); err != nil {
		return nil, err
	}
	every := false
	copts := controller.Options{NeedLeaderElection: &every, MaxConcurrentReconciles: 1}
	if opts.Controllers.SkipNameValidation {
		skip := true
		copts.SkipNameValidation = &skip
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(opts.Owner+"-scaleprofiles").
		// Another owner's profiles change nothing here.
		For(&v1alpha1.ScaleProfile{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			p, ok := o.(*v1alpha1.ScaleProfile)
			return !ok || Owns(opts.Owner, p)
		}))).
		WatchesRawSource(source.Channel(r.elected, &handler.EnqueueRequestForObject{})).
		WithOptions(copts)
	// Any event makes Reconcile look at every profile, as for the
	// election. Only metadata is cached: CRDs can be megabytes each.
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "scaleplane-watched-change"}}}
	})
	if mgr.GetScheme().Recognizes(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")) {
		// A CRD installed, served (Established), changed or deleted can
		// change any profile's state and its kind's schema limits.
		b = b.WatchesMetadata(&apiextensionsv1.CustomResourceDefinition{}, all)
		r.crdsWatched = true
	}
	if opts.Missing != nil {
		// GitOps mode: the repository's entries arrive with an apply of
		// the configurations, which turns WebhooksNotInstalled to Active.
		b = b.WatchesMetadata(&admissionregistrationv1.MutatingWebhookConfiguration{}, all).
			WatchesMetadata(&admissionregistrationv1.ValidatingWebhookConfiguration{}, all)
	}
	err := b.Complete(r)
	if err != nil {
		return nil, fmt.Errorf("set up ScaleProfiles: %w", err)
	}
	return r, nil
}

// Start keeps the manager's context for the kinds' controllers and stops
// them when the manager stops.
func (r *Reconciler) Start(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	select {
	case <-r.mgr.Elected():
		// The name is no profile's: any request makes Reconcile look at
		// them all.
		r.elected <- event.GenericEvent{Object: &v1alpha1.ScaleProfile{ObjectMeta: metav1.ObjectMeta{Name: "scaleplane-elected"}}}
	case <-ctx.Done():
	}
	<-ctx.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, a := range r.active {
		_ = a.stop(stopCtx)
	}
	return nil
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (*Reconciler) NeedLeaderElection() bool { return false }

func (r *Reconciler) leader() bool {
	select {
	case <-r.mgr.Elected():
		return true
	default:
		return false
	}
}

// Reconcile looks at every ScaleProfile, whichever changed: one profile's
// change can change another's state (the older of two for a kind going).
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	var list v1alpha1.ScaleProfileList
	if err := r.mgr.GetClient().List(ctx, &list); err != nil {
		return ctrl.Result{}, fmt.Errorf("list ScaleProfiles: %w", err)
	}
	list.Items = Owned(r.opts.Owner, list.Items)
	leader := r.leader()
	want := map[schema.GroupKind]*activeKind{}
	states := make([]State, len(list.Items))
	retry, soon := false, false
	lagging := map[string]int{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		states[i] = r.withAccess(ctx, p, withPruningNote(r.withSchema(ctx, p, EvaluateWith(p, list.Items, r.mgr.GetRESTMapper(), r.static))))
		if s := states[i]; s.Active() {
			want[s.View.GVK().GroupKind()] = &activeKind{profile: p.Name, spec: p.Spec, crd: crdVersion{s.CRDUID, s.CRDGeneration}, view: s.View}
		} else if s.Condition.Reason == v1alpha1.ProfileReasonCRDNotServed || s.Condition.Reason == v1alpha1.ProfileReasonRBACMissing {
			retry = true
			if s.Condition.Reason == v1alpha1.ProfileReasonCRDNotServed {
				// A few quick looks per CRD version: a CRD that serves
				// other versions only is not discovery lag.
				if key, ok := r.crdKey(ctx, p); ok && r.lagging[key] < maxLagRetries {
					lagging[key] = r.lagging[key] + 1
					soon = true
				} else if ok {
					lagging[key] = r.lagging[key]
				}
			}
		}
	}
	r.lagging = lagging
	changed, errs := r.apply(want, leader)
	r.unsynced = r.unsynced || changed
	if r.unsynced && leader && r.opts.Resync != nil {
		if err := r.opts.Resync(ctx, r.views()); err != nil {
			errs = append(errs, fmt.Errorf("resync webhook entries: %w", err))
		} else {
			r.unsynced = false
		}
	}
	if leader && r.opts.Missing != nil {
		missing, err := r.opts.Missing(ctx, r.views())
		if err != nil {
			errs = append(errs, fmt.Errorf("read the webhook configurations: %w", err))
		}
		for i := range states {
			if s := &states[i]; s.Active() && len(missing[s.View.GVR()]) > 0 {
				retry = true
				s.Condition.Status, s.Condition.Reason = metav1.ConditionFalse, v1alpha1.ProfileReasonWebhooksNotInstalled
				s.Condition.Message = fmt.Sprintf("GitOps mode: scaleplane runs the kind but writes no webhook configuration, and these entries are missing: %s; "+
					"objects of the kind are admitted without defaulting or validation until they are applied: run scaleplane render webhooks -f with this profile and commit the output",
					strings.Join(missing[s.View.GVR()], ", "))
			}
		}
	}
	if leader {
		for i := range list.Items {
			if list.Items[i].DeletionTimestamp == nil {
				if err := r.writeStatus(ctx, &list.Items[i], states[i]); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case soon:
		// The CRD is there but discovery does not serve the kind yet: the
		// CRD's last event (Established) can come before discovery has
		// it, and no further event will.
		return ctrl.Result{RequeueAfter: discoveryLag}, nil
	case retry:
		return ctrl.Result{RequeueAfter: r.opts.NotServedRetry}, nil
	}
	return ctrl.Result{}, nil
}

// discoveryLag is how soon a profile whose CRD exists but whose kind the
// RESTMapper does not know yet is looked at again, at most maxLagRetries
// times for one version of the CRD.
const (
	discoveryLag  = time.Second
	maxLagRetries = 10
)

// crdKey names p and the version of its target's CRD in the watch's
// metadata cache; false when the CRD is not there or CRDs are not watched.
func (r *Reconciler) crdKey(ctx context.Context, p *v1alpha1.ScaleProfile) (string, bool) {
	if !r.crdsWatched {
		return "", false
	}
	gv, err := schema.ParseGroupVersion(p.Spec.Target.APIVersion)
	if err != nil || p.Spec.Target.Resource == "" {
		return "", false
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := r.mgr.GetClient().Get(ctx, client.ObjectKey{Name: p.Spec.Target.Resource + "." + gv.Group}, meta); err != nil {
		return "", false
	}
	return p.Name + "/" + meta.ResourceVersion, true
}

// withSchema gives an active state's profile the limits of its kind's
// served CRD, or makes it SchemaMismatch when the two disagree.
func (r *Reconciler) withSchema(ctx context.Context, p *v1alpha1.ScaleProfile, s State) State {
	if !s.Active() {
		return s
	}
	gvr := s.View.GVR()
	name := gvr.Resource + "." + gvr.Group
	// A kind running under the same spec and the same CRD (UID and
	// generation) keeps its view: any CRD's event reconciles every
	// profile, and a CRD can be megabytes, so the full CRD is read only
	// when the watch's metadata cache says it changed.
	if a, ok := r.active[s.View.GVK().GroupKind()]; ok && r.crdsWatched && a.crd.generation != 0 && a.profile == p.Name && equality.Semantic.DeepEqual(a.spec, p.Spec) {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := r.mgr.GetClient().Get(ctx, client.ObjectKey{Name: name}, meta); err == nil && meta.Generation == a.crd.generation && meta.UID == a.crd.uid {
			s.View, s.CRDGeneration, s.CRDUID = a.view, a.crd.generation, a.crd.uid
			return s
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.opts.CRDs.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if a, ok := r.active[s.View.GVK().GroupKind()]; ok && !apierrors.IsNotFound(err) && a.profile == p.Name && equality.Semantic.DeepEqual(a.spec, p.Spec) {
			// A read that fails for a moment (an API server under load)
			// keeps the running kind and the limits it runs with: taken
			// for a CRD without schema, it would restart the kind twice
			// and run it unlimited in between.
			ctrl.LoggerFrom(ctx).Info("cannot read the kind's CRD; keeping the schema limits it runs with", "resource", s.Resource, "error", err.Error())
			s.View, s.CRDGeneration, s.CRDUID = a.view, a.crd.generation, a.crd.uid
			return s
		}
		// Built-in kinds have no CRD; without RBAC to read CRDs the kind
		// runs as it did before schema awareness.
		ctrl.LoggerFrom(ctx).Info("schema limits unknown: scaleplane cannot check its writes against the CRD's schema (M7, S2, C6)", "resource", s.Resource, "error", err.Error())
		return s
	}
	view, err := s.View.WithCRD(crd)
	if err != nil {
		s.View = nil
		s.Condition.Status, s.Condition.Reason = metav1.ConditionFalse, v1alpha1.ProfileReasonSchemaMismatch
		s.Condition.Message = err.Error()
		return s
	}
	s.View, s.CRDGeneration, s.CRDUID = view, crd.Generation, crd.UID
	return s
}

// withPruningNote adds to an active state's message the scale config
// fields its CRD's schema prunes: objects that set them lose them before
// admission, so the profile's status is where a user can learn why.
func withPruningNote(s State) State {
	if !s.Active() || s.View == nil {
		return s
	}
	if d := s.View.Layout().Schema.DroppedConfig; len(d) > 0 {
		s.Condition.Message += "; " + profile.DroppedConfigNote(s.View.Spec().ScaleConfig.Path, d)
	}
	return s
}

// accessRules are what scaleplane does on a profiled kind: the fan-out's
// patches, status.replicas and the selector, the trigger autoscaler's
// /scale writes, and the finalizers its HPA's owner reference needs
// (config/rbac/profiled_kinds_role.yaml, profile init's ClusterRole).
var accessRules = []struct{ sub, verb string }{
	{"", "get"}, {"", "list"}, {"", "watch"}, {"", "update"}, {"", "patch"},
	{"status", "get"}, {"status", "patch"}, {"status", "update"},
	{"scale", "get"}, {"scale", "update"}, {"scale", "patch"},
	{"finalizers", "update"},
}

// withAccess makes an active state RBACMissing when this process may not
// do everything accessRules lists on the kind, naming each missing verb.
// A kind already running under the same spec is not asked again. A review
// that cannot be made (no API, no scheme) is logged and does not block.
func (r *Reconciler) withAccess(ctx context.Context, p *v1alpha1.ScaleProfile, s State) State {
	if !s.Active() || r.opts.SkipAccessReview {
		return s
	}
	if a, ok := r.active[s.View.GVK().GroupKind()]; ok && a.profile == p.Name && equality.Semantic.DeepEqual(a.spec, p.Spec) {
		return s
	}
	gvr := s.View.GVR()
	var missing []string
	for _, rule := range accessRules {
		if rule.sub == "status" && !s.View.Admission() {
			// A built-in kind's status is its own controller's; its
			// profile names no status path (profile.BuiltIn).
			continue
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Subresource: rule.sub, Verb: rule.verb},
		}}
		if err := r.mgr.GetClient().Create(ctx, review); err != nil {
			ctrl.LoggerFrom(ctx).Info("cannot review scaleplane's access to a profiled kind; assuming it is granted", "resource", s.Resource, "error", err.Error())
			return s
		}
		if !review.Status.Allowed {
			res := gvr.Resource
			if rule.sub != "" {
				res += "/" + rule.sub
			}
			missing = append(missing, rule.verb+" "+res)
		}
	}
	if len(missing) == 0 {
		return s
	}
	s.View = nil
	s.Condition.Status, s.Condition.Reason = metav1.ConditionFalse, v1alpha1.ProfileReasonRBACMissing
	s.Condition.Message = fmt.Sprintf("scaleplane may not %s in %s; bind it a ClusterRole with these verbs (scaleplane profile init prints one)", strings.Join(missing, ", "), gvr.Group)
	return s
}

// apply makes want the active kinds: the dispatcher first (so webhooks
// judge a kind before its entries call them), then, on the leader, each
// kind's controller. It reports whether the set changed.
func (r *Reconciler) apply(want map[schema.GroupKind]*activeKind, leader bool) (bool, []error) {
	var errs []error
	changed := false
	stopCtx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	for gk, a := range r.active {
		w, ok := want[gk]
		if ok && w.profile == a.profile && w.crd == a.crd && equality.Semantic.DeepEqual(w.spec, a.spec) {
			w.runtime, w.stopAutoscaler = a.runtime, a.stopAutoscaler
			continue
		}
		changed = true
		if !ok || w.view.GVR() != a.view.GVR() {
			r.opts.Dispatcher.Deactivate(a.view.GVR())
		}
		if err := a.stop(stopCtx); err != nil {
			errs = append(errs, err)
		}
		delete(r.active, gk)
	}
	for gk, w := range want {
		if _, running := r.active[gk]; running {
			if (leader && w.runtime == nil) || (w.stopAutoscaler == nil && r.opts.StartAutoscaler != nil) {
				errs = append(errs, r.startRuntime(w, leader))
			}
			r.active[gk] = w
			continue
		}
		changed = true
		r.opts.Dispatcher.Activate(w.view)
		errs = append(errs, r.startRuntime(w, leader))
		r.active[gk] = w
	}
	return changed, errs
}

// startRuntime starts what of a's kind does not run yet: its controller
// (on the leader), then its trigger autoscaler (on every replica; its
// controller waits for the election). A failure leaves the rest to the
// next reconcile, which starts only what is missing.
func (r *Reconciler) startRuntime(a *activeKind, leader bool) error {
	if leader && a.runtime == nil {
		rt, err := controllers.NewKindRuntime(r.mgr, a.view, r.opts.Controllers)
		if err != nil {
			return err
		}
		if err := rt.Start(r.ctx); err != nil {
			return err
		}
		a.runtime = rt
	}
	if a.stopAutoscaler == nil && r.opts.StartAutoscaler != nil {
		stop, err := r.opts.StartAutoscaler(r.ctx, a.view)
		if err != nil {
			return fmt.Errorf("start the trigger autoscaler of %s: %w", a.view.GVK().Kind, err)
		}
		a.stopAutoscaler = stop
	}
	return nil
}

func (r *Reconciler) views() []*profile.Compiled {
	out := make([]*profile.Compiled, 0, len(r.active))
	for _, a := range r.active {
		out = append(out, a.view)
	}
	return out
}

// writeStatus patches p's status when the state changed it.
func (r *Reconciler) writeStatus(ctx context.Context, p *v1alpha1.ScaleProfile, s State) error {
	next := p.DeepCopy()
	apimeta.SetStatusCondition(&next.Status.Conditions, s.Condition)
	next.Status.Resource, next.Status.Scope, next.Status.ObservedGeneration = s.Resource, s.Scope, p.Generation
	if equality.Semantic.DeepEqual(p.Status, next.Status) {
		return nil
	}
	if err := r.mgr.GetClient().Status().Patch(ctx, next, client.MergeFrom(p)); err != nil {
		return fmt.Errorf("write the status of ScaleProfile %s: %w", p.Name, err)
	}
	return nil
}
