package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/profile"
)

// fuzzKinds are the kinds a fuzz input's first byte picks from.
var fuzzKinds = []string{rackedCluster, function, workerGroup, zonedDatabase}

// seedObjects are valid and invalid objects of every kind: the fuzz seed
// corpus, run as plain tests by `go test`.
func seedObjects() []*objBuilder {
	var out []*objBuilder
	for _, kind := range fuzzKinds {
		cfg := fullConfig()
		if kind == function {
			cfg = obj{"minReplicas": 1, "maxReplicas": 4}
		}
		out = append(out,
			makeObj(kind, "valid-full").replicas(3).config(cfg).groups("a", 3, "b", 3, "c", 3),
			makeObj(kind, "valid-triggers").replicas(1).config(fullTriggerConfig()).groups("a", 1),
			makeObj(kind, "defaults-needed").replicas(4).groups("a", 1, "b", absent),
			makeObj(kind, "range-no-replicas").config(obj{"minReplicas": 2, "maxReplicas": 5}),
			makeObj(kind, "bare"),
			makeObj(kind, "negative").replicas(-4).config(obj{"minReplicas": 5, "maxReplicas": 1}).groups("a", -1, "a", 2),
			makeObj(kind, "wrong-types").set(".spec.replicas", "3").set(".spec.scaleConfig", list{1}).set(".spec.racks", obj{"a": 1}),
			makeObj(kind, "bad-policies").replicas(2).config(obj{"minReplicas": 1, "maxReplicas": 3, "behavior": obj{"scaleUp": obj{
				"selectPolicy": "Fastest", "policies": list{obj{"type": "Pods", "value": 0, "periodSeconds": 1801}}}}}),
			makeObj(kind, "bad-schedule").replicas(2).config(obj{"minReplicas": 1, "maxReplicas": 3, "schedule": obj{"timeZone": "Nowhere/Land", "wakeUp": list{"25:00"}}}),
		)
	}
	out = append(out,
		makeObj(zonedDatabase, "annotation-unknown-field").annotate(annotationKey, `{"minReplicas":1,"bogus":true}`),
		makeObj(zonedDatabase, "annotation-not-json").annotate(annotationKey, `{"minReplicas":`),
		makeObj(zonedDatabase, "annotation-null").annotate(annotationKey, `null`).replicas(2),
		makeObj(rackedCluster, "huge").replicas(2147483647).groups("a", 1),
	)
	return out
}

func addSeeds(f *testing.F) {
	for i, b := range seedObjects() {
		k := kindIndex(b.kind)
		f.Add(k, b.raw(), []byte(nil))
		// The same object as an UPDATE from a pinned older one (M3 paths).
		old := makeObj(b.kind, "old").replicas(i % 5).config(obj{"minReplicas": i % 5, "maxReplicas": i % 5})
		f.Add(k, b.raw(), old.raw())
	}
	f.Add(uint8(0), []byte(`null`), []byte(nil))
	f.Add(uint8(0), []byte(`{"spec":5,"metadata":{"generation":"x"}}`), []byte(`{"spec":null}`))
	f.Add(uint8(3), []byte(`{"metadata":{"annotations":{"scaleplane.io/scale-config":7}},"spec":{"topology":[]}}`), []byte(nil))
	f.Add(uint8(1), []byte(`{"spec":{"replicas":1e400}}`), []byte(`{}`))
	f.Add(uint8(2), []byte(`{"spec":{"replicas":1.5,"scalePolicy":{"minReplicas":-0}}}`), []byte(nil))
	f.Add(uint8(3), []byte(`{"metadata":{"annotations":{"scaleplane.io/scale-config":"{\"minReplicas\":1,\"minReplicas\":2}"}}}`), []byte(nil))
	// Spaces JSON does not allow around an annotation
	// that defaulting rewrites (M2 fills maxReplicas).
	for _, space := range unicodeSpaces {
		for _, ann := range []string{space + `{"minReplicas":2}`, `{"minReplicas":2}` + space} {
			o := makeObj(zonedDatabase, "zdb").replicas(3).groups("eu-1", 3).annotate(annotationKey, ann)
			f.Add(kindIndex(zonedDatabase), o.raw(), []byte(nil))
			f.Add(kindIndex(zonedDatabase), o.raw(), o.raw())
		}
	}
}

func kindIndex(kind string) uint8 {
	for i, k := range fuzzKinds {
		if k == kind {
			return uint8(i)
		}
	}
	panic(kind)
}

func fuzzRequest(views map[string]*profile.Compiled, k uint8, object, old []byte) (*profile.Compiled, admission.Request) {
	view := views[fuzzKinds[int(k)%len(fuzzKinds)]]
	op := admissionv1.Create
	if len(old) > 0 {
		op = admissionv1.Update
	}
	return view, request(view, op, "fuzz", object, old)
}

// isObject reports whether data is one JSON object, the only body the
// webhooks accept.
func isObject(data []byte) bool {
	var m map[string]interface{}
	return json.Unmarshal(data, &m) == nil && m != nil
}

