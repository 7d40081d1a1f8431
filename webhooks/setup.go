package webhooks

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/scaleplane/scaleplane/internal/objects"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// Options configures the webhooks of Setup.
type Options struct {
	// Sources are the trigger sources of the autoscaler that reads the
	// triggers these webhooks admit: a trigger is accepted only when its
	// source is registered, supports its type and accepts what it reads
	// (V11), and its query is within the query limits (V10). Give the
	// autoscaler the same value. Nil refuses every trigger, which is right
	// for a process that runs no trigger autoscaler.
	Sources *scaling.Sources
	// OnReview, when set, is told about every review the handlers answer
	// (see ReviewHook). `scaleplane dev` prints each refusal with it.
	OnReview ReviewHook
}

// Setup serves the mutating, validating and /scale webhooks of every view
// on mgr's webhook server: a Dispatcher (NewDispatcher) with each view set
// up on it (Dispatcher.SetupKind). Two views of one resource are an error:
// their paths would collide. Call it once per manager; a manager that
// also runs ScaleProfiles builds its Dispatcher itself and sets its kinds
// up on it.
func Setup(mgr manager.Manager, views []*profile.Compiled, opts Options) error {
	seen := make(map[schema.GroupVersionResource]bool, len(views))
	for _, v := range views {
		gvr := v.GVR()
		if seen[gvr] {
			return fmt.Errorf("set up webhooks: two profiles name %s; keep one", gvr)
		}
		seen[gvr] = true
	}
	d, err := NewDispatcher(mgr, opts)
	if err != nil {
		return err
	}
	for _, v := range views {
		if err := d.SetupKind(v, opts); err != nil {
			return err
		}
	}
	return nil
}

// SetupKind activates view's kind for the manager's life, before the
// manager starts: a kind of the configuration file or of the library
// builder. It is Activate, with the kind's own options (a kind without a
// trigger autoscaler refuses triggers while another admits them), plus two
// things a kind known at start gets:
//
//   - its per-kind paths (MutatePath, ValidatePath, ValidateScalePath),
//     routed through the dispatcher to the same handlers as its dispatch
//     paths, for entries that still call them (perkind.go: a
//     compatibility route, removed in a later release, docs/upgrade.md);
//   - its informer, asked of the cache now, so that the first `kubectl
//     scale` does not wait for a list.
//
// A kind set up twice is an error that says so. The /scale handler reads
// parents from the manager's cache, as its scheme knows the kind (typed
// when registered there, so the embedding operator's informer serves it;
// unstructured otherwise), and falls back to its API reader.
func (d *Dispatcher) SetupKind(view *profile.Compiled, opts Options) error {
	if d.mgr == nil {
		return fmt.Errorf("set up webhooks for %s: the dispatcher has no manager; build it with NewDispatcher", view.GVR())
	}
	gvr := view.GVR()
	d.mu.Lock()
	had := d.perKind[gvr]
	d.perKind[gvr] = true
	d.mu.Unlock()
	if had {
		return fmt.Errorf("set up webhooks for %s: this manager's webhook server already serves it; set up each kind once", gvr)
	}
	d.activate(view, opts)
	d.servePerKindPaths(gvr)

	// Before the manager starts this only records the informer, it does
	// not wait. A kind whose CRD is not installed yet is not an error:
	// the handler's first read starts the informer then.
	if _, err := d.mgr.GetCache().GetInformer(context.Background(), objects.Prototype(d.mgr.GetScheme(), view.GVK())); err != nil {
		ctrl.Log.WithName("webhooks").Info("parent cache not prepared; the first /scale check reads through the API", "kind", view.GVK().String(), "reason", err.Error())
	}
	return nil
}

// registered reports whether srv already has a handler at exactly path
// (controller-runtime's Register panics on a duplicate).
func registered(srv webhook.Server, path string) bool {
	req, err := http.NewRequest(http.MethodPost, path, nil)
	if err != nil {
		return false
	}
	mux := srv.WebhookMux()
	if mux == nil {
		// controller-runtime makes the mux with the first Register.
		return false
	}
	_, pattern := mux.Handler(req)
	return pattern == path
}
