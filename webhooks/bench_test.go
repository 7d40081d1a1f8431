package webhooks

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// benchObjects are three-rack RackedClusters with a full scale config: one
// with metrics and one with PromQL triggers (V6 forbids both in one valid
// object), plus one with both, which validation refuses.
func benchObjects() map[string]*objBuilder {
	both := fullConfig()
	both["triggers"] = fullTriggerConfig()["triggers"]
	racks := func(b *objBuilder) *objBuilder { return b.groups("rack-a", 3, "rack-b", 3, "rack-c", 3) }
	return map[string]*objBuilder{
		"metrics":  racks(makeObj(rackedCluster, "db").replicas(3).config(fullConfig())),
		"triggers": racks(makeObj(rackedCluster, "db").replicas(3).config(fullTriggerConfig())),
		"invalid":  racks(makeObj(rackedCluster, "db").replicas(3).config(both)),
	}
}

func benchReview(b *testing.B, h admission.Handler, req admission.Request, wantAllowed bool, wantPatch bool) {
	b.Helper()
	if resp := h.Handle(context.Background(), req); resp.Allowed != wantAllowed || (len(resp.Patches) > 0) != wantPatch {
		b.Fatalf("allowed=%v patches=%d, want allowed=%v patch=%v", resp.Allowed, len(resp.Patches), wantAllowed, wantPatch)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.Handle(context.Background(), req)
	}
}

// BenchmarkMutate measures one mutating review: "update" is the common case
// (an edit of an object that is already defaulted: no patch), "create" needs
// the fan-out to three racks and M2's bounds, so it encodes and diffs.
func BenchmarkMutate(b *testing.B) {
	view := testViews(b)[rackedCluster]
	h := NewMutator(view)
	for name, o := range benchObjects() {
		if name == "invalid" {
			continue
		}
		b.Run(name+"/update", func(b *testing.B) {
			benchReview(b, h, update(view, o, o), true, false)
		})
		b.Run(name+"/create", func(b *testing.B) {
			needs := benchObjects()[name].replicas(4)
			delete(needs.o["spec"].(obj)["scaleConfig"].(obj), "maxReplicas")
			benchReview(b, h, create(view, needs), true, true)
		})
	}
}

// BenchmarkValidate measures one validating review of an UPDATE (old and
// new object both read), allowed for "metrics" and "triggers" (PromQL
// parsing included) and refused with a 422 for "invalid".
func BenchmarkValidate(b *testing.B) {
	view := testViews(b)[rackedCluster]
	h := NewValidator(view)
	for name, o := range benchObjects() {
		b.Run(name, func(b *testing.B) {
			benchReview(b, h, update(view, o, o), name != "invalid", false)
		})
	}
}
