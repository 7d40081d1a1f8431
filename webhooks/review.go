package webhooks

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Review is one admission review a handler has answered, as a ReviewHook
// sees it: the request the API server sent (already decoded by the
// transport, so a hook decodes nothing again) and the answer going back.
type Review struct {
	// Webhook is the role that answered: "mutate", "validate" or "scale".
	Webhook  string
	Request  admission.Request
	Response admission.Response
}

// ReviewHook is told about every review after it is answered and before
// the answer is sent. It runs on the request's goroutine, so it must be
// quick and must not block (print a line, count, queue).
type ReviewHook func(ctx context.Context, r Review)

// hooked calls hook after h answers; with no hook it is h itself.
func hooked(role string, h admission.Handler, hook ReviewHook) admission.Handler {
	if hook == nil {
		return h
	}
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		resp := h.Handle(ctx, req)
		hook(ctx, Review{Webhook: role, Request: req, Response: resp})
		return resp
	})
}
