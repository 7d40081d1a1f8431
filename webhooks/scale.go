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
// subresource (S1). A /scale write never reaches the main resource's
// webhooks, so this is the only place an out-of-range `kubectl scale` can be
// refused. It decodes the autoscaling/v1 Scale, reads the parent and refuses
// replicas below 0, above the profile's upper bound (V1, which the main
// resource's validation would otherwise only catch on the next edit), or
// outside [minReplicas, maxReplicas] while the parent's scale config has a
// range that an autoscaler of the workload itself acts in, saying which
// bound to move. Everything else is allowed: the controller fans the new
// count out to groups and re-pins a pinned config. For a kind whose HPA
// targets a child object the range is the child's, and a count written
// through the parent's /scale selects external scaling (W2), so it is not
// held to the range.
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
		h.minName = fmt.Sprintf("minReplicas in the annotation %s", p.ScaleConfig.Annotation)
		h.maxName = fmt.Sprintf("maxReplicas in the annotation %s", p.ScaleConfig.Annotation)
		h.configName = "the annotation " + p.ScaleConfig.Annotation
	} else {
		h.minName = l.ConfigPath.Child("minReplicas").String()
		h.maxName = l.ConfigPath.Child("maxReplicas").String()
		h.configName = l.ConfigPath.String()
	}
	return h
}

type scaleValidator struct {
	view   *profile.Compiled
	kind   string
	cached client.Reader
	live   client.Reader
	// How messages name C and its bounds for this profile.
	configName, minName, maxName string
}

// scaleReplicasPath is where a Scale keeps its count, whatever the parent's
// replicas path: the request being judged is the Scale.
var scaleReplicasPath = field.NewPath("spec", "replicas")

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
	r := s.Spec.Replicas
	gk := h.view.GVK().GroupKind()
	refuse := func(detail string) admission.Response {
		return invalid(gk, req.Name, field.ErrorList{field.Invalid(scaleReplicasPath, r, detail)}, nil)
	}
	if r < 0 {
		return refuse("must be greater than or equal to 0")
	}
	// A write that keeps the count (an HPA or KEDA re-asserting it) is not a
	// scaling decision; refusing it would only fail their reconcile loop.
	var old autoscalingv1.Scale
	if len(req.OldObject.Raw) > 0 && json.Unmarshal(req.OldObject.Raw, &old) == nil && old.Spec.Replicas == r {
		return admission.Allowed("")
	}
	l := h.view.Layout()
	if l.MaxReplicas > 0 && r > l.MaxReplicas {
		return refuse(fmt.Sprintf("must be less than or equal to %d, the upper bound this kind's profile allows; scale to %d or less, or raise the profile's maxReplicas", l.MaxReplicas, l.MaxReplicas))
	}

	parent, err := h.parent(ctx, req, s.ResourceVersion)
	if apierrors.IsNotFound(err) {
		// The API server answers the write with NotFound itself.
		return admission.Allowed("")
	}
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("read %s %s/%s to check the scale range: %w; retry", h.kind, req.Namespace, req.Name, err))
	}
	w, _ := h.view.Read(parent)
	// S2: a count whose follow-up writes (C1) the schema refuses could
	// never be carried to the pin or the member groups.
	if e := scaling.ScaleFollowUp(w, r, l); e != nil {
		return invalid(gk, req.Name, field.ErrorList{e}, nil)
	}
	// With the HPA on a child (Kyma's runtime Deployment), the range is the
	// child's; a count written here switches the workload to external
	// scaling, where the config is ignored (W2), so it is not judged by it.
	if !l.TargetSelf {
		return admission.Allowed("")
	}
	if w.Config == nil {
		return admission.Allowed("")
	}
	// The config as it is judged everywhere else: with M2's defaults for
	// missing bounds.
	c := scaling.Default(nil, w, l).Config
	if !c.HasRange() {
		return admission.Allowed("")
	}
	lo, hi := *c.MinReplicas, *c.MaxReplicas
	switch {
	case r > hi:
		return refuse(fmt.Sprintf("outside the autoscaling range [%d, %d] of %s; raise %s to %d or more, or pin the config (minReplicas = maxReplicas) to scale by hand",
			lo, hi, h.configName, h.maxName, r))
	case r < lo:
		return refuse(fmt.Sprintf("outside the autoscaling range [%d, %d] of %s; lower %s to %d or less, or pin the config (minReplicas = maxReplicas) to scale by hand",
			lo, hi, h.configName, h.minName, r))
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
