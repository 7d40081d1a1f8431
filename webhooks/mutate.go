package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// NewMutator returns the mutating handler of view's kind: it applies the
// contract's defaulting (M1–M5, through [scaling.Default]) to CREATE and
// UPDATE requests and answers with a JSON patch, or with no patch when
// nothing changes (M6). Every other operation is allowed untouched.
//
// An object whose scaling fields cannot be read (a replicas count that is a
// string, a malformed config annotation) is allowed without a patch: the
// validating webhook refuses it with every field error in one 422, which is
// the one place users see admission problems. Defaulting half of such an
// object would only produce a patch for an object that is refused anyway.
func NewMutator(view *profile.Compiled) admission.Handler {
	return &mutator{view: view, kind: kindLabel(view), dec: newDecoder(view.Layout())}
}

// mutator takes one path for every request: decode, default (with the
// stored object on an UPDATE), write, diff the object before and after
// (diffPatch). The decoder is the one switch (see decoder): NewMutator's
// decodes only the fields the view reads, NewReferenceMutator's the whole
// object; FuzzMutate (checkReference) holds the two to the same answer.
type mutator struct {
	view *profile.Compiled
	kind string
	dec  *decoder
}

func (h *mutator) Handle(_ context.Context, req admission.Request) admission.Response {
	resp := h.handle(req)
	observe(roleMutate, h.kind, req.Operation, resp)
	return resp
}

func (h *mutator) handle(req admission.Request) admission.Response {
	if !createOrUpdate(req.Operation) {
		return admission.Allowed("")
	}
	obj, err := h.dec.decode(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode %s: %w", h.kind, err))
	}
	cur, errs := obj.read(h.view)
	if len(errs) > 0 {
		return admission.Allowed("not defaulted: the validating webhook reports the object's field errors")
	}
	want, warns := scaling.DefaultWithWarnings(readOld(h.view, h.dec, req), cur, h.view.Layout())
	resp := h.diffPatch(obj, want)
	// M7: values left out because the schema refuses them.
	resp.Warnings = append(resp.Warnings, warns...)
	return resp
}

// diffPatch answers with the patch that writing want gives, by definition:
// the diff between the decoded part of the object before and after
// WriteSpec. Every field in it sits at the path it has in the whole object,
// and nothing outside it changes, so the diff is the one the whole object
// would give, without walking managedFields twice more. FuzzMutate applies
// each patch to the whole object to prove it.
func (h *mutator) diffPatch(obj *object, want scaling.Workload) admission.Response {
	original, err := json.Marshal(obj.u.Object)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode %s %q: %w", h.kind, obj.u.GetName(), err))
	}
	if err := h.view.WriteSpec(obj.u, want); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("default %s %q: %w", h.kind, obj.u.GetName(), err))
	}
	mutated, err := json.Marshal(obj.u.Object)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode defaulted %s %q: %w", h.kind, obj.u.GetName(), err))
	}
	resp := admission.PatchResponseFromRaw(original, mutated)
	sortPatch(resp.Patches)
	return resp
}

// sortPatch orders a patch by path. jsonpatch walks maps in Go's random
// order, and M6 wants the same request to give the same patch, byte for
// byte, so that audit logs and tests can compare patches. Operations on
// distinct object keys commute; operations that add or remove list items do
// not (their order is kept), but defaulting never changes a list's length.
func sortPatch(ops []jsonpatch.JsonPatchOperation) {
	for _, op := range ops {
		last := op.Path[strings.LastIndexByte(op.Path, '/')+1:]
		if last == "-" || (last != "" && strings.Trim(last, "0123456789") == "") {
			return
		}
	}
	slices.SortFunc(ops, func(a, b jsonpatch.JsonPatchOperation) int { return strings.Compare(a.Path, b.Path) })
}

func sameInt32(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
