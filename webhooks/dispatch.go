package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/internal/objects"
	"github.com/scaleplane/scaleplane/profile"
)

// Paths of the dispatcher: one handler per role, for every kind, under
// <prefix><group>/<version>/<resource> (the core group is "core").
const (
	DispatchMutatePrefix        = "/mutate/"
	DispatchValidatePrefix      = "/validate/"
	DispatchValidateScalePrefix = "/validate-scale/"
)

// DispatchPath is the dispatcher's path of one role's webhook for gvr;
// prefix is one of the Dispatch*Prefix constants.
func DispatchPath(prefix string, gvr schema.GroupVersionResource) string {
	return prefix + groupOrCore(gvr.Group) + "/" + gvr.Version + "/" + gvr.Resource
}

// Dispatcher serves the webhooks of kinds activated and deactivated while
// the process runs (ScaleProfiles): it is registered on
// the webhook server once, at the three Dispatch*Prefix paths, and routes
// each review by its request's group, version and resource to the handlers
// of the kind active now. A review of a kind that is not (or no longer)
// active is refused, failing closed as every scaleplane webhook does, with
// a message that says so; the configuration sync removes the kind's
// entries, so that window is short.
//
// Activate and Deactivate may be called at any time, from any goroutine;
// a review sees the set of kinds as it was when it arrived.
//
// The Dispatcher is the one way a kind's webhooks are served: a kind of
// the configuration file or of the library builder is activated on it
// before the manager starts (SetupKind), a ScaleProfile's kind while it
// runs (Activate).
type Dispatcher struct {
	opts   Options
	cached client.Reader
	live   client.Reader
	// mgr is the manager whose webhook server serves the dispatcher;
	// SetupKind registers per-kind paths on it and prepares informers in
	// its cache. Nil for a dispatcher built without a manager (tests).
	mgr manager.Manager

	mu    sync.Mutex // serialises writers of kinds and perKind
	kinds atomic.Pointer[map[schema.GroupVersionResource]*kindHandlers]
	// perKind are the kinds whose per-kind paths are registered (SetupKind).
	perKind map[schema.GroupVersionResource]bool
}

// kindHandlers are one kind's handlers.
type kindHandlers struct {
	view                    *profile.Compiled
	mutate, validate, scale admission.Handler
}

// newKindHandlers is the one construction of a kind's three handlers,
// kept in the dispatcher's map (activate) and served at its dispatch paths
// and, for a kind set up at start, its per-kind paths: /scale reads
// parents from cached, then live.
func newKindHandlers(view *profile.Compiled, cached, live client.Reader, opts Options) *kindHandlers {
	return &kindHandlers{
		view:     view,
		mutate:   hooked(roleMutate, NewMutator(view), opts.OnReview),
		validate: hooked(roleValidate, NewValidator(view, opts.Sources), opts.OnReview),
		scale:    hooked(roleScale, NewScaleValidator(view, cached, live), opts.OnReview),
	}
}

// NewDispatcher registers the dispatcher on mgr's webhook server. The
// /scale handlers read parents from mgr's cache as its scheme knows them
// and from its API reader (see SetupKind). Call it once per manager.
func NewDispatcher(mgr manager.Manager, opts Options) (*Dispatcher, error) {
	server := mgr.GetWebhookServer()
	if server == nil {
		return nil, fmt.Errorf("set up the webhook dispatcher: the manager has no webhook server; give it one in manager.Options.WebhookServer")
	}
	if registered(server, DispatchMutatePrefix) {
		return nil, fmt.Errorf("set up the webhook dispatcher: this manager's webhook server has one already")
	}
	d := newDispatcher(objects.Reader(mgr.GetCache(), mgr.GetScheme()), mgr.GetAPIReader(), opts)
	d.mgr = mgr
	srv := strictReviews(server)
	srv.Register(DispatchMutatePrefix, &webhook.Admission{Handler: d.role(roleMutate)})
	srv.Register(DispatchValidatePrefix, &webhook.Admission{Handler: d.role(roleValidate)})
	srv.Register(DispatchValidateScalePrefix, &webhook.Admission{Handler: d.role(roleScale)})
	return d, nil
}

func newDispatcher(cached, live client.Reader, opts Options) *Dispatcher {
	d := &Dispatcher{opts: opts, cached: cached, live: live, perKind: map[schema.GroupVersionResource]bool{}}
	empty := map[schema.GroupVersionResource]*kindHandlers{}
	d.kinds.Store(&empty)
	return d
}

// Activate serves view's kind from now on, replacing the handlers of a
// profile active for the same resource before (a changed profile).
func (d *Dispatcher) Activate(view *profile.Compiled) { d.activate(view, d.opts) }

// activate is the one activation of a kind: its handlers, built with opts,
// replace those of the same resource in the map every path reads.
func (d *Dispatcher) activate(view *profile.Compiled, opts Options) {
	h := newKindHandlers(view, d.cached, d.live, opts)
	d.update(func(m map[schema.GroupVersionResource]*kindHandlers) { m[view.GVR()] = h })
}

// Deactivate stops serving gvr: its reviews are refused from now on.
func (d *Dispatcher) Deactivate(gvr schema.GroupVersionResource) {
	d.update(func(m map[schema.GroupVersionResource]*kindHandlers) { delete(m, gvr) })
}

// Active are the compiled profiles served now, for the configuration sync.
func (d *Dispatcher) Active() []*profile.Compiled {
	m := *d.kinds.Load()
	out := make([]*profile.Compiled, 0, len(m))
	for _, h := range m {
		out = append(out, h.view)
	}
	return out
}

// update copies the map, changes the copy and publishes it: reviews in
// flight keep the map they loaded.
func (d *Dispatcher) update(change func(map[schema.GroupVersionResource]*kindHandlers)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := *d.kinds.Load()
	next := make(map[schema.GroupVersionResource]*kindHandlers, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	change(next)
	d.kinds.Store(&next)
}

// role is the admission handler of one role for every kind.
func (d *Dispatcher) role(role string) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		res := req.Resource
		gvr := schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Resource}
		wantSub := ""
		if role == roleScale {
			wantSub = "scale"
		}
		if req.SubResource != wantSub {
			of := gvr.GroupResource().String()
			if req.SubResource != "" {
				of += "/" + req.SubResource
			}
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("the review is of %q, which the %s webhook does not judge: point the webhook configuration's rules for it at its own path", of, role))
		}
		return d.handle(ctx, gvr, role, req)
	})
}

// handle answers req with the handler of role of gvr's active kind.
func (d *Dispatcher) handle(ctx context.Context, gvr schema.GroupVersionResource, role string, req admission.Request) admission.Response {
	h, ok := (*d.kinds.Load())[gvr]
	if !ok {
		return admission.Errored(http.StatusNotFound, fmt.Errorf("scaleplane has no active profile for %s %s; apply a ScaleProfile for it, or wait until its webhook entries are removed (kubectl get scaleprofiles shows why a profile is not active)", gvr.GroupResource(), gvr.Version))
	}
	switch role {
	case roleMutate:
		return h.mutate.Handle(ctx, req)
	case roleValidate:
		return h.validate.Handle(ctx, req)
	default:
		return h.scale.Handle(ctx, req)
	}
}
