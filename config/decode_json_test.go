package config

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// decodeJSONSeeds are configs DecodeSpecConfigJSON must decode (ok) or leave
// to the unstructured path (escapes, float integers, wrong types, ...).
func decodeJSONSeeds(t testing.TB) []string {
	full, err := json.Marshal(fullConfigObj())
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		string(full),
		` { "minReplicas" : 1 , "maxReplicas" : 3 , "unknown" : {"a":[1,"x\"y",null,true]} } `,
		`{"minReplicas":1,"maxReplicas":"3"}`,
		`{"minReplicas":1.0}`,
		`{"minReplicas":null,"maxReplicas":-0}`,
		`{"minReplicas":2147483648}`,
		`{"idle":{"replicasAtStart":2},"idle":{"timeoutSeconds":5}}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":1.5e3}}}]}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":1500}}}]}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":" 1.5k "}}}]}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":"1e99999"}}}]}`,
		`{"triggers":[{"threshold":1e400}]}`,
		`{"triggers":[{"name":"a","threshold":-0,"activationThreshold":0.5,"metadata":{"k":"v","n":null}}]}`,
		`{"triggers":[{"name":"\u0061","query":"up"}]}`,
		`{"triggers":[{"name":"é","query":"up{a=\"b\"}"}]}`,
		`{"behavior":{"scaleUp":{"tolerance":-0.1,"selectPolicy":"Max"}},"idle":null}`,
		`{"metrics":[],"dependsOn":[""],"triggers":[{"metadata":{}}]}`,
		`{"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}}],"metrics":[ ]}`,
		`{"schedule":{"wakeUp":["07:30","08:00"],"scaleDownTimeout":[{"time":"20:00","seconds":300}]}}`,
		`{"dependsOn":"a"}`,
		`{"dependsOn":[1]}`,
		`[]`,
		`null`,
	}
}

// checkDecodeSpecConfigJSON compares DecodeSpecConfigJSON with Read's path:
// the unstructured decode and decodeConfig. Whenever it decodes, the result
// must equal that path's, which must have no errors.
func checkDecodeSpecConfigJSON(t *testing.T, data []byte) (decoded bool) {
	t.Helper()
	got, ok := DecodeSpecConfigJSON(data)
	if !ok {
		return false
	}
	var m map[string]interface{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil || m == nil {
		t.Fatalf("DecodeSpecConfigJSON(%s) decoded what is not a JSON object (%v)", data, err)
	}
	want, errs := decodeConfig(m, field.NewPath("spec", "scaleConfig"), nil)
	if len(errs) > 0 {
		t.Fatalf("DecodeSpecConfigJSON(%s) decoded a config with errors: %v", data, errs)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("DecodeSpecConfigJSON(%s) (-unstructured +json):\n%s", data, cmp.Diff(want, got, cmpOpts...))
	}
	return true
}

func TestDecodeSpecConfigJSON(t *testing.T) {
	decoded := 0
	for _, seed := range decodeJSONSeeds(t) {
		if checkDecodeSpecConfigJSON(t, []byte(seed)) {
			decoded++
		}
	}
	// The full config, the spaced one, duplicates, -0, 1500, " 1.5k ", the
	// trigger, tolerance, the empty lists and the schedule.
	if decoded < 10 {
		t.Errorf("DecodeSpecConfigJSON decoded %d seeds; it gives up too often", decoded)
	}
}

// FuzzDecodeSpecConfigJSON holds the JSON decoder to the unstructured one.
func FuzzDecodeSpecConfigJSON(f *testing.F) {
	for _, seed := range decodeJSONSeeds(f) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return // the request's decoder refuses it before
		}
		if bad := hugeExponent(string(data)); bad != "" {
			return // spares the unstructured path minutes of ParseQuantity
		}
		checkDecodeSpecConfigJSON(t, data)
	})
}
