package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheckGolden: `scaleplane config check` reports
// every problem at once with its field path (exit 1), the schema's limits
// as warnings, and passes the sample configuration against the sample CRDs
// (exit 0). Regenerate the golden files with UPDATE_GOLDEN=1.
func TestConfigCheckGolden(t *testing.T) {
	scaledApp := filepath.Join("..", "..", "profile", "testdata", "crd", "apps.example.org_scaledapps.yaml")
	samples, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "crd", "samples.scaleplane.io_*.yaml"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("sample CRDs: %v %v", samples, err)
	}
	sampleArgs := []string{"-f", filepath.Join("..", "..", "config", "samples", "deploy", "scaleplane-config.yaml")}
	for _, s := range samples {
		sampleArgs = append(sampleArgs, "--crd", s)
	}
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"samples", sampleArgs, 0},
		{"broken", []string{"-f", filepath.Join("testdata", "configcheck", "broken.yaml"), "--crd", scaledApp}, 1},
		{"invalid-profile", []string{"-f", filepath.Join("testdata", "configcheck", "invalid-profile.yaml"), "--crd", scaledApp}, 1},
		{"no-crd", []string{"-f", filepath.Join("testdata", "configcheck", "invalid-profile.yaml")}, 1},
		{"crd-folder", []string{"-f", filepath.Join("testdata", "configcheck", "broken.yaml"), "--crd", filepath.Join("..", "..", "profile", "testdata", "crd")}, 1},
		{"profile-init-output", []string{"-f", filepath.Join("testdata", "profileinit", "function.golden"), "--crd", filepath.Join("testdata", "profileinit", "function.yaml")}, 0},
		{"instances", []string{"-f", filepath.Join("testdata", "profileinit", "instances.golden"), "--crd", filepath.Join("testdata", "profileinit", "instances.yaml")}, 0},
		// Built-in kinds need no CRD and get no webhook: what would need one is refused.
		{"builtin", []string{"-f", filepath.Join("testdata", "configcheck", "builtin.yaml"), "--crd", scaledApp}, 0},
		{"builtin-webhook", []string{"-f", filepath.Join("testdata", "configcheck", "builtin-webhook.yaml"), "--crd", scaledApp}, 1},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := configCheck(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.code, stdout.String(), stderr.String())
			}
			got := fmt.Sprintf("# exit %d\n%s%s", code, stdout.String(), stderr.String())
			checkGolden(t, filepath.Join("testdata", "configcheck", tt.name+".golden"), got, fmt.Sprintf("config check %q", tt.args))
		})
	}
}

// Usage errors and unreadable files exit 2.
func TestConfigCheckUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "give at least one -f FILE"},
		{[]string{"-f", filepath.Join(t.TempDir(), "missing.yaml")}, "no such file"},
		{[]string{"-f", filepath.Join("testdata", "configcheck", "broken.yaml"), "--crd", filepath.Join("testdata", "configcheck", "broken.yaml")}, "holds no CustomResourceDefinition"},
	}
	for _, tt := range cases {
		var stdout, stderr bytes.Buffer
		if code := configCheck(tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("config check %q = %d, %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}
