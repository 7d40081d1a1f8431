package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// NewScaleValidator returns the validating handler of view's /scale
// subresource. It only translates: it decodes the autoscaling/v1 Scale,
// reads the parent when scaling.ScaleNeedsParent says the answer depends on
// it, and answers what scaling.CheckScale (S1) decides.
//
// The parent is read from cached, normally the manager's cache, and from
// live (the manager's API reader) when the cache does not have the exact
// version the Scale was built from: the API server builds the Scale from the
// stored object, so its resourceVersion is the parent's, and a range just
// written with kubectl apply must not be judged by a stale copy. live may be
// nil to trust the cache alone.
func NewScaleValidator(view *profile.Compiled, cached, live client.Reader) admission.Handler {
	l := view.Layout()
	p := view.Spec()
	h := &scaleValidator{view: view, kind: kindLabel(view), cached: cached, live: live}
	if l.ConfigInAnnotation {
		h.names = scaling.ScaleNames{
			Config: "the annotation " + p.ScaleConfig.Annotation,
			Min:    fmt.Sprintf("minReplicas in the annotation %s", p.ScaleConfig.Annotation),
			Max:    fmt.Sprintf("maxReplicas in the annotation %s", p.ScaleConfig.Annotation),
		}
	} else {
		h.names = scaling.ScaleNames{
			Config: l.ConfigPath.String(),
			Min:    l.ConfigPath.Child("minReplicas").String(),
			Max:    l.ConfigPath.Child("maxReplicas").String(),
		}
	}
	return h
}

type scaleValidator struct {
	view   *profile.Compiled
	kind   string
	cached client.Reader
	live   client.Reader
	// names are how refusals name C and its bounds for this profile.
	names scaling.ScaleNames
}

func (h *scaleValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := h.handle(ctx, req)
	observe(roleScale, h.kind, req.Operation, resp)
	return resp
}

func (h *scaleValidator) handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var s autoscalingv1.Scale
	if err := json.Unmarshal(req.Object.Raw, &s); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode the autoscaling/v1 Scale of %s %q: %w", h.kind, req.Name, err))
	}
	in := scaling.ScaleRequest{Replicas: s.Spec.Replicas}
	var old autoscalingv1.Scale
	if len(req.OldObject.Raw) > 0 && json.Unmarshal(req.OldObject.Raw, &old) == nil {
		in.OldReplicas = &old.Spec.Replicas
	}
	l := h.view.Layout()
	if scaling.ScaleNeedsParent(in, l) {
		parent, err := h.parent(ctx, req, s.ResourceVersion)
		switch {
		case apierrors.IsNotFound(err):
			// The API server answers the write with NotFound itself.
			return admission.Allowed("")
		case err != nil:
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("read %s %s/%s to check the scale range: %w; retry", h.kind, req.Namespace, req.Name, err))
		}
		w, _ := h.view.Read(parent)
		in.Parent = &w
	}
	if ferr := scaling.CheckScale(in, l, h.names); ferr != nil {
		return invalid(h.view.GVK().GroupKind(), req.Name, field.ErrorList{ferr}, nil)
	}
	return admission.Allowed("")
}

// parent reads the workload whose Scale is being written, at version rv
// when the cache has it.
func (h *scaleValidator) parent(ctx context.Context, req admission.Request, rv string) (*unstructured.Unstructured, error) {
	key := client.ObjectKey{Namespace: req.Namespace, Name: req.Name}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(h.view.GVK())
	err := h.cached.Get(ctx, key, u)
	if h.live == nil || (err == nil && (rv == "" || u.GetResourceVersion() == rv)) {
		return u, err
	}
	u = &unstructured.Unstructured{}
	u.SetGroupVersionKind(h.view.GVK())
	return u, h.live.Get(ctx, key, u)
}
