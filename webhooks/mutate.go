package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
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
	return &mutator{view: view, kind: kindLabel(view), dec: newDecoder(view.Layout()), paths: newPatchPaths(view.Layout())}
}

type mutator struct {
	view  *profile.Compiled
	kind  string
	dec   *decoder
	paths patchPaths
	// reference is the switch of the mutating webhook's fast paths. When
	// set, every request takes the reference path: default with the stored
	// object on every UPDATE, then diff the object before and after
	// WriteSpec (diffPatch, admission.PatchResponseFromRaw). When unset (as
	// NewMutator builds it), three shortcuts give the same answer cheaper:
	// mayFollowPins skips the stored object, writesSomething skips an empty
	// diff, and directPatch writes the patch without encoding the object.
	// BenchmarkMutate puts the reference path at about 4 times the
	// allocations and 3 to 10 times the time of the fast one; FuzzMutate
	// (checkReference) holds the two to the same answer.
	reference bool
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
	l := h.view.Layout()
	want, warns := scaling.DefaultWithWarnings(nil, cur, l)
	if req.Operation == admissionv1.Update && (h.reference || mayFollowPins(want)) {
		want, warns = scaling.DefaultWithWarnings(readOld(h.view, h.dec, req), cur, l)
	}
	// WriteSpec writes nothing else, so when these are equal the patch would
	// be empty; skipping the encode and diff keeps the common UPDATE cheap.
	var resp admission.Response
	if h.reference {
		resp = h.diffPatch(obj, want)
	} else if !writesSomething(cur, want) {
		resp = admission.Allowed("")
	} else if ops, ok := h.paths.directPatch(obj, cur, want); ok {
		resp = patchResponse(ops)
	} else {
		resp = h.diffPatch(obj, want)
	}
	// M7: values left out because the schema refuses them.
	resp.Warnings = append(resp.Warnings, warns...)
	return resp
}

// patchResponse is admission.PatchResponseFromRaw's answer for the patch
// ops.
func patchResponse(ops []jsonpatch.JsonPatchOperation) admission.Response {
	resp := admission.Response{Patches: ops, AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true}}
	if ops == nil {
		resp.Patches = []jsonpatch.JsonPatchOperation{}
	}
	if len(ops) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	}
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

// mayFollowPins reports whether the stored object could change what
// Default makes of the request, given d, the request defaulted as a CREATE.
// Only M3 reads the stored object, and it fires only when the request keeps
// a config pinned to the old count while changing replicas: then the
// request's config, completed by M2, is pinned to a count other than its
// replicas. Every other UPDATE is defaulted without decoding the stored
// object, which halves the cost of the common edit. FuzzMutate checks that
// skipping it never changes the result.
func mayFollowPins(d scaling.Workload) bool {
	return d.Replicas != nil && d.Config.Pinned() && *d.Config.MinReplicas != *d.Replicas
}

// writesSomething reports whether writing want over cur would change one of
// the fields Compiled.WriteSpec owns: R, C's bounds (or C's existence) and the
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
