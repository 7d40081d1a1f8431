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

	"github.com/scaleplane/scaleplane/config"
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
func NewMutator(view *config.View) admission.Handler {
	return &mutator{view: view, kind: kindLabel(view)}
}

type mutator struct {
	view *config.View
	kind string
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
	obj, err := decodeObject(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode %s: %w", h.kind, err))
	}
	cur, errs := h.view.Read(obj)
	if len(errs) > 0 {
		return admission.Allowed("not defaulted: the validating webhook reports the object's field errors")
	}
	want := scaling.Default(readOld(h.view, req), cur, h.view.Layout())
	// WriteSpec writes nothing else, so when these are equal the patch would
	// be empty; skipping the encode and diff keeps the common UPDATE cheap.
	if !writesSomething(cur, want) {
		return admission.Allowed("")
	}
	// obj is this request's own decoded copy; the original is req.Object.Raw,
	// which is what the patch is computed against.
	if err := h.view.WriteSpec(obj, want); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("default %s %q: %w", h.kind, obj.GetName(), err))
	}
	mutated, err := json.Marshal(obj.Object)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode defaulted %s %q: %w", h.kind, obj.GetName(), err))
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, mutated)
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

// writesSomething reports whether writing want over cur would change one of
// the fields View.WriteSpec owns: R, C's bounds (or C's existence) and the
// groups' members.
func writesSomething(cur, want scaling.Workload) bool {
	if !sameInt32(cur.Replicas, want.Replicas) {
		return true
	}
	switch {
	case (cur.Config == nil) != (want.Config == nil):
		return true
	case cur.Config != nil && (!sameInt32(cur.Config.MinReplicas, want.Config.MinReplicas) ||
		!sameInt32(cur.Config.MaxReplicas, want.Config.MaxReplicas)):
		return true
	}
	if len(cur.Groups) != len(want.Groups) {
		return true
	}
	for i := range cur.Groups {
		if !sameInt32(cur.Groups[i].Members, want.Groups[i].Members) {
			return true
		}
	}
	return false
}

func sameInt32(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
