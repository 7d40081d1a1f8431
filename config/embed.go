package config

import (
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// sampleCRDGlob matches the sample kinds' CRDs and not the kustomization
// beside them.
const sampleCRDGlob = "samples/crd/samples.scaleplane.io_*.yaml"

// sampleCRDs are the sample workload kinds' CRDs, compiled in so that
// `scaleplane dev` works from a lone binary.
//
//go:embed samples/crd/samples.scaleplane.io_*.yaml
var sampleCRDs embed.FS

// SampleCRDs returns the CRDs of the sample kinds (RackedCluster, Function,
// WorkerGroup).
func SampleCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(sampleCRDs, sampleCRDGlob)
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
