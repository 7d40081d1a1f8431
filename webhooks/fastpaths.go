package webhooks

import (
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// FastPaths selects the admission shortcuts a handler takes; NewMutator and
// NewValidator take all of them. The zero value is the reference path:
// decode the whole object, default with the stored object on every UPDATE,
// diff the object before and after (admission.PatchResponseFromRaw). It
// exists for the benchmarks that weigh each shortcut against the reference
// (BenchmarkUpdateLatency in e2e/admission); docs/design.md has the figures.
type FastPaths struct {
	// Decode decodes only the fields the view reads (newDecoder).
	Decode bool
	// Mutate skips the stored object when M3 cannot concern it
	// (mayFollowPins), the diff when nothing is written (writesSomething),
	// and writes the patch from the values (directPatch).
	Mutate bool
}

// NewMutatorWithFastPaths is NewMutator with the shortcuts fp selects.
func NewMutatorWithFastPaths(view *profile.Compiled, fp FastPaths) admission.Handler {
	return &mutator{view: view, kind: kindLabel(view), dec: fp.decoder(view), paths: newPatchPaths(view.Layout()), reference: !fp.Mutate}
}

// NewValidatorWithFastPaths is NewValidator with the shortcuts fp selects.
func NewValidatorWithFastPaths(view *profile.Compiled, sources *scaling.Sources, fp FastPaths) admission.Handler {
	return &validator{view: view, kind: kindLabel(view), dec: fp.decoder(view), sources: sources}
}

func (fp FastPaths) decoder(view *profile.Compiled) *decoder {
	if fp.Decode {
		return newDecoder(view.Layout())
	}
	return wholeDecoder()
}
