package profile_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
)

// FuzzInfer: any CRD a user points profile init at gives a profile that
// compiles and matches the CRD, or an error; never a panic. CheckCRD and
// WithCRD never panic on it either.
func FuzzInfer(f *testing.F) {
	for _, dir := range []string{filepath.Join("testdata", "crd"), filepath.Join("..", "cmd", "scaleplane", "testdata", "profileinit")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			if j, err := yaml.YAMLToJSON(data); err == nil {
				f.Add(j)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if json.Unmarshal(data, crd) != nil {
			return
		}
		in, err := profile.Infer(crd, "")
		if err == nil {
			if _, errs := profile.CheckCRD(in.Spec, crd, nil); len(errs) > 0 {
				t.Fatalf("Infer gave a profile CheckCRD refuses: %v", errs)
			}
			if _, err := profile.Compile(in.Spec); err != nil {
				t.Fatalf("Infer gave a profile Compile refuses: %v", err)
			}
		}
		_, _ = profile.CheckCRD(profiletest.ScaledApp(), crd, nil)
		if v, err := profile.Compile(profiletest.ScaledApp()); err == nil {
			_, _ = v.WithCRD(crd)
		}
	})
}
