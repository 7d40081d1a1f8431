package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/scaling"
)

// The decode differential test: the scale
// config read through Compiled.Read, at a spec path and in an annotation,
// against sigs.k8s.io/json's strict decoding of the same bytes into a
// scaling.Config ("std" below). When std accepts the bytes, the compiled
// profile reads the same Config; when the compiled profile refuses them,
// std refuses them too. The differences are intended, each is asserted
// where it occurs, and they all come from one choice: the compiled profile
// reads a config as the API server holds an object, in unstructured form
// (sigs.k8s.io/json, numbers int64 or float64), where std decodes the text
// straight into typed fields.
//
//   - D1 no config: an annotation that is empty, JSON whitespace only, or
//     null, and a spec path holding null, is no config (nil); std gives an
//     error or a zero Config.
//   - D2 duplicate keys: the last wins, as in any object the API server
//     decodes; std's strict mode refuses them.
//   - D3 an integral number written with a fraction or an exponent (1.0,
//     5e0) fills an integer field, as the API server's schema validation
//     accepts it in a custom resource; std refuses it.
//   - D4 a number is a float64 (int64 when written as an integer): in a
//     quantity field it has the float64's value and the format that value
//     gets (DecimalSI), where std parses its literal text; a number beyond
//     float64 is refused even where std would read it as a quantity.
//   - D5 a quantity string is read by its JSON value (escapes resolved)
//     before ParseQuantity, where Quantity.UnmarshalJSON parses the raw
//     text between the quotes; so "\n5" or "\u0035" is read as 5.
//   - D6 the exponent guard: a quantity string with a decimal exponent
//     beyond e±1000 is refused (kubernetes/kubernetes#141306: ParseQuantity
//     would take minutes), where std would spend those minutes. std is never
//     run on bytes holding a four-digit exponent.
//   - D8 a number field (a trigger's threshold and activationThreshold)
//     given as a quantity string ("0.5", "500m") is read as the quantity's
//     value, because api/v1alpha1's Trigger keeps floats out of a CRD's
//     schema by writing thresholds as quantities, as an HPA's targets are;
//     std refuses a string there. Bytes holding one are compared after
//     replacing each such string by its value.
//   - D7 at a spec path, unknown fields are ignored (the CRD's structural
//     schema prunes them), and bytes that do not decode to unstructured form
//     are no input at all: the API server refuses such an object.
//
// Everything else agrees exactly: when the compiled profile accepts, its Config equals
// std's decoding of canonical(data), the bytes as the API server would hold
// them, quantities compared by value and format.

