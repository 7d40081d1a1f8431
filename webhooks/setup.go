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

// Setup registers the mutating, validating and /scale handlers of every
// view on mgr's webhook server (SetupKind for each). Two views of one
// resource are an error: their paths would collide.
func Setup(mgr manager.Manager, views []*profile.Compiled, opts Options) error {
	seen := make(map[schema.GroupVersionResource]bool, len(views))
	for _, v := range views {
		gvr := v.GVR()
		if seen[gvr] {
			return fmt.Errorf("set up webhooks: two profiles name %s; keep one", gvr)
		}
		seen[gvr] = true
	}
	for _, v := range views {
		if err := SetupKind(mgr, v, opts); err != nil {
			return err
		}
	}
	return nil
}

// SetupKind registers the mutating, validating and /scale handlers of one
// view on mgr's webhook server, at the paths MutatePath, ValidatePath and
// ValidateScalePath give; call it once per kind. The handlers are built
// as the Dispatcher's (one construction); the scaleplane binary serves
// these per-kind paths only for entries an older release wrote
// (docs/upgrade.md), the library builder for the configurations it
// renders. A kind already registered
// on the server is an error that says so.
//
// The /scale handler reads parents from mgr's cache, as mgr's scheme knows
// the kind (typed when registered there, so the embedding operator's
// informer serves it; unstructured otherwise; no manager-wide
// Cache.Unstructured is needed), and falls back to mgr's API reader.
// SetupKind asks the cache for the kind's informer now, so the first
// `kubectl scale` does not wait for a list.
func SetupKind(mgr manager.Manager, v *profile.Compiled, opts Options) error {
	server := mgr.GetWebhookServer()
	if server == nil {
		return fmt.Errorf("set up webhooks: the manager has no webhook server; give it one in manager.Options.WebhookServer")
	}
	gvr := v.GVR()
	if registered(server, MutatePath(gvr)) {
		return fmt.Errorf("set up webhooks for %s: this manager's webhook server already serves it; set up each kind once", gvr)
	}
	// A request that is not an API server's AdmissionReview gets an HTTP
	// error, not an answer (server.go).
	srv := strictReviews(server)
	h := newKindHandlers(v, objects.Reader(mgr.GetCache(), mgr.GetScheme()), mgr.GetAPIReader(), opts)
	srv.Register(MutatePath(gvr), &webhook.Admission{Handler: h.mutate})
	srv.Register(ValidatePath(gvr), &webhook.Admission{Handler: h.validate})
	srv.Register(ValidateScalePath(gvr), &webhook.Admission{Handler: h.scale})

	// Before the manager starts this only records the informer, it does
	// not wait. A kind whose CRD is not installed yet is not an error:
	// the handler's first read starts the informer then.
	if _, err := mgr.GetCache().GetInformer(context.Background(), objects.Prototype(mgr.GetScheme(), v.GVK())); err != nil {
		ctrl.Log.WithName("webhooks").Info("parent cache not prepared; the first /scale check reads through the API", "kind", v.GVK().String(), "reason", err.Error())
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
