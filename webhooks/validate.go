package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// NewValidator returns the validating handler of view's kind. CREATE and
// UPDATE requests are checked with the view's read errors (wrong types, V9)
// and [scaling.Validate] (V1–V8, V10, V11) with sources, the trigger
// sources of the autoscaler (nil refuses every trigger: nothing would read
// it); every problem goes into one 422 Invalid
// whose causes carry the field paths, and the W1–W2 warnings are returned as
// admission warnings whether or not the request is allowed. Every other
// operation is allowed.
//
// Validation ratchets, as the API server's own CRD validation does: an
// UPDATE that leaves the scaling fields as they were stored is allowed even
// when they no longer pass (a profile's maxReplicas was lowered, a rule was
// added in a newer release), with each old problem returned as a warning.
// Otherwise an object could not even have its finalizers removed.
func NewValidator(view *profile.Compiled, sources *scaling.Sources) admission.Handler {
	return &validator{view: view, kind: kindLabel(view), dec: newDecoder(view.Layout()), sources: sources}
}

type validator struct {
	view    *profile.Compiled
	kind    string
	dec     *decoder
	sources *scaling.Sources
}

func (h *validator) Handle(_ context.Context, req admission.Request) admission.Response {
	resp := h.handle(req)
	observe(roleValidate, h.kind, req.Operation, resp)
	return resp
}

func (h *validator) handle(req admission.Request) admission.Response {
	if !createOrUpdate(req.Operation) {
		return admission.Allowed("")
	}
	obj, err := h.dec.decode(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode %s: %w", h.kind, err))
	}
	l := h.view.Layout()
	// A config with field errors is read as far as it goes, so that the
	// rules of its other fields report their problems in the same refusal.
	cur, readErrs := h.view.ReadPartly(obj.u)
	verrs, warns := scaling.Validate(cur, l, h.sources)
	if len(readErrs) > 0 {
		// Warnings judged from half a config could be wrong, and the rules
		// of a field that could not be read would report it twice.
		verrs, warns = besidesReadErrors(verrs, readErrs, l), nil
	}
	errs := append(readErrs, verrs...)
	if len(errs) == 0 {
		return admission.Allowed("").WithWarnings(warns...)
	}
	// The stored object serves only to ratchet, which can only take errors
	// away: it is decoded only for a request that has some.
	if h.keepsStored(req, obj, cur, len(readErrs) == 0) {
		for _, e := range errs {
			warns = append(warns, "kept unchanged although invalid: "+e.Error())
		}
		return admission.Allowed("").WithWarnings(warns...)
	}
	return invalid(h.view.GVK().GroupKind(), obj.u.GetName(), errs, warns)
}

// keepsStored reports whether an UPDATE leaves the scaling fields as they
// were stored, so that their problems are kept rather than refused: the
// fields hold the same values as the stored object's (an unreadable config
// only when it is the same unreadable config), or, when the request could
// be read, the same values as the stored object read (readable too) or as
// the mutating webhook leaves them. An object without a config before and
// with an unreadable one now has changed: it is judged as a new config.
func (h *validator) keepsStored(req admission.Request, obj *object, cur scaling.Workload, readable bool) bool {
	if req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return false
	}
	old, err := h.dec.decode(req.OldObject.Raw)
	if err != nil {
		return false
	}
	if h.view.SameScalingFields(obj.u, old.u) {
		return true
	}
	if !readable {
		return false
	}
	ow, oerrs := old.read(h.view)
	return len(oerrs) == 0 && unchanged(cur, ow, h.view.Layout())
}

// besidesReadErrors drops the rule errors that a read error makes moot: the
// errors at or under a field that could not be read (its rules saw it
// unset), and, when a bound of the config could not be read, the errors of
// the rules that compare against the bounds, which saw a default.
func besidesReadErrors(verrs, readErrs field.ErrorList, l scaling.Layout) field.ErrorList {
	cp := l.ConfigPath.String()
	boundsUnread := false
	for _, re := range readErrs {
		if re.Field == cp+".minReplicas" || re.Field == cp+".maxReplicas" {
			boundsUnread = true
		}
	}
	var out field.ErrorList
	for _, e := range verrs {
		if boundsUnread && (e.Field == cp+".minReplicas" || e.Field == cp+".maxReplicas" || e.Field == cp+".idle.replicasAtStart") {
			continue
		}
		if !slices.ContainsFunc(readErrs, func(re *field.Error) bool { return under(e.Field, re.Field) }) {
			out = append(out, e)
		}
	}
	return out
}

// under reports whether path p is at or under parent.
func under(p, parent string) bool {
	if !strings.HasPrefix(p, parent) {
		return false
	}
	rest := p[len(parent):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// unchanged reports whether cur holds the scaling fields old held, either
// as stored or as the mutating webhook leaves them for an unchanged spec
// (it may fan replicas out to groups that were stored unequal).
func unchanged(cur, old scaling.Workload, l scaling.Layout) bool {
	return sameScaling(cur, old) || sameScaling(cur, scaling.Default(&old, old, l))
}

func sameScaling(a, b scaling.Workload) bool {
	if !sameInt32(a.Replicas, b.Replicas) || len(a.Groups) != len(b.Groups) {
		return false
	}
	for i := range a.Groups {
		if a.Groups[i].Name != b.Groups[i].Name || !sameInt32(a.Groups[i].Members, b.Groups[i].Members) {
			return false
		}
	}
	// Semantic equality compares quantities by value, so a config the API
	// server re-encoded still counts as unchanged, and treats nil and empty
	// lists alike. It runs only for a request with errors (ratcheting).
	return equality.Semantic.DeepEqual(a.Config, b.Config)
}
