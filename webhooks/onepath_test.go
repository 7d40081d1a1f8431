package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// unicodeSpaces are characters that strings.TrimSpace and bytes.TrimSpace
// treat as space but JSON does not (RFC 8259 allows only space, tab, LF and
// CR between tokens).
var unicodeSpaces = map[string]string{
	"U+00A0": "\u00a0",
	"U+2028": "\u2028",
	"VT":     "\v",
	"FF":     "\f",
}

// checkOnePath is the invariant a Unicode space once broke: what the validating
// webhook accepts, the mutating webhook can default without failing, and a
// patch it answers with applies to the object. It returns whether
// validation allowed the request.
func checkOnePath(t *testing.T, view *admissionPair, req admission.Request) bool {
	t.Helper()
	v := view.validator.Handle(context.Background(), req)
	m := view.mutator.Handle(context.Background(), req)
	if !v.Allowed {
		if v.Result == nil || v.Result.Code != http.StatusUnprocessableEntity && v.Result.Code != http.StatusBadRequest {
			t.Fatalf("validation refused with %+v, want a 422 or a 400", v.Result)
		}
		if m.Allowed && len(m.Patches) > 0 {
			t.Errorf("the mutating webhook patched an object validation refuses: %v", m.Patches)
		}
		return false
	}
	if !m.Allowed {
		t.Fatalf("validation allowed the object but the mutating webhook answered %d: %s", m.Result.Code, m.Result.Message)
	}
	if len(m.Patches) > 0 {
		data, err := json.Marshal(m.Patches)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := jsonpatchapply.DecodePatch(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := patch.Apply(req.Object.Raw); err != nil {
			t.Fatalf("patch %s does not apply: %v", data, err)
		}
	}
	return true
}

type admissionPair struct{ mutator, validator admission.Handler }

// TestUnicodeSpaceAnnotation holds: a
// config annotation starting or ending with a space that is not JSON
// whitespace passed validation (a hand-written path trimmed Unicode space)
// while the mutating webhook, decoding it with encoding/json to write M2's
// bound, answered 500, so the object could be neither created nor updated.
// One decoder reads it now: it is not JSON, so validation refuses it with a
// 422 at the annotation, and the mutating webhook leaves it alone.
func TestUnicodeSpaceAnnotation(t *testing.T) {
	view := testViews(t)[zonedDatabase]
	pair := &admissionPair{mutator: NewMutator(view), validator: NewValidator(view, testSources())}
	for name, space := range unicodeSpaces {
		for _, where := range []string{"leading", "trailing"} {
			t.Run(name+" "+where, func(t *testing.T) {
				ann := `{"minReplicas":2}`
				if where == "leading" {
					ann = space + ann
				} else {
					ann += space
				}
				// M2 fills maxReplicas, so defaulting rewrites the annotation.
				o := makeObj(zonedDatabase, "zdb").replicas(3).groups("eu-1", 3).annotate(annotationKey, ann)
				readable := makeObj(zonedDatabase, "zdb").replicas(3).groups("eu-1", 3).annotate(annotationKey, `{"minReplicas":2,"maxReplicas":3}`)
				// An update that keeps the stored annotation is ratcheted:
				// TestAnnotationConfigThatCannotBeReadIsRefusedOnUpdate.
				for _, req := range []admission.Request{create(view, o), update(view, readable, o)} {
					if checkOnePath(t, pair, req) {
						t.Errorf("%s: an annotation with %s %s was accepted; JSON has no such space", req.Operation, where, name)
					}
					resp := pair.validator.Handle(context.Background(), req)
					if resp.Result == nil || resp.Result.Details == nil || len(resp.Result.Details.Causes) != 1 ||
						resp.Result.Details.Causes[0].Field != "metadata.annotations[scaleplane.io/scale-config]" {
						t.Errorf("%s: refusal %+v, want one cause at the annotation", req.Operation, resp.Result)
					}
				}
			})
		}
	}
	// JSON's own whitespace around the config is fine, and defaulted.
	o := makeObj(zonedDatabase, "zdb").replicas(3).groups("eu-1", 3).annotate(annotationKey, " \t\r\n{\"minReplicas\":2} \n")
	if !checkOnePath(t, pair, create(view, o)) {
		t.Error("an annotation surrounded by JSON whitespace was refused")
	}
	if resp := pair.mutator.Handle(context.Background(), create(view, o)); len(resp.Patches) != 1 {
		t.Errorf("patch %v, want the annotation rewritten with maxReplicas", resp.Patches)
	}
	_ = admissionv1.Create
}
