package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReviewRenderRefusesOneKindAtTwoVersions: the running scaleplane keys
// kinds by group and kind (a second ScaleProfile of a kind, or one of a
// kind in the configuration file, is a Conflict whatever its version), so
// render must refuse the same pairs. Rendering both would commit entries
// for the losing version, whose dispatcher path has no active profile:
// with failurePolicy Fail and matchPolicy Equivalent every write of the
// kind would then be refused.
func TestReviewRenderRefusesOneKindAtTwoVersions(t *testing.T) {
	deploy := filepath.Join("..", "..", "config", "samples", "deploy", "scaleplane-config.yaml")
	dir := t.TempDir()
	write := func(name, apiVersion, kind, resource string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		doc := "apiVersion: scaleplane.io/v1alpha1\nkind: ScaleProfile\nmetadata: {name: " + name + "}\nspec:\n" +
			"  target: {apiVersion: " + apiVersion + ", kind: " + kind + ", resource: " + resource + "}\n" +
			"  replicasPath: .spec.replicas\n  scaleConfig: {path: .spec.scaleConfig}\n  status: {replicasPath: .status.replicas}\n"
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := write("fn-v1alpha2", "serverless.example.org/v1alpha2", "Function", "functions")
	v2 := write("fn-v1", "serverless.example.org/v1", "Function", "functions")
	racked := write("racked-v1beta1", "samples.scaleplane.io/v1beta1", "RackedCluster", "rackedclusters")
	for name, args := range map[string][]string{
		"two ScaleProfiles":            {"webhooks", "--config", deploy, "-f", v1, "-f", v2},
		"ScaleProfile and config file": {"webhooks", "--config", deploy, "-f", racked},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := render(args, &stdout, &stderr); code != 1 {
				t.Errorf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("a refused render printed to stdout:\n%s", stdout.String())
			}
			if !strings.Contains(stderr.String(), "keep one") {
				t.Errorf("stderr does not say to keep one profile:\n%s", stderr.String())
			}
		})
	}
}
