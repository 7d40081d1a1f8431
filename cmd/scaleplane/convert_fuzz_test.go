package main

import (
	"os"
	"path/filepath"
	"testing"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/convert"
)

// FuzzConvertDecode runs any document through the decoder of files and
// the cluster, the mapping and the rendering: never a panic, and an object
// is returned for every conversion that has something to apply.
func FuzzConvertDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "convert", "*.yaml"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	cfg := &configv1alpha2.Configuration{}
	cfg.Default()
	sources, err := app.ValidationSources(cfg, true)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		objs, err := decodeScaledObjects(doc)
		if err != nil {
			return
		}
		for i := range objs {
			res := convert.Convert(&objs[i], convert.Options{})
			if res.Config == nil {
				t.Fatal("Convert returned no config")
			}
			obj, _ := convert.Render(res, nil, sources)
			if obj == nil {
				t.Fatal("Render returned no object")
			}
		}
	})
}