// differentialSeeds are the fuzz seeds: a full config, the issue's
// Unicode-space cases, duplicates, nulls, huge and precise numbers, deep
// nesting, unknown fields, escapes and wrong types.
func differentialSeeds(t testing.TB) []string {
	full, err := json.Marshal(fullConfigObj())
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		string(full),
		`{"minReplicas":1,"maxReplicas":3}`,
		" \t\r\n{\"minReplicas\":1}\n",
		// Spaces JSON does not allow.
		"\u00a0{\"minReplicas\":1}", "{\"minReplicas\":1}\u2028", "\v{}", "{}\f", "\u00a0", "{\"minReplicas\":\u00a01}",
		// D1.
		``, `null`, " null ", " ",
		// D2.
		`{"minReplicas":1,"minReplicas":2}`,
		`{"idle":{"replicasAtStart":2},"idle":{"timeoutSeconds":5}}`,
		`{"minReplicas":1,"minReplicas":null}`,
		`{"triggers":[{"name":"a","metadata":{"k":"1","k":"2"}}]}`,
		// Nulls.
		`{"minReplicas":null,"metrics":[null],"behavior":null,"triggers":[{"threshold":null,"metadata":{"k":null}}]}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":null,"value":null}}}]}`,
		// D3 and D4.
		`{"minReplicas":1.0,"maxReplicas":5e0}`,
		`{"minReplicas":-0,"maxReplicas":2147483648}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":1.5e3}}}]}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":1.00000000000000001}}}]}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":9007199254740993}}}]}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":1e400}}}]}`,
		`{"behavior":{"scaleUp":{"tolerance":1e-7}},"triggers":[{"threshold":-0.0,"activationThreshold":1e308}]}`,
		`{"triggers":[{"threshold":1e400}]}`,
		`{"x":1e400}`,
		// D5.
		`{"behavior":{"scaleUp":{"tolerance":"\u0031"}}}`,
		`{"behavior":{"scaleUp":{"tolerance":"\n5 "}}}`,
		"{\"behavior\":{\"scaleUp\":{\"tolerance\":\"5\u2028\"}}}",
		// D6.
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":"1e-999999999"}}}]}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":1e-999999999}}}]}`,
		`{"behavior":{"scaleDown":{"tolerance":"1e1000"}}}`,
		// D8.
		`{"triggers":[{"name":"a","type":"AverageValue","query":"up","threshold":"500m","activationThreshold":"1.5"}]}`,
		`{"triggers":[{"threshold":" 10 "},{"threshold":"1e-999999999"}]}`,
		`{"triggers":[{"threshold":"ten"}]}`,
		`{"triggers":[{"threshold":"5","threshold":"6"}]}`,
		// Unknown fields (D7 at a spec path).
		`{"minReplicas":1,"maxReplica":5}`,
		`{"MinReplicas":1}`,
		`{"metrics":[{"type":"Resource","resource":{"nam":"cpu"}}],"x":{"y":[1,"a",null]}}`,
		// Nesting.
		`{"x":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`,
		`{"metrics":[{"object":{"describedObject":{"kind":"Service"},"metric":{"selector":{"matchExpressions":[{"key":"a","operator":"In","values":["b"]}]}}}}]}`,
		// Wrong types and escapes.
		`{"minReplicas":"1","dependsOn":"a","triggers":{"a":1}}`,
		`{"triggers":[{"name":"\u00e9\t<&>","query":"up{a=\"b\"}","metadata":{"k":"v\u2028"}}]}`,
		`{"schedule":{"wakeUp":["07:30"],"scaleDownTimeout":[{"time":"20:00","seconds":300}]},"dependsOn":[]}`,
		`[]`, `5`, `"x"`, `{`, `{"minReplicas":1} {}`,
	}
}

// FuzzDecodeDifferential holds the one decoder, through
// Compiled.Read, to sigs.k8s.io/json's strict decoding of the same bytes
// (see D1–D7).
func FuzzDecodeDifferential(f *testing.F) {
	for _, seed := range differentialSeeds(f) {
		f.Add([]byte(seed))
	}
	spec, ann := mustCompile(f, sample("RackedCluster")), mustCompile(f, foreignProfile())
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAnnotationDifferential(t, ann, data)
		checkSpecDifferential(t, spec, data)
	})
}

// TestDecodeDifferential: the seeds exercise every outcome,
// so each intended difference is asserted at least once by `go test`.
func TestDecodeDifferential(t *testing.T) {
	spec, ann := mustCompile(t, sample("RackedCluster")), mustCompile(t, foreignProfile())
	seen := map[outcome]int{}
	for _, seed := range differentialSeeds(t) {
		seen["annotation: "+checkAnnotationDifferential(t, ann, []byte(seed))]++
		seen["spec: "+checkSpecDifferential(t, spec, []byte(seed))]++
	}
	for _, want := range []outcome{
		"annotation: " + equal, "annotation: " + refusedByBoth, "annotation: " + noConfig, "annotation: " + duplicates,
		"annotation: " + integralNumbers, "annotation: " + quantityEscapes, "annotation: " + exponentGuard,
		"annotation: " + beyondFloat64, "annotation: " + numberQuantities, "annotation: " + quantityNumbers,
		"spec: " + quantityNumbers, "spec: " + equal, "spec: " + refusedByBoth, "spec: " + noConfig, "spec: " + duplicates,
		"spec: " + notUnstructured, "spec: " + exponentGuard, "spec: " + notAnObject,
	} {
		if seen[want] == 0 {
			t.Errorf("no seed has the outcome %q; outcomes: %v", want, seen)
		}
	}
}

// outcome names what one comparison found, for the breadth check.
type outcome = string

const (
	equal            outcome = "std accepts, the same config"
	numberQuantities outcome = "std accepts, the same config with number quantities as float64 (D4)"
	refusedByBoth    outcome = "refused by both"
	noConfig         outcome = "no config (D1)"
	duplicates       outcome = "duplicate keys (D2)"
	integralNumbers  outcome = "integral numbers in integer fields (D3)"
	beyondFloat64    outcome = "a number beyond float64 (D4)"
	quantityEscapes  outcome = "quantity strings read by value (D5)"
	exponentGuard    outcome = "exponent guard (D6)"
	quantityNumbers  outcome = "quantity strings in number fields (D8)"
	notUnstructured  outcome = "not an object the API server decodes (D7)"
	notAnObject      outcome = "not a JSON object"
)

func checkAnnotationDifferential(t *testing.T, v *Compiled, data []byte) outcome {
	t.Helper()
	u := makeObj("Store", "st").annotate(v1alpha1.AnnotationScaleConfig, string(data)).obj()
	w, errs := v.Read(u)
	return checkDifferential(t, data, w.Config, errs, true)
}

func checkSpecDifferential(t *testing.T, v *Compiled, data []byte) outcome {
	t.Helper()
	var raw interface{}
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &raw) != nil {
		return notUnstructured
	}
	w, errs := v.Read(makeObj("RackedCluster", "db").set(".spec.scaleConfig", raw).obj())
	switch raw.(type) {
	case nil:
		if w.Config != nil || len(errs) > 0 {
			t.Fatalf("spec path %s: null read as %+v, %v; want no config (D1)", data, w.Config, errs)
		}
		return noConfig
	case map[string]interface{}:
	default:
		if len(errs) != 1 || errs[0].Field != "spec.scaleConfig" {
			t.Fatalf("spec path %s: errors %v, want one at spec.scaleConfig", data, errs)
		}
		return notAnObject
	}
	return checkDifferential(t, data, w.Config, errs, false)
}

// checkDifferential compares what the compiled profile read from data (got, errs)
// with std. strict: unknown fields are errors (an annotation).
func checkDifferential(t *testing.T, data []byte, got *scaling.Config, errs field.ErrorList, strict bool) outcome {
	t.Helper()
	huge := fourDigitExponent.Match(data)
	accepts := func(s stdResult) bool { return s.err == nil && !s.dup && (!strict || !s.unknown) }

	if len(errs) > 0 {
		if got != nil {
			t.Fatalf("%s: a config along with errors %v", data, errs)
		}
		if guarded(errs) {
			if !huge {
				t.Fatalf("%s: the exponent guard fired without a four-digit exponent: %v", data, errs)
			}
			return exponentGuard
		}
		if strict && len(errs) == 1 && strings.HasPrefix(errs[0].Detail, "cannot be decoded: json: cannot unmarshal number") {
			// D4: a number the unstructured form cannot hold.
			if _, ok := canonical(data); ok {
				t.Fatalf("%s: refused as beyond float64, yet it decodes: %v", data, errs)
			}
			return beyondFloat64
		}
		if !huge {
			if s := stdDecode(data); accepts(s) {
				t.Fatalf("%s: the compiled profile refuses what std accepts as %+v: %v", data, s.cfg, errs)
			}
		}
		return refusedByBoth
	}
	if got == nil {
		// D1: only an annotation gets here (a spec path's null is handled
		// by the caller).
		if trimmed := bytes.Trim(data, " \t\r\n"); len(trimmed) != 0 && string(trimmed) != "null" {
			t.Fatalf("%s: no config and no error, from text that is neither empty nor null", data)
		}
		return noConfig
	}

	// The compiled profile accepted: it reads what std reads from the same config as
	// the API server holds it, exactly.
	canon, ok := canonical(data)
	if !ok {
		t.Fatalf("%s: the compiled profile accepted bytes that do not decode", data)
	}
	c := stdDecode(canon)
	if !accepts(c) && stringInNumberField(c.err) {
		// D8: std reads the quantity strings' values in their place.
		numeric, ok := quantitiesAsNumbers(canon)
		if !ok {
			t.Fatalf("%s: the compiled profile read %+v, and its quantity strings do not read as numbers", data, got)
		}
		n := stdDecode(numeric)
		if !accepts(n) {
			t.Fatalf("%s: the compiled profile read %+v, std refuses it with numbers for quantities %s: %v %v", data, got, numeric, n.err, n.strict)
		}
		if diff := cmp.Diff(n.cfg, got, cmpOpts...); diff != "" {
			t.Fatalf("%s: with numbers for quantities %s (-std +view):\n%s", data, numeric, diff)
		}
		return quantityNumbers
	}
	if !accepts(c) {
		// D5: a quantity string whose value Quantity.UnmarshalJSON does
		// not see, because JSON must escape it.
		if errors.Is(c.err, resource.ErrFormatWrong) && escapedSpace.Match(canon) {
			return quantityEscapes
		}
		t.Fatalf("%s: the compiled profile read %+v, std refuses its canonical form %s: %v %v", data, got, canon, c.err, c.strict)
	}
	if diff := cmp.Diff(c.cfg, got, cmpOpts...); diff != "" {
		t.Fatalf("%s: canonical %s (-std +view):\n%s", data, canon, diff)
	}
	if huge {
		return equal
	}
	s := stdDecode(data)
	if accepts(s) {
		if diff := cmp.Diff(s.cfg, got, cmp.Comparer(sameAsFloat64)); diff != "" {
			t.Fatalf("%s (-std +view):\n%s", data, diff)
		}
		if cmp.Equal(s.cfg, got, cmpOpts...) {
			return equal
		}
		return numberQuantities
	}
	// The compiled profile accepted what std refuses: the canonical form, which std
	// accepts, differs from data by exactly D2, D3 or D5. (With duplicates,
	// std may stop at an error in a value the last key replaced, before it
	// reports the duplicate.)
	switch {
	case s.dup || hasDuplicates(data):
		return duplicates
	case s.err != nil && strings.Contains(s.err.Error(), "cannot unmarshal number") && strings.Contains(s.err.Error(), "of type int"):
		return integralNumbers
	case errors.Is(s.err, resource.ErrFormatWrong):
		return quantityEscapes
	}
	t.Fatalf("%s: the compiled profile read %+v, std refuses it for another reason: %v %v", data, got, s.err, s.strict)
	return ""
}

type stdResult struct {
	cfg          *scaling.Config
	err          error
	strict       []error
	dup, unknown bool
}

// stdDecode is the standard strict decode: sigs.k8s.io/json with
// duplicate and unknown fields reported.
func stdDecode(data []byte) stdResult {
	r := stdResult{cfg: &scaling.Config{}}
	r.strict, r.err = kjson.UnmarshalStrict(data, r.cfg)
	for _, e := range r.strict {
		if strings.HasPrefix(e.Error(), "duplicate field") {
			r.dup = true
		} else {
			r.unknown = true
		}
	}
	return r
}

// hasDuplicates reports whether data, which decodes, repeats a key in an
// object.
func hasDuplicates(data []byte) bool {
	var v interface{}
	strict, err := kjson.UnmarshalStrict(data, &v, kjson.DisallowDuplicateFields)
	return err == nil && len(strict) > 0
}

// fourDigitExponent finds a decimal exponent std may take minutes over.
var fourDigitExponent = regexp.MustCompile(`[eE][-+]?[0-9]{4,}`)

// escapedSpace finds a space character JSON must escape in a string,
// which strings.TrimSpace (and so a quantity) would have trimmed.
var escapedSpace = regexp.MustCompile(`\\[tnrf]|\\u000[bB]|\\u000[cC]`)

// guarded reports whether errs are the exponent guard's.
func guarded(errs field.ErrorList) bool {
	for _, e := range errs {
		if !strings.Contains(e.Detail, "with a decimal exponent between e-1000 and e1000") {
			return false
		}
	}
	return true
}

// canonical is data as the API server holds it: decoded by
// sigs.k8s.io/json into unstructured form (the last of duplicate keys
// wins, numbers int64 or float64), integral float64s made int64 (D3), and
// encoded again with no escapes but the ones JSON requires.
func canonical(data []byte) ([]byte, bool) {
	var v interface{}
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &v) != nil {
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(integral(v)) != nil {
		return nil, false
	}
	return unescapeSeparators(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), true
}

func integral(v interface{}) interface{} {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && t >= math.MinInt64 && t < math.MaxInt64 {
			return int64(t)
		}
	case map[string]interface{}:
		for k, e := range t {
			t[k] = integral(e)
		}
	case []interface{}:
		for i, e := range t {
			t[i] = integral(e)
		}
	}
	return v
}

// unescapeSeparators writes U+2028 and U+2029, which encoding/json always
// escapes, as themselves, so that std's quantities see what the compiled profile's do.
func unescapeSeparators(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			out = append(out, b[i])
			continue
		}
		if esc := string(b[i:min(i+6, len(b))]); esc == `\u2028` || esc == `\u2029` {
			r, _ := strconv.ParseUint(esc[2:], 16, 32)
			out = utf8.AppendRune(out, rune(r))
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// sameAsFloat64 compares quantities by value, where a number's value may
// be its float64 (D4): the compiled profile's float64 is within float64's rounding of
// the literal std parses, and ParseQuantity rounds up to the next nano.
func sameAsFloat64(a, b resource.Quantity) bool {
	if a.Cmp(b) == 0 {
		return true
	}
	d := a.DeepCopy()
	d.Sub(b)
	scale := math.Max(math.Abs(a.AsApproximateFloat64()), math.Abs(b.AsApproximateFloat64()))
	return math.Abs(d.AsApproximateFloat64()) <= 1e-9+scale*0x1p-52
}

// stringInNumberField reports whether std refused a string in a float
// field (D8).
func stringInNumberField(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te) && te.Value == "string" && (te.Type.Kind() == reflect.Float64 || (te.Type.Kind() == reflect.Pointer && te.Type.Elem().Kind() == reflect.Float64))
}

// quantitiesAsNumbers replaces the quantity strings of the number fields
// (thresholds) by their values, as the compiled profile reads them (D8).
func quantitiesAsNumbers(data []byte) ([]byte, bool) {
	var v map[string]interface{}
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &v) != nil {
		return nil, false
	}
	triggers, _ := v["triggers"].([]interface{})
	for _, t := range triggers {
		m, ok := t.(map[string]interface{})
		if !ok {
			continue
		}
		for _, key := range []string{"threshold", "activationThreshold"} {
			str, ok := m[key].(string)
			if !ok {
				continue
			}
			q, err := resource.ParseQuantity(strings.TrimSpace(str))
			if err != nil {
				return nil, false
			}
			m[key] = q.AsApproximateFloat64()
		}
	}
	out, err := json.Marshal(v)
	return out, err == nil
}
