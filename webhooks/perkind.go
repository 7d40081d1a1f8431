package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The per-kind paths (MutatePath, ValidatePath, ValidateScalePath) are a
// compatibility route: entries written by older releases of the binary,
// and configurations an embedder rendered with an older library
// (Scaleplane.Configurations, webhooks.Configurations), call them. Every
// entry rendered or synced now calls the dispatcher's paths, and a
// start-up sync rewrites an old entry's path. docs/upgrade.md ("Per-kind
// webhook paths") says which release removes this file.

// servePerKindPaths registers gvr's per-kind paths on the dispatcher's
// webhook server, routed through the dispatcher: they answer with the
// handlers of the kind active now, exactly as its dispatch paths do.
func (d *Dispatcher) servePerKindPaths(gvr schema.GroupVersionResource) {
	// A request that is not an API server's AdmissionReview gets an HTTP
	// error, not an answer (server.go).
	srv := strictReviews(d.mgr.GetWebhookServer())
	srv.Register(MutatePath(gvr), &webhook.Admission{Handler: perKindRoute{d, gvr, roleMutate}})
	srv.Register(ValidatePath(gvr), &webhook.Admission{Handler: perKindRoute{d, gvr, roleValidate}})
	srv.Register(ValidateScalePath(gvr), &webhook.Admission{Handler: perKindRoute{d, gvr, roleScale}})
}

// perKindRoute serves one role of one kind at its per-kind path. It
// judges only its own resource (reviewHandler.misrouted), and routes by the
// review's own version, as the dispatch paths do: a review of another
// version of the resource is judged by that version's active kind, or
// refused while it has none, never by the view of the version the path
// names.
type perKindRoute struct {
	d    *Dispatcher
	gvr  schema.GroupVersionResource
	role string
}

func (r perKindRoute) Handle(ctx context.Context, req admission.Request) admission.Response {
	gvr := r.gvr
	gvr.Version = req.Resource.Version
	return r.d.handle(ctx, gvr, r.role, req)
}
