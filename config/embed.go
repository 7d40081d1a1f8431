package config

import (
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// sampleCRDs are the sample workload kinds' CRDs, compiled in so that
// `scaleplane dev` works from a lone binary.
//
//go:embed crd/bases/*.yaml
var sampleCRDs embed.FS

// SampleCRDs returns the CRDs of the sample kinds (RackedCluster, Function,
// WorkerGroup).
func SampleCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(sampleCRDs, "crd/bases/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list sample CRDs: %w", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, name := range files {
		data, err := sampleCRDs.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decode %s: %w", name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
