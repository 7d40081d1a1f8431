package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// TestRenderPoliciesGolden: `scaleplane render policies` prints, per
// profile of the configuration, the two policies and their bindings as
// manifests that decode strictly into their types, and refuses a missing
// --config with what to give. Regenerate with UPDATE_GOLDEN=1.
func TestRenderPoliciesGolden(t *testing.T) {
	deploy := filepath.Join("..", "..", "config", "samples", "deploy", "scaleplane-config.yaml")
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"policies", []string{"policies", "--config", deploy}, 0},
		{"policies-no-config", []string{"policies"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := render(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, stdout.String(), stderr.String())
			}
			if code == 0 {
				kinds := checkManifests(t, stdout.String())
				if len(kinds) != 4 {
					t.Errorf("render policies printed kinds %v, want only the four policy kinds", kinds)
				}
				if n := kinds["MutatingAdmissionPolicy"]; n == 0 || kinds["MutatingAdmissionPolicyBinding"] != n || kinds["ValidatingAdmissionPolicy"] != n || kinds["ValidatingAdmissionPolicyBinding"] != n {
					t.Errorf("want one policy and one binding of each kind per profile, got %v", kinds)
				}
			}
			got := fmt.Sprintf("# exit %d\n# stdout:\n%s# stderr:\n%s", code, stdout.String(), stderr.String())
			checkGolden(t, filepath.Join("testdata", "render", tc.name+".golden"), got, fmt.Sprintf("render %q", tc.args))
		})
	}
}
