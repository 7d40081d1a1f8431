package webhooks

import (
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// NewReferenceMutator is NewMutator on the reference path: it decodes the
// whole object (every field, managedFields and status included) where
// NewMutator decodes only the fields the view reads, and so diffs the whole
// object. That decoder is admission's one fast path, and this is its
// switch; everything after the decode is the same code. It exists for the
// differential tests (FuzzMutate) and the benchmarks that weigh the fast
// path (BenchmarkUpdateLatency in e2e/admission, BenchmarkLargeObject);
// docs/design.md has the figures.
func NewReferenceMutator(view *profile.Compiled) admission.Handler {
	return &mutator{view: view, kind: kindLabel(view), dec: wholeDecoder()}
}

// NewReferenceValidator is NewValidator on the reference path: it decodes
// the whole object, as NewReferenceMutator does.
func NewReferenceValidator(view *profile.Compiled, sources *scaling.Sources) admission.Handler {
	return &validator{view: view, kind: kindLabel(view), dec: wholeDecoder(), sources: sources}
}
