package webhooks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

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
// view on mgr's webhook server, at the paths MutatePath, ValidatePath and
// ValidateScalePath give. The /scale handler reads parents through mgr's
// client (give the manager Cache.Unstructured: true so that these reads are
// cached) and falls back to its API reader; Setup asks the cache for each
// kind's informer now, so the first `kubectl scale` does not wait for a
// list.
//
// Two views of one resource are an error: their paths would collide.
func Setup(mgr manager.Manager, views []*profile.Compiled, opts Options) error {
	srv := mgr.GetWebhookServer()
	if srv == nil {
		return fmt.Errorf("set up webhooks: the manager has no webhook server; give it one in manager.Options.WebhookServer")
	}
	// A request that is not an API server's AdmissionReview gets an HTTP
	// error, not an answer (server.go).
	srv = strictReviews(srv)
	seen := make(map[schema.GroupVersionResource]bool, len(views))
	for _, v := range views {
		gvr := v.GVR()
		if seen[gvr] {
			return fmt.Errorf("set up webhooks: two profiles name %s; keep one", gvr)
		}
		seen[gvr] = true
	}
	log := ctrl.Log.WithName("webhooks")
	for _, v := range views {
		gvr := v.GVR()
		srv.Register(MutatePath(gvr), &webhook.Admission{Handler: hooked(roleMutate, NewMutator(v), opts.OnReview)})
		srv.Register(ValidatePath(gvr), &webhook.Admission{Handler: hooked(roleValidate, NewValidator(v, opts.Sources), opts.OnReview)})
		srv.Register(ValidateScalePath(gvr), &webhook.Admission{Handler: hooked(roleScale, NewScaleValidator(v, mgr.GetClient(), mgr.GetAPIReader()), opts.OnReview)})

		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v.GVK())
		// Before the manager starts this only records the informer, it does
		// not wait. A kind whose CRD is not installed yet is not an error:
		// the handler's first read starts the informer then.
		if _, err := mgr.GetCache().GetInformer(context.Background(), u); err != nil {
			log.Info("parent cache not prepared; the first /scale check reads through the API", "kind", v.GVK().String(), "reason", err.Error())
		}
	}
	return nil
}