// FuzzMutate: whatever the object, the mutating webhook never panics, and
// either allows with a patch that applies to the object and gives a JSON
// object that needs no further patch (M6), or refuses a body that is not a
// JSON object as a bad request.
func FuzzMutate(f *testing.F) {
	addSeeds(f)
	views := testViews(f)
	f.Fuzz(func(t *testing.T, k uint8, object, old []byte) {
		view, req := fuzzRequest(views, k, object, old)
		checkReference(t, "mutating", NewMutator(view), NewReferenceMutator(view), req)
		checkDecoder(t, view, object)
		h := NewMutator(view)
		resp := h.Handle(context.Background(), req)
		if !resp.Allowed {
			if resp.Result == nil || resp.Result.Code != http.StatusBadRequest || isObject(object) {
				t.Fatalf("refused a JSON object (or with the wrong code): %+v", resp.Result)
			}
			return
		}
		if len(resp.Patches) == 0 {
			return
		}
		patchJSON, err := json.Marshal(resp.Patches)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := jsonpatchapply.DecodePatch(patchJSON)
		if err != nil {
			t.Fatalf("patch %s does not decode: %v", patchJSON, err)
		}
		patched, err := patch.Apply(object)
		if err != nil {
			t.Fatalf("patch %s does not apply to %s: %v", patchJSON, object, err)
		}
		if !isObject(patched) {
			t.Fatalf("patched object is not a JSON object: %s", patched)
		}
		// M6: defaulting the defaulted object changes nothing.
		req.Object.Raw = patched
		if again := h.Handle(context.Background(), req); !again.Allowed || len(again.Patches) > 0 {
			t.Fatalf("a defaulted object was patched again: %s\nfirst patch %s\nsecond %+v", patched, patchJSON, again.Patches)
		}
	})
}

// checkDecoder: the decoder made for the view (newDecoder, which skips what
// the view does not read) gives the view the same values and the same field
// errors as the reference decode of the whole object into unstructured form.
func checkDecoder(t *testing.T, view *profile.Compiled, raw []byte) {
	t.Helper()
	var whole map[string]interface{}
	if kjson.UnmarshalCaseSensitivePreserveInts(raw, &whole) != nil || whole == nil {
		return
	}
	o, err := newDecoder(view.Layout()).decode(raw)
	if err != nil {
		t.Fatalf("the view's decoder refused %s, which decodes whole: %v", raw, err)
	}
	gotW, gotErrs := o.read(view)
	wantW, wantErrs := view.Read(&unstructured.Unstructured{Object: whole})
	if diff := cmp.Diff(wantW, gotW); diff != "" {
		t.Fatalf("the view's decoder reads %s unlike the whole decode (-whole +view's):\n%s", raw, diff)
	}
	messages := func(errs field.ErrorList) []string {
		var m []string
		for _, e := range errs {
			m = append(m, e.Error())
		}
		return m
	}
	if diff := cmp.Diff(messages(wantErrs), messages(gotErrs)); diff != "" {
		t.Fatalf("the view's decoder reports %s unlike the whole decode (-whole +view's):\n%s", raw, diff)
	}
}

// checkReference: a webhook answers as it does on the reference path
// (NewReferenceMutator, NewReferenceValidator, which decode the whole
// object): the same allowed or refused, the same patch operations, the same
// warnings and the same causes. An empty patch and no patch are the same
// answer to the API server.
func checkReference(t *testing.T, role string, fast, ref admission.Handler, req admission.Request) {
	t.Helper()
	type answer struct {
		Allowed  bool
		Code     int32
		Patches  []jsonpatch.JsonPatchOperation
		Warnings []string
		Causes   []metav1.StatusCause
	}
	norm := func(r admission.Response) answer {
		a := answer{Allowed: r.Allowed, Patches: r.Patches, Warnings: r.Warnings}
		if !r.Allowed && r.Result != nil {
			a.Code = r.Result.Code
			if r.Result.Details != nil {
				a.Causes = r.Result.Details.Causes
			}
		}
		if len(a.Patches) == 0 {
			a.Patches = nil
		}
		return a
	}
	want := norm(ref.Handle(context.Background(), req))
	got := norm(fast.Handle(context.Background(), req))
	if !want.Allowed && want.Code == http.StatusBadRequest && got.Code == http.StatusBadRequest {
		// Both refuse a body that does not decode; they may name
		// different reasons.
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the %s webhook answers %s unlike the reference path (-reference +view's decoder):\n%s", role, req.Object.Raw, diff)
	}
}

// FuzzValidate: the validating webhook never panics, never patches, and
// either allows or refuses with a 422 whose every cause names a field (or
// with a 400 for a body that is not a JSON object).
func FuzzValidate(f *testing.F) {
	addSeeds(f)
	views := testViews(f)
	f.Fuzz(func(t *testing.T, k uint8, object, old []byte) {
		view, req := fuzzRequest(views, k, object, old)
		checkReference(t, "validating", NewValidator(view, testSources()), NewReferenceValidator(view, testSources()), req)
		resp := NewValidator(view, testSources()).Handle(context.Background(), req)
		if len(resp.Patches) > 0 || resp.PatchType != nil {
			t.Fatalf("validation patched: %+v", resp.Patches)
		}
		if resp.Allowed {
			return
		}
		st := resp.Result
		switch {
		case st == nil:
			t.Fatal("refused without a status")
		case st.Code == http.StatusBadRequest:
			if isObject(object) {
				t.Fatalf("a JSON object refused as a bad request: %s", st.Message)
			}
		case st.Code == http.StatusUnprocessableEntity:
			if st.Details == nil || len(st.Details.Causes) == 0 {
				t.Fatalf("422 without causes: %+v", st)
			}
			for _, c := range st.Details.Causes {
				if c.Field == "" || c.Message == "" {
					t.Fatalf("cause without a field or message: %+v", c)
				}
			}
		default:
			t.Fatalf("refused with code %d: %s", st.Code, st.Message)
		}
	})
}

// TestSeedCorpusSize guards the seed corpus' breadth, which the report
// quotes.
func TestSeedCorpusSize(t *testing.T) {
	if n := len(seedObjects()); n < 30 {
		t.Errorf("%d seed objects, want at least 30", n)
	}
}
