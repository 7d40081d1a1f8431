package profile

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/scaleplane/scaleplane/scaling"
)

// FuzzDecodeConfig checks the direct decoder against a JSON round trip of
// the same unstructured map, the slow way it replaces: it never panics, and
// whenever both accept a config they agree on it. (Against the original
// bytes a quantity may differ in format only: 1.5e3 is already float64 1500
// in the map.)
func FuzzDecodeConfig(f *testing.F) {
	full, err := json.Marshal(fullConfigObj())
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(full),
		`{"minReplicas":1,"maxReplicas":"3"}`,
		`{"metrics":[{"type":"Pods","pods":{"target":{"averageValue":1.5e3}}}]}`,
		`{"triggers":[{"threshold":1e400}]}`,
		`{"behavior":{"scaleUp":{"tolerance":-0.1}},"idle":null}`,
		`{"metrics":[],"dependsOn":[""],"triggers":[{"metadata":{}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil || m == nil {
			return
		}
		got, errs := decodeConfig(m, field.NewPath("spec", "scaleConfig"), false, nil)
		if len(errs) > 0 {
			// Also spares the reference decoder quantities it would take
			// minutes over.
			return
		}
		js, err := json.Marshal(m)
		if err != nil {
			return
		}
		want := &scaling.Config{}
		jsonErr := kjson.UnmarshalCaseSensitivePreserveInts(js, want)
		if jsonErr != nil {
			return
		}
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("decodeConfig(%s) (-json +direct):\n%s", data, diff)
		}
	})
}

// FuzzRead checks that Read never panics on any object and that writing
// back what it read changes nothing (M6).
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		`{"spec":{"replicas":3,"racks":[{"name":"a","members":3}],"scaleConfig":{"minReplicas":1}}}`,
		`{"spec":{"replicas":"3","racks":{"a":1}},"status":{"racks":[1,{"name":2}]}}`,
		`{"spec":[],"status":"x","metadata":{"annotations":{"scaleplane.io/scale-config":"{\"minReplicas\":1}"}}}`,
		`{"spec":{"zones":[{"zone":"a","size":1.0}],"size":{"perZone":2}},"status":{"zones":{"a":{"ready":1},"b":null}}}`,
	} {
		f.Add([]byte(seed))
	}
	views := []*Compiled{mustCompile(f, sample("RackedCluster")), mustCompile(f, sample("WorkerGroup")), mustCompile(f, foreignProfile())}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil || m == nil {
			return
		}
		for _, v := range views {
			u := &unstructured.Unstructured{Object: m}
			w, errs := v.Read(u)
			if len(errs) > 0 {
				continue
			}
			got := u.DeepCopy()
			if err := v.WriteSpec(got, w); err != nil {
				t.Fatalf("%s: WriteSpec of what Read returned: %v", v.GVK().Kind, err)
			}
			if diff := cmp.Diff(u.Object, got.Object); diff != "" {
				t.Errorf("%s: round trip changed %s (-read +written):\n%s", v.GVK().Kind, data, diff)
			}
		}
	})
}
