package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	apiFile     = "../../api/v1alpha1/autoscaling_types.go"
	scalingFile = "../../scaling/zz_generated.config.go"
)

// TestScalingConfigIsCurrent: scaling's config types are what the API
// types generate today, so a field added to the API reaches the decisions
// without a second edit (`make generate` writes it).
func TestScalingConfigIsCurrent(t *testing.T) {
	src, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Generate("api/v1alpha1/autoscaling_types.go", src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(scalingFile)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("scaling/zz_generated.config.go is out of date; run make generate (-want +got):\n%s", diff)
	}
}

// TestAPIFieldReachesConfig: a field added to an API type, inlined or
// not, appears in the scaling type at the same place, with its JSON tag,
// its doc without markers, and a quantity read as a float64.
func TestAPIFieldReachesConfig(t *testing.T) {
	src, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	s = strings.Replace(s, "\tMaxReplicas *int32 `json:\"maxReplicas,omitempty\"`\n",
		"\tMaxReplicas *int32 `json:\"maxReplicas,omitempty\"`\n\t// Ceiling is new.\n\t// +kubebuilder:validation:Minimum=0\n\t// +optional\n\tCeiling *resource.Quantity `json:\"ceiling,omitempty\"`\n", 1)
	s = strings.Replace(s, "\tMetadata map[string]string `json:\"metadata,omitempty\"`\n",
		"\tMetadata map[string]string `json:\"metadata,omitempty\"`\n\t// Weights are new.\n\tWeights []resource.Quantity `json:\"weights,omitempty\"`\n", 1)
	out, err := Generate("api.go", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\tMaxReplicas *int32 `json:\"maxReplicas,omitempty\"`\n\t// Ceiling is new.\n\tCeiling *float64 `json:\"ceiling,omitempty\"`\n\t// Metrics",
		"\t// Weights are new.\n\tWeights []float64 `json:\"weights,omitempty\"`\n}",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("generated config lacks\n%s\nin:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("+optional")) || bytes.Contains(out, []byte("Autoscaling struct")) {
		t.Errorf("generated config keeps a marker or the inlined type:\n%s", out)
	}
}

// TestAPIChangesRefused: what the translation cannot carry is an error
// naming the field, not a config type that silently differs.
func TestAPIChangesRefused(t *testing.T) {
	src, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{{
		name: "a named string field changes type",
		old:  "\tType string `json:\"type\"`", new: "\tType int32 `json:\"type\"`",
		want: "Trigger.Type is int32, not the string the named type TargetType needs",
	}, {
		name: "a named string field is removed",
		old:  "\tBehavior string `json:\"behavior,omitempty\"`", new: "",
		want: "no field Fallback.Behavior to give a named type",
	}, {
		name: "an embedded type is not inlined",
		old:  "\tAutoscaling `json:\",inline\"`", new: "\tAutoscaling `json:\"autoscaling\"`",
		want: "embedded field Autoscaling is not an inlined type of the file",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := strings.Replace(string(src), tc.old, tc.new, 1)
			if s == string(src) {
				t.Fatalf("%q is not in %s", tc.old, apiFile)
			}
			_, err := Generate("api.go", []byte(s))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
