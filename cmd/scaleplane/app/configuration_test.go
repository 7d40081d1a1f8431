package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestLoadConfiguration: the binary's loader reports every problem of a
// file at once, the component settings' and the profiles' (which package
// profile checks), each at the path of the field to change, and returns a
// v1alpha1 file's deprecation warning even when the file is refused.
func TestLoadConfiguration(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("the shipped files", func(t *testing.T) {
		for file, profiles := range map[string]int{
			"config/manager/scaleplane-config.yaml":        0,
			"config/samples/deploy/scaleplane-config.yaml": 3,
		} {
			c, warnings, err := LoadConfiguration(filepath.Join("..", "..", "..", file))
			if err != nil {
				t.Fatalf("LoadConfiguration %s: %v", file, err)
			}
			if len(warnings) > 0 || len(c.Profiles) != profiles {
				t.Errorf("LoadConfiguration %s: %d profiles, warnings %q; want %d profiles and no warning", file, len(c.Profiles), warnings, profiles)
			}
		}
	})
	t.Run("every problem at once", func(t *testing.T) {
		path := write("bad.yaml", `apiVersion: config.scaleplane.io/v1alpha2
kind: Configuration
webhook: {port: 70000}
profiles:
- target: {apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster, resource: rackedclusters}
  scaleConfig: {path: .spec.scaleConfig}
- target: {apiVersion: samples.scaleplane.io/v1alpha1, kind: Function, resource: samplefunctions}
  scaleConfig: {}
- target: {apiVersion: samples.scaleplane.io/v1alpha1, kind: RackedCluster, resource: rackedclusters}
  scaleConfig: {path: .spec.scaleConfig}
`)
		_, warnings, err := LoadConfiguration(path)
		if err == nil {
			t.Fatal("LoadConfiguration succeeded, want an error")
		}
		if !strings.HasPrefix(err.Error(), "configuration "+path+": ") {
			t.Errorf("error %q does not name the file", err)
		}
		want := []string{
			"FieldValueInvalid webhook.port",
			"FieldValueRequired profiles[1].scaleConfig",
			"FieldValueDuplicate profiles[2].target.kind",
			"FieldValueDuplicate profiles[2].target.resource",
		}
		if diff := cmp.Diff(want, fieldErrorStrings(t, err)); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
		if len(warnings) > 0 {
			t.Errorf("warnings %q for a v1alpha2 file", warnings)
		}
	})
	t.Run("a v1alpha1 file warns, refused or not", func(t *testing.T) {
		const old = `apiVersion: config.scaleplane.io/v1alpha1
kind: Configuration
profiles:
- {group: samples.scaleplane.io, version: v1alpha1, kind: Function, resource: samplefunctions, scaleConfig: {path: .spec.scaleConfig}, replicas: %s}
`
		_, warnings, err := LoadConfiguration(write("old.yaml", strings.Replace(old, "%s", ".spec.replicas", 1)))
		if err != nil {
			t.Fatalf("LoadConfiguration: %v", err)
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], "replicas to replicasPath") {
			t.Errorf("warnings %q, want one naming replicas to replicasPath", warnings)
		}
		_, warnings, err = LoadConfiguration(write("old-bad.yaml", strings.Replace(old, "%s", "spec.replicas", 1)))
		if diff := cmp.Diff([]string{"FieldValueInvalid profiles[0].replicasPath"}, fieldErrorStrings(t, err)); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], "replicas to replicasPath") {
			t.Errorf("warnings %q with the error, want one naming replicas to replicasPath", warnings)
		}
	})
}

// fieldErrorStrings renders the field errors of an aggregate as type and
// path.
func fieldErrorStrings(t *testing.T, err error) []string {
	t.Helper()
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Fatalf("error %v is not an aggregate", err)
	}
	var out []string
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("error %v is not a field error", e)
		}
		out = append(out, string(fe.Type)+" "+fe.Field)
	}
	return out
}
